// What a harness's main file adds to the emulator (emulator.h): the few CUDA runtime calls the
// kernel files make on the host, answered without a device (device memory is host memory here),
// context.cu's error plumbing and scratch memory, and reading and writing the harness's files. Only
// the translation unit with main() includes it.
#pragma once
#include "emulator.h"

extern "C" cudaError_t cudaGetLastError(void) { return cudaSuccess; }
extern "C" const char* cudaGetErrorString(cudaError_t) { return "emulated"; }
extern "C" cudaError_t cudaFuncSetAttribute(const void*, enum cudaFuncAttribute, int) { return cudaSuccess; }
extern "C" cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  memset(p, value, bytes);
  return cudaSuccess;
}

int kc_fail(KcContext* ctx, int code, const char* where, const char* detail) {
  snprintf(ctx->error, sizeof ctx->error, "%s: %s", where, detail ? detail : "failed");
  return code;
}
// Scratch blocks are allocations of their exact size, so that the sanitizer sees an access past one.
void* kc_scratch(KcContext*, size_t bytes) { return malloc(bytes ? bytes : 1); }
void kc_scratch_release(KcContext*, void* p) { free(p); }

// f32 → bf16/f16 of a buffer (elementwise.cu's kc_convert_launch, which launches with <<<>>>), element
// by element through the same device helpers its kernels store with (kc_ld, kc_st: round to nearest
// even), on the host.
int kc_convert_launch(KcContext*, const void* src, int src_dt, void* dst, int dst_dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) kc_st(dst, dst_dt, i, kc_ld(src, src_dt, i));
  return 0;
}

namespace kc_emu {

inline std::vector<uint8_t> read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) fail("cannot open the input");
  std::vector<uint8_t> data;
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  fclose(f);
  return data;
}

// The arrays of an input file in order, each copied into an allocation of its exact size (so that
// the sanitizer sees reads past its end).
struct Reader {
  std::vector<uint8_t> in;
  size_t at = 0;
  explicit Reader(const char* path) : in(read_file(path)) {}
  void* take(size_t bytes) {
    if (at + bytes > in.size()) fail("input file too short");
    void* p = malloc(bytes ? bytes : 1);
    memcpy(p, in.data() + at, bytes);
    at += bytes;
    return p;
  }
  void end() const {
    if (at != in.size()) fail("input file too long");
  }
};

inline void write_file(const char* path, const void* data, size_t bytes) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) fail("cannot write the output");
  fclose(f);
}

}  // namespace kc_emu
