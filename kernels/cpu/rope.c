/*
 * 3D rotary position embedding (Wan): x [B, L, H, D], adjacent pairs (x[2c], x[2c+1]) rotated by
 * the angle of pair c at the token's position on that pair's axis. The cos/sin tables are [P, pairs]
 * with the three per-axis tables side by side (columns [0, pt) frame, [pt, pt+ph) height, then
 * width), exactly Wan's concatenated `freqs`. Per token we gather its cos/sin row once and apply it
 * to every head. Tokens past the F·H·W grid and pairs past pt+ph+pw pass through unchanged.
 */
#include "common.h"
#include "scratch.h"

void KINO_EXPORT(kino_rope3d)(int tid, int nth, float *out, const float *x, const float *cos_t, const float *sin_t,
                              int B, int L, int H, int D, int pairs, int pt, int ph, int pw, int F, int GH, int GW,
                              int f0) {
  const int used = pt + ph + pw, grid = F * GH * GW;
  float *cs = thread_scratch(tid), *sn = cs + used;
  range_t r = split_range((size_t)B * L, tid, nth);
  for (size_t tok = r.lo; tok < r.hi; tok++) {
    const int l = (int)(tok % (size_t)L);
    const float *xt = x + tok * H * D;
    float *ot = out + tok * H * D;
    if (l >= grid) {
      if (ot != xt)
        for (int i = 0; i < H * D; i++) ot[i] = xt[i];
      continue;
    }
    const int pos[3] = {f0 + l / (GH * GW), (l / GW) % GH, l % GW};
    for (int c = 0; c < used; c++) {
      int p = pos[c < pt ? 0 : c < pt + ph ? 1 : 2];
      cs[c] = cos_t[(size_t)p * pairs + c], sn[c] = sin_t[(size_t)p * pairs + c];
    }
    for (int h = 0; h < H; h++) {
      const float *xh = xt + h * D;
      float *oh = ot + h * D;
      int c = 0;
      for (; c + 2 <= used; c += 2) { /* two pairs per vector: (re0, im0, re1, im1) */
        v4f v = vload(xh + 2 * c);
        v4f swapped = {v[1], v[0], v[3], v[2]};
        v4f vc = {cs[c], cs[c], cs[c + 1], cs[c + 1]}, vs = {-sn[c], sn[c], -sn[c + 1], sn[c + 1]};
        vstore(oh + 2 * c, v * vc + swapped * vs);
      }
      for (; c < used; c++) {
        float re = xh[2 * c], im = xh[2 * c + 1];
        oh[2 * c] = re * cs[c] - im * sn[c];
        oh[2 * c + 1] = re * sn[c] + im * cs[c];
      }
      if (oh != xh)
        for (int i = 2 * used; i < D; i++) oh[i] = xh[i];
    }
  }
}
