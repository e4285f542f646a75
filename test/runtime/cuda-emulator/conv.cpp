// kc_conv3d's tensor-core path (kernels/cuda/conv_mma.cu, the file itself) on the CPU emulator, for
// test/runtime/conv-emulated.test.ts: reads one call's inputs, runs kc_conv3d_mma_launch with host
// buffers standing in for device memory, writes the output.
//
//   conv IN OUT
//   IN:  int32 B, the 17 ints of ConvGeom, w_dt (0 f32, 1 bf16, 2 f16), has_prev, has_bias; then
//        f32 x [B, Cin, T, H, W], f32 prev [B, Cin, timePad, H, W] when has_prev, w [Cout, Cin, kt,
//        kh, kw] (4 or 2 bytes each), f32 bias [Cout] when has_bias
//   OUT: f32 out [B, Cout, To, Ho, Wo]
// Prints one line per kernel launch (grid, threads, dynamic shared memory) and exits 1 with the
// library's message when the launch fails.
#include "emulator.h"
#include "../../../kernels/cuda/conv_mma.cu"

// The few CUDA runtime calls the kernel files make on the host, answered without a device.
extern "C" cudaError_t cudaGetLastError(void) { return cudaSuccess; }
extern "C" const char* cudaGetErrorString(cudaError_t) { return "emulated"; }
extern "C" cudaError_t cudaFuncSetAttribute(const void*, enum cudaFuncAttribute, int) { return cudaSuccess; }

// context.cu's error plumbing and scratch memory: scratch blocks are allocations of their exact size.
int kc_fail(KcContext* ctx, int code, const char* where, const char* detail) {
  snprintf(ctx->error, sizeof ctx->error, "%s: %s", where, detail ? detail : "failed");
  return code;
}
void* kc_scratch(KcContext*, size_t bytes) { return malloc(bytes ? bytes : 1); }
void kc_scratch_release(KcContext*, void* p) { free(p); }

static std::vector<uint8_t> read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) kc_emu::fail("cannot open the input");
  std::vector<uint8_t> data;
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: conv IN OUT");
  const std::vector<uint8_t> in = read_file(argv[1]);
  size_t at = 0;
  // Each array gets an allocation of its exact size, so that the sanitizer sees reads past its end.
  auto take = [&](size_t bytes) -> void* {
    if (at + bytes > in.size()) kc_emu::fail("input file too short");
    void* p = malloc(bytes ? bytes : 1);
    memcpy(p, in.data() + at, bytes);
    at += bytes;
    return p;
  };
  int32_t head[21];
  memcpy(head, take(sizeof head), sizeof head);
  const int B = head[0], w_dt = head[18], has_prev = head[19], has_bias = head[20];
  ConvGeom g;
  memcpy(&g, head + 1, sizeof g);
  const size_t plane = (size_t)g.H * g.W, taps = (size_t)g.kt * g.kh * g.kw;
  const float* x = (const float*)take(sizeof(float) * B * g.Cin * g.T * plane);
  const float* prev = has_prev ? (const float*)take(sizeof(float) * B * g.Cin * g.time_pad * plane) : nullptr;
  const void* w = take((w_dt == KC_F32 ? 4 : 2) * (size_t)g.Cout * g.Cin * taps);
  const float* bias = has_bias ? (const float*)take(sizeof(float) * g.Cout) : nullptr;
  if (at != in.size()) kc_emu::fail("input file too long");
  const size_t out_n = (size_t)B * g.Cout * g.To * g.Ho * g.Wo;
  float* out = (float*)malloc(sizeof(float) * (out_n ? out_n : 1));
  memset(out, 0xFF, sizeof(float) * out_n);  // NaN: an output the kernel does not write shows

  KcContext ctx{};
  ctx.sm_major = 9, ctx.sm_count = 2;  // two SMs: grid-stride loops take several turns
  const int rc = kc_conv3d_mma_launch(&ctx, out, x, prev, w, w_dt, bias, B, g);
  if (rc) {
    fprintf(stderr, "kc_conv3d_mma_launch: %s (%d)\n", ctx.error, rc);
    return 1;
  }
  FILE* f = fopen(argv[2], "wb");
  if (!f || fwrite(out, sizeof(float), out_n, f) != out_n) kc_emu::fail("cannot write the output");
  fclose(f);
  return 0;
}
