// What a harness's main file adds to the emulator (emulator.h): the few CUDA runtime calls the
// kernel files make on the host, answered without a device (device memory is host memory here),
// context.cu's error plumbing and scratch memory, the driver's tensor-map encoder for the Hopper
// kernels, and reading and writing the harness's files. Only the translation unit with main()
// includes it.
#pragma once
#include "emulator.h"
#include "runtime-launch.h"
#include "tensor-map-encoder.h"

extern "C" cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  memset(p, value, bytes);
  return cudaSuccess;
}

int kc_fail(KcContext* ctx, int code, const char* where, const char* detail) {
  snprintf(ctx->error, sizeof ctx->error, "%s: %s", where, detail ? detail : "failed");
  return code;
}
namespace kc_emu {
// "Device" memory: an allocation of exactly `bytes`, so that the sanitizer sees an access past its end,
// starting 256-byte aligned as the library's caching allocator hands blocks out (alloc.cu) — or, where
// the environment has KC_EMU_MISALIGN=1, 16 bytes past a 128-byte boundary, as a view into a block may
// start (the kernels' alignment checks and fallbacks).
inline void* device_alloc(size_t bytes) {
  static const bool misalign = getenv("KC_EMU_MISALIGN") && atoi(getenv("KC_EMU_MISALIGN")) == 1;
  void* p = nullptr;
  if (posix_memalign(&p, 256, (bytes ? bytes : 1) + (misalign ? 16 : 0))) fail("out of memory");
  return misalign ? (uint8_t*)p + 16 : p;
}
}  // namespace kc_emu

// Scratch blocks come from the caching allocator: 256-byte aligned, of their exact size here.
void* kc_scratch(KcContext*, size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1)) kc_emu::fail("out of memory");
  return p;
}
void kc_scratch_release(KcContext*, void* p) { free(p); }

// f32 → bf16/f16 of a buffer (elementwise.cu's kc_convert_launch, which the harnesses do not link),
// element by element through the same device helpers its kernels store with (kc_ld, kc_st: round to
// nearest even), on the host.
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

// The arrays of an input file in order, each copied into "device" memory of its exact size (so that
// the sanitizer sees reads past its end; device_alloc).
struct Reader {
  std::vector<uint8_t> in;
  size_t at = 0;
  explicit Reader(const char* path) : in(read_file(path)) {}
  void* take(size_t bytes) {
    if (at + bytes > in.size()) fail("input file too short");
    void* p = device_alloc(bytes);
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
