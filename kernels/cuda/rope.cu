// 3D rotary position embedding on adjacent pairs, fused over the three axes (frame, height, width),
// as Wan and LongLive-2.0's fused kernel do it: one pass, f32 tables, pass-through tail.
//
// CPU reference (src/runtime/reference.ts `rope3d`): x [B, L, H, D]; tables cos/sin [P, pairs];
// axis pair counts (pt, ph, pw); grid (F, GH, GW); frame offset f0 (+ *f_at, read when the kernel
// runs: rope.cuh). For token l < F·GH·GW whose frame row is inside the table:
//   pos = (f0 + l / (GH·GW), (l / GW) % GH, l % GW)
//   for pair c < pt + ph + pw (axis a = 0 if c < pt, 1 if c < pt + ph, else 2):
//     (x[2c], x[2c+1]) ← (x[2c]·cos − x[2c+1]·sin, x[2c]·sin + x[2c+1]·cos),  cos/sin = table[pos[a], c]
// Every other element (tokens past the grid, pairs past the used ones) is copied unchanged.
// One thread per pair (the rotation: rope.cuh); in place allowed. x and out both f32 or both bf16 (the
// rotation in f32, rounded once).
#include "rope.cuh"

namespace {
template <typename T>
__global__ void rope3d_kernel(T* out, const T* x, int64_t npairs, int L, int H, int half_d, const KcRope at_launch) {
  const KcRope rope = kc_rope_now(at_launch);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < npairs; i += (int64_t)gridDim.x * blockDim.x) {
    const int c = (int)(i % half_d);
    const int l = (int)((i / ((int64_t)half_d * H)) % L);
    // Scalar accesses: a view may start at an odd element, so float2 alignment is not guaranteed.
    float re = kc_f32(x[2 * i]), im = kc_f32(x[2 * i + 1]);
    kc_rope_pair(rope, l, c, re, im);
    kc_put(out + 2 * i, re);
    kc_put(out + 2 * i + 1, im);
  }
}
}  // namespace

KC_API int kc_rope3d(KcContext* ctx, void* out, const void* x, int B, int L, int H, int D, const float* cos_t,
                     const float* sin_t, int rows, int pairs, int pt, int ph, int pw, int F, int GH, int GW, int f0,
                     const float* f_at, int dt) {
  if (dt != KC_F32 && dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_rope3d", "x and out must be f32 or bf16");
  int64_t n = (int64_t)B * L * H * (D / 2);
  if (n <= 0) return 0;
  if (D % 2) return kc_fail(ctx, KC_E_ARG, "kc_rope3d", "head dim must be even");
  int64_t blocks = (n + 255) / 256, cap = (int64_t)ctx->sm_count * 16;
  const unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
  const KcRope rope = kc_rope(cos_t, sin_t, rows, pairs, pt, ph, pw, F, GH, GW, f0, f_at);
  if (dt == KC_BF16)
    KC_LAUNCH(rope3d_kernel<__nv_bfloat16>, grid, 256, 0, ctx->stream)((__nv_bfloat16*)out, (const __nv_bfloat16*)x, n, L, H, D / 2, rope);
  else
    KC_LAUNCH(rope3d_kernel<float>, grid, 256, 0, ctx->stream)((float*)out, (const float*)x, n, L, H, D / 2, rope);
  return kc_launched(ctx, "kc_rope3d");
}
