// kc_conv3d: picks the convolution kernel for a call (semantics, kernels and precision: conv.cuh).
//
//   sm_80+, and the tiles are worth it → tensor cores (x and w rounded to bf16): conv_mma.cu, or on
//                                        sm_90 (+ the driver's tensor-map encoder) with Cout ≥ 32
//                                        conv_wgmma.cu once CONV_WGMMA_VERIFIED (below)
//   otherwise                          → SIMT (exact f32 products)
// "Worth it": Cout ≥ 64 with K = Cin·kt·kh·kw ≥ 256 (every Wan-VAE conv but the output one), or
// K ≥ 2048 for narrow outputs (the Wan-VAE's 96 → 3 output conv). Small convs (the test models'
// VAEs, patch embeddings) stay exact: they cost little either way, and their outputs are compared
// with the CPU's to tight tolerances.
// KINO_CUDA_CONV=simt, =mma or =wgmma (read at kc_create), or kc_set_paths (conv_path 1 SIMT, 2 mma.sync,
// 3 wgmma) forces a kernel for every call (the op sweep runs each case on each); forced wgmma still
// runs mma.sync where the call rules wgmma out (Cout < 32: the narrow mma.sync tile suits it better; a
// device that is not sm_90), as the forced wgmma GEMM does. ctx->last_conv names the kernel each call ran.
#include "conv.cuh"
#include <string.h>

static bool tensor_cores_pay(const ConvGeom& g) {
  const int64_t K = (int64_t)g.Cin * g.kt * g.kh * g.kw;
  return (g.Cout >= 64 && K >= 256) || K >= 2048;
}

// The wgmma kernel has not yet run on a GPU: auto keeps mma.sync until the device check
// (tools/gpu-check-conv.py, which forces it: conv_path 3) kept the tensor-core promise at every case on
// an H200 and measured it faster than mma.sync at the Wan-VAE decoder's levels. Set to true then.
constexpr bool CONV_WGMMA_VERIFIED = false;

static bool wgmma_takes(const KcContext* ctx, const ConvGeom& g) {
  return ctx->sm_major == 9 && ctx->encode_tensor_map && g.Cout >= 32;
}

// The SIMT kernel on silu(n(x)) and silu(n(prev)) made as f32 copies in scratch memory.
static int simt_norm_silu(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                          const float* bias, const float* residual, int B, const ConvGeom& g, const ConvNormSilu& ns) {
  const int64_t HW = (int64_t)g.H * g.W;
  const size_t x_n = (size_t)B * g.Cin * g.T * HW, prev_n = prev ? (size_t)B * g.Cin * g.time_pad * HW : 0;
  float* xn = (float*)kc_scratch(ctx, sizeof(float) * (x_n + prev_n));
  if (!xn) return KC_E_OOM;
  float* pn = prev ? xn + x_n : nullptr;
  int rc = kc_conv3d_norm_silu_f32(ctx, xn, x, B, g.Cin, g.T * HW, ns);
  if (!rc && prev) rc = kc_conv3d_norm_silu_f32(ctx, pn, prev, B, g.Cin, g.time_pad * HW, ns);
  if (!rc) rc = kc_conv3d_simt_launch(ctx, out, xn, pn, w, w_dt, bias, residual, B, g);
  kc_scratch_release(ctx, xn);
  return rc;
}

// The SIMT kernel on x upsampled (nearest ×2 in space) into an f32 copy in scratch memory, by the
// upsampleNearest op's own gather.
static int simt_upsample(KcContext* ctx, float* out, const float* x, const void* w, int w_dt, const float* bias,
                         const float* residual, int B, const ConvGeom& g) {
  const int64_t planes = (int64_t)B * g.Cin * g.T, shape[3] = {planes, g.H, g.W}, div[3] = {1, 2, 2},
                stride[3] = {(int64_t)(g.H / 2) * (g.W / 2), g.W / 2, 1};
  float* xu = (float*)kc_scratch(ctx, sizeof(float) * (size_t)planes * g.H * g.W);
  if (!xu) return KC_E_OOM;
  int rc = kc_gather(ctx, xu, x, 4, 3, shape, div, stride);
  if (!rc) rc = kc_conv3d_simt_launch(ctx, out, xu, nullptr, w, w_dt, bias, residual, B, g);
  kc_scratch_release(ctx, xu);
  return rc;
}

// geom: 17 ints in ConvGeom order (Cin, Cout, T, H, W, kt, kh, kw, st, sh, sw, timePad, top, left,
// To, Ho, Wo). prev [B, Cin, timePad, H, W] or null; bias [Cout] or null; residual (out's shape, not
// out itself) or null: added to every output element (kc_conv_out). upsample nonzero: the conv reads x
// nearest-upsampled ×2 in space, x being [B, Cin, T, H/2, W/2] (conv.cuh). norm_silu nonzero: the conv
// reads silu(n(X)) for each input voxel X (conv.cuh ConvNormSilu), norm_gamma [Cin] or null.
KC_API int kc_conv3d(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                     const float* bias, const float* residual, int B, const int32_t* geom, int upsample, int norm_silu,
                     const float* norm_gamma, float norm_eps, float norm_scale) {
  ctx->last_conv = "";
  ConvGeom g;
  memcpy(&g, geom, sizeof g);
  const ConvNormSilu ns{norm_silu != 0, norm_gamma, norm_eps, norm_scale};
  const int64_t P = (int64_t)g.To * g.Ho * g.Wo;
  if (B <= 0 || P <= 0 || g.Cout <= 0) return 0;
  if (w_dt != KC_F32 && w_dt != KC_BF16 && w_dt != KC_F16)
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "weights must be f32, bf16 or f16");
  if (upsample && (g.H % 2 || g.W % 2 || prev || ns.on))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "upsample needs an even H and W, and no prev or norm_silu");
  const bool tensor_cores =
      ctx->sm_major >= 8 && ctx->conv_path != 1 && (ctx->conv_path >= 2 || tensor_cores_pay(g));
  if (tensor_cores && (ctx->conv_path == 3 || (ctx->conv_path == 0 && CONV_WGMMA_VERIFIED)) && wgmma_takes(ctx, g)) {
    ctx->last_conv = "wgmma";
    return kc_conv3d_wgmma_launch(ctx, out, x, prev, w, w_dt, bias, residual, B, g, ns, upsample);
  }
  if (tensor_cores) {
    ctx->last_conv = "mma.sync";
    return kc_conv3d_mma_launch(ctx, out, x, prev, w, w_dt, bias, residual, B, g, ns, upsample);
  }
  ctx->last_conv = "simt";
  if (ns.on) return simt_norm_silu(ctx, out, x, prev, w, w_dt, bias, residual, B, g, ns);
  if (upsample) return simt_upsample(ctx, out, x, w, w_dt, bias, residual, B, g);
  return kc_conv3d_simt_launch(ctx, out, x, prev, w, w_dt, bias, residual, B, g);
}
