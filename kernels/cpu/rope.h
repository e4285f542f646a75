/*
 * Wan's 3D rotary embedding on adjacent pairs, shared by rope3d (rope.c) and the fused q/k
 * RMSNorm + RoPE (norm_rope.c): the tables of one token and the rotation of one head.
 *
 * The cos/sin tables are [P, pairs] with the three per-axis tables side by side (columns [0, pt)
 * frame, [pt, pt+ph) height, then width), exactly Wan's concatenated `freqs`. Token l of the F·GH·GW
 * grid sits at (f0 + l / (GH·GW), (l / GW) % GH, l % GW); pair c reads the row of its axis.
 *
 * f0 may have a part read when the kernel runs (RopeOptions.frameOffsetAt: an f32 in the heap holding
 * a whole number), so that a recorded graph (src/runtime/backends/wasm-graph.ts, the CUDA graph
 * contract) rotates each chunk of a causal DiT at its own frame with one recording. That value is not
 * checked against the table at the call, so a token whose frame row falls outside the table's `rows`
 * is left unrotated rather than read past it, as the CUDA kernels do (kernels/cuda/rope.cuh).
 */
#ifndef KINO_ROPE_H
#define KINO_ROPE_H

#include "common.h"

typedef struct {
  const float *cos, *sin;
  int pairs, pt, ph, pw, F, GH, GW, f0, rows;
} rope_tables;

/* The tables' view for one call: f0 with the run-time part (f_at, or null) added. */
static inline rope_tables rope_tables_now(const float *cos_t, const float *sin_t, int rows, int pairs, int pt, int ph,
                                          int pw, int F, int GH, int GW, int f0, const float *f_at) {
  const rope_tables t = {cos_t, sin_t, pairs, pt, ph, pw, F, GH, GW, f0 + (f_at ? (int)*f_at : 0), rows};
  return t;
}

/* The cos/sin of every used pair (pt + ph + pw of them) of token l into cs, sn; 0 when l is past the
 * grid or its frame row outside the table (the token is not rotated). */
static inline int rope_token(const rope_tables *t, int l, float *cs, float *sn) {
  if (l >= t->F * t->GH * t->GW) return 0;
  const int pos[3] = {t->f0 + l / (t->GH * t->GW), (l / t->GW) % t->GH, l % t->GW};
  if (pos[0] < 0 || pos[0] >= t->rows) return 0;
  for (int c = 0; c < t->pt + t->ph + t->pw; c++) {
    const size_t at = (size_t)pos[c < t->pt ? 0 : c < t->pt + t->ph ? 1 : 2] * t->pairs + c;
    cs[c] = t->cos[at], sn[c] = t->sin[at];
  }
  return 1;
}

/* The head's values times s·w[i] (w optional; s = 1 and no w: unscaled, exact). */
static inline v4f rope_scaled(const float *x, const float *w, int i, v4f s) {
  v4f v = vload(x + i) * s;
  return w ? v * vload(w + i) : v;
}

/*
 * One head of D values: oh = rotate(xh · s · w) over the first `used` pairs (none when cs is null),
 * the rest scaled only. In place allowed.
 */
static inline void rope_head(float *oh, const float *xh, int D, float s, const float *w, const float *cs,
                             const float *sn, int used) {
  const v4f vs = vsplat(s);
  int c = 0;
  if (cs) {
    for (; c + 2 <= used; c += 2) { /* two pairs per vector: (re0, im0, re1, im1) */
      v4f v = rope_scaled(xh, w, 2 * c, vs);
      v4f swapped = {v[1], v[0], v[3], v[2]};
      v4f vc = {cs[c], cs[c], cs[c + 1], cs[c + 1]}, vsn = {-sn[c], sn[c], -sn[c + 1], sn[c + 1]};
      vstore(oh + 2 * c, v * vc + swapped * vsn);
    }
    for (; c < used; c++) {
      float re = xh[2 * c] * s * (w ? w[2 * c] : 1.0f), im = xh[2 * c + 1] * s * (w ? w[2 * c + 1] : 1.0f);
      oh[2 * c] = re * cs[c] - im * sn[c];
      oh[2 * c + 1] = re * sn[c] + im * cs[c];
    }
  }
  if (oh == xh && s == 1.0f && !w) return;
  int i = 2 * c;
  for (; i + 4 <= D; i += 4) vstore(oh + i, rope_scaled(xh, w, i, vs));
  for (; i < D; i++) oh[i] = xh[i] * s * (w ? w[i] : 1.0f);
}

#endif
