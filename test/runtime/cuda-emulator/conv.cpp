// kc_conv3d (kernels/cuda/conv.cu, the library's own entry point) on the CPU emulator, for
// test/runtime/cuda-emulated.test.ts: the dispatch, the bf16 repacking (conv_pack.cu), the tensor-core
// kernels — mma.sync (conv_mma.cu) and wgmma (conv_wgmma.cu) — and the exact SIMT kernel (conv_simt.cu,
// with the f32 copies its fused norm and upsample read: conv_norm_silu.cu, and copy.cu's gather), each
// file compiled as it is, one translation unit each, with host buffers standing in for device memory.
// The context is an sm_90 GPU with the driver's tensor-map encoder (host-runtime.h) and two
// multiprocessors (grid-stride loops take several turns), so the mma.sync kernel's tile model
// (conv_mma_tiles.cuh) weighs its tiles for an H100 with two SMs (H100's shared memory, registers and
// tensor-core rate).
//
//   conv IN OUT
//   IN:  int32 B, the 17 ints of ConvGeom, w_dt (0 f32, 1 bf16, 2 f16), has_prev, has_bias, conv_path
//        (context.cu: 1 SIMT, 2 mma.sync, 3 wgmma), norm_silu (0 none, 1 without gamma, 2 with), f32 norm eps,
//        f32 norm scale, has_residual, upsample; then f32 x [B, Cin, T, H, W] (H/2, W/2 with upsample),
//        f32 prev [B, Cin, timePad, H, W] when has_prev, w [Cout, Cin, kt, kh, kw] (4 or 2 bytes each),
//        f32 bias [Cout] when has_bias, f32 gamma [Cin] when norm_silu is 2, f32 residual [B, Cout, To,
//        Ho, Wo] when has_residual
//   OUT: f32 out [B, Cout, To, Ho, Wo]
// Prints one line per kernel launch (grid, threads, dynamic shared memory), then `kernel <name>` (what
// kc_conv3d ran); exits 1 with the library's message when the call fails. KINO_CUDA_CONV_MMA_TILE forces
// the mma.sync kernel's block tile, as kc_create reads it (conv.cuh).
#include "host-runtime.h"
#include "../../../kernels/cuda/conv.cuh"

extern "C" int kc_conv3d(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt, const float* bias,
                         const float* residual, int B, const int32_t* geom, int upsample, int norm_silu,
                         const float* norm_gamma, float norm_eps, float norm_scale);

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: conv IN OUT");
  kc_emu::Reader in(argv[1]);
  auto take = [&](size_t bytes) { return in.take(bytes); };
  int32_t head[27];
  memcpy(head, take(sizeof head), sizeof head);
  const int B = head[0], w_dt = head[18], has_prev = head[19], has_bias = head[20], path = head[21], norm = head[22];
  float norm_eps, norm_scale;
  memcpy(&norm_eps, head + 23, 4);
  memcpy(&norm_scale, head + 24, 4);
  const int has_residual = head[25], upsample = head[26];
  ConvGeom g;
  memcpy(&g, head + 1, sizeof g);
  const size_t plane = (size_t)g.H * g.W, taps = (size_t)g.kt * g.kh * g.kw;
  const float* x = (const float*)take(sizeof(float) * B * g.Cin * g.T * (upsample ? plane / 4 : plane));
  const float* prev = has_prev ? (const float*)take(sizeof(float) * B * g.Cin * g.time_pad * plane) : nullptr;
  const void* w = take((w_dt == KC_F32 ? 4 : 2) * (size_t)g.Cout * g.Cin * taps);
  const float* bias = has_bias ? (const float*)take(sizeof(float) * g.Cout) : nullptr;
  const float* gamma = norm == 2 ? (const float*)take(sizeof(float) * g.Cin) : nullptr;
  const size_t out_n = (size_t)B * g.Cout * g.To * g.Ho * g.Wo;
  const float* residual = has_residual ? (const float*)take(sizeof(float) * out_n) : nullptr;
  in.end();
  float* out = (float*)kc_emu::device_alloc(sizeof(float) * out_n);
  memset(out, 0xFF, sizeof(float) * out_n);  // NaN: an output the kernel does not write shows

  KcContext ctx{};
  ctx.sm_major = 9, ctx.sm_count = 2;
  ctx.smem_per_sm = 228 * 1024, ctx.smem_optin = 227 * 1024, ctx.smem_reserved = 1024;  // H100's
  ctx.regs_per_sm = 65536, ctx.threads_per_sm = 2048;
  ctx.encode_tensor_map = (void*)&kc_emu_encode_tiled;
  ctx.conv_path = path;
  ctx.conv_mma_tile = kc_conv_mma_tile_setting(getenv("KINO_CUDA_CONV_MMA_TILE"));
  const int rc = kc_conv3d(&ctx, out, x, prev, w, w_dt, bias, residual, B, head + 1, upsample, norm, gamma, norm_eps,
                           norm_scale);
  if (rc) {
    fprintf(stderr, "kc_conv3d: %s (%d)\n", ctx.error, rc);
    return 1;
  }
  printf("kernel %s\n", ctx.last_conv);
  kc_emu::write_file(argv[2], out, sizeof(float) * out_n);
  return 0;
}
