/*
 * Wan's q/k path after the projection: RMSNorm over each token's whole width H·D (Wan normalizes q
 * and k across all heads, before the head split), then 3D RoPE on adjacent pairs (rope.h), in one
 * pass: the sum of squares reads the token once, and the scaling by 1/rms·weight happens on the
 * values the rotation loads anyway. x [B, L, H, D], weight [H·D] or null; tokens split across
 * threads; in place allowed (a token is reduced before any of it is written).
 */
#include "kmath.h"
#include "rope.h"
#include "row_stats.h"
#include "scratch.h"

void KINO_EXPORT(kino_rms_norm_rope)(int tid, int nth, float *out, const float *x, const float *w, float eps,
                                     const float *cos_t, const float *sin_t, int B, int L, int H, int D, int rows,
                                     int pairs, int pt, int ph, int pw, int F, int GH, int GW, int f0,
                                     const float *f_at) {
  const rope_tables t = rope_tables_now(cos_t, sin_t, rows, pairs, pt, ph, pw, F, GH, GW, f0, f_at);
  const int width = H * D;
  float *cs = thread_scratch(tid), *sn = cs + pt + ph + pw;
  range_t r = split_range((size_t)B * L, tid, nth);
  for (size_t tok = r.lo; tok < r.hi; tok++) {
    const float *xt = x + tok * width;
    const float inv = 1.0f / ksqrt(row_sq_dev(xt, width, 0.0f) / (float)width + eps);
    const int rotated = rope_token(&t, (int)(tok % (size_t)L), cs, sn);
    for (int h = 0; h < H; h++)
      rope_head(out + tok * width + h * D, xt + h * D, D, inv, w ? w + h * D : 0, rotated ? cs : 0, sn, pt + ph + pw);
  }
}
