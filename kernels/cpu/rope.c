/*
 * 3D rotary position embedding (Wan): x [B, L, H, D], adjacent pairs (x[2c], x[2c+1]) rotated by
 * the angle of pair c at the token's position on that pair's axis (tables and positions: rope.h).
 * Per token we gather its cos/sin row once and apply it to every head. Tokens past the F·H·W grid
 * (or whose frame row is outside the table: rope.h) and pairs past pt+ph+pw pass through unchanged.
 */
#include "rope.h"
#include "scratch.h"

void KINO_EXPORT(kino_rope3d)(int tid, int nth, float *out, const float *x, const float *cos_t, const float *sin_t,
                              int B, int L, int H, int D, int rows, int pairs, int pt, int ph, int pw, int F, int GH,
                              int GW, int f0, const float *f_at) {
  const rope_tables t = rope_tables_now(cos_t, sin_t, rows, pairs, pt, ph, pw, F, GH, GW, f0, f_at);
  float *cs = thread_scratch(tid), *sn = cs + pt + ph + pw;
  range_t r = split_range((size_t)B * L, tid, nth);
  for (size_t tok = r.lo; tok < r.hi; tok++) {
    const int rotated = rope_token(&t, (int)(tok % (size_t)L), cs, sn);
    for (int h = 0; h < H; h++) {
      const size_t at = (tok * H + h) * D;
      rope_head(out + at, x + at, D, 1.0f, 0, rotated ? cs : 0, sn, pt + ph + pw);
    }
  }
}
