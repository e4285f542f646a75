// kc_conv3d's tensor-core path (kernels/cuda/conv_mma.cu, the file itself) on the CPU emulator, for
// test/runtime/cuda-emulated.test.ts: reads one call's inputs, runs kc_conv3d_mma_launch with host
// buffers standing in for device memory, writes the output.
//
//   conv IN OUT
//   IN:  int32 B, the 17 ints of ConvGeom, w_dt (0 f32, 1 bf16, 2 f16), has_prev, has_bias; then
//        f32 x [B, Cin, T, H, W], f32 prev [B, Cin, timePad, H, W] when has_prev, w [Cout, Cin, kt,
//        kh, kw] (4 or 2 bytes each), f32 bias [Cout] when has_bias
//   OUT: f32 out [B, Cout, To, Ho, Wo]
// Prints one line per kernel launch (grid, threads, dynamic shared memory) and exits 1 with the
// library's message when the launch fails.
#include "host-runtime.h"
#include "../../../kernels/cuda/conv_mma.cu"

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: conv IN OUT");
  kc_emu::Reader in(argv[1]);
  auto take = [&](size_t bytes) { return in.take(bytes); };
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
  in.end();
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
  kc_emu::write_file(argv[2], out, sizeof(float) * out_n);
  return 0;
}
