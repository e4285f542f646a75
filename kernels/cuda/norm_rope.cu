// Wan's q/k path after the projection: RMSNorm over each token's whole width H·D (Wan normalizes q and
// k across all heads, before the head split), then 3D RoPE on adjacent pairs, in one pass instead of a
// norm pass and a rope pass over the activations.
//
// CPU reference (src/runtime/reference.ts `rmsNormRope`): x [B, L, H, D], weight [H·D] or null; per
// token t (row of H·D values):
//   y = x / sqrt(mean(x²) + eps) · weight            (mean over the H·D values, f32)
//   then rope3d on y (rope.cu, rope.cuh; the frame offset may be read at run time there): pair c of
//   every head rotated by table[pos[axis(c)], c];
//   tokens past the grid and pairs past the used ones are only normalized.
//
// One block per token, as norm.cu's rms_norm (rows of 128…5120 values): the threads sum the squares
// (kc_block_inv_rms), then each scales and rotates whole pairs, strided over the token's H·D/2 pairs.
// Scalar accesses: a view may start at an odd element. x and out are both f32 or both bf16 (the DiT's
// q and k, which attention reads as bf16); the sum, the scale and the rotation are f32. In place allowed: every read of the sum
// precedes the reduction's barrier, and afterwards each thread reads only the pair it then writes.
#include "rope.cuh"

namespace {
template <typename T>
__global__ void rms_norm_rope_kernel(T* out, const T* x, int width, int half_d, int L, float eps,
                                     const float* weight, const KcRope at_launch) {
  const KcRope rope = kc_rope_now(at_launch);
  const int64_t tok = blockIdx.x;
  const T* xt = x + tok * width;
  T* ot = out + tok * width;
  const float inv = kc_block_inv_rms(xt, width, eps);
  const int l = (int)(tok % L);
  for (int i = threadIdx.x; i < width / 2; i += blockDim.x) {
    float re = kc_f32(xt[2 * i]) * inv, im = kc_f32(xt[2 * i + 1]) * inv;
    if (weight) re *= weight[2 * i], im *= weight[2 * i + 1];
    const int c = i % half_d;
    // planted 44: a head's last pair rotated at its neighbour's frequency
    kc_rope_pair(rope, l, KC_PLANTED(44) && c > 0 && c == half_d - 1 ? c - 1 : c, re, im);
    kc_put(ot + 2 * i, re);
    kc_put(ot + 2 * i + 1, im);
  }
}
}  // namespace

KC_API int kc_rms_norm_rope(KcContext* ctx, void* out, const void* x, const float* weight, float eps, int B, int L,
                            int H, int D, const float* cos_t, const float* sin_t, int rows, int pairs, int pt, int ph,
                            int pw, int F, int GH, int GW, int f0, const float* f_at, int dt) {
  if (dt != KC_F32 && dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_rms_norm_rope", "x and out must be f32 or bf16");
  const int64_t tokens = (int64_t)B * L;
  const int width = H * D;
  if (tokens <= 0 || width <= 0) return 0;
  if (D % 2) return kc_fail(ctx, KC_E_ARG, "kc_rms_norm_rope", "head dim must be even");
  const int half = width / 2, threads = half >= 256 ? 256 : (half + 31) / 32 * 32;
  const KcRope rope = kc_rope(cos_t, sin_t, rows, pairs, pt, ph, pw, F, GH, GW, f0, f_at);
  if (dt == KC_BF16)
    KC_LAUNCH(rms_norm_rope_kernel<__nv_bfloat16>, (unsigned)tokens, threads, 0, ctx->stream)(
        (__nv_bfloat16*)out, (const __nv_bfloat16*)x, width, D / 2, L, eps, weight, rope);
  else
    KC_LAUNCH(rms_norm_rope_kernel<float>, (unsigned)tokens, threads, 0, ctx->stream)(
        (float*)out, (const float*)x, width, D / 2, L, eps, weight, rope);
  return kc_launched(ctx, "kc_rms_norm_rope");
}
