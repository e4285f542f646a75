/*
 * Causal Conv3d (and Conv2d, which is Conv3d with one frame and kt = 1) as an implicit GEMM: per
 * batch item, out[Cout, P] = W[Cout, K] · X̂[K, P] with K = Cin·kt·kh·kw and P = T'·H'·W' output
 * positions. W is already a row-major [Cout, K] matrix (the PyTorch layout), so it packs like any A
 * operand; X̂ (im2col) is never materialised — the B packer gathers each NR-wide panel straight from
 * the input, with zeros for spatial padding and, in time, the `prev` frames (a streaming conv's
 * cache) or zeros for the timePad frames before the input. The output layout [Cout, P] is exactly
 * [B, Cout, T', H', W'].
 */
#include "dtype.h"
#include "gemm.h"
#include "scratch.h"

typedef struct {
  const float *x, *prev; /* x [Cin, T, H, W] of this batch item, prev [Cin, tp, H, W] or null */
  int Cin, T, H, W, kt, kh, kw, st, sh, sw, tp, top, left, To, Ho, Wo;
} conv_src;

static inline float conv_fetch(const conv_src *s, int ci, int t, int y, int x) {
  if (y < 0 || y >= s->H || x < 0 || x >= s->W) return 0.0f;
  if (t >= 0) return s->x[(((size_t)ci * s->T + t) * s->H + y) * s->W + x];
  if (!s->prev) return 0.0f;
  return s->prev[(((size_t)ci * s->tp + s->tp + t) * s->H + y) * s->W + x];
}

/* B panel rows: k → (ci, a, r, q); panel columns: output positions. When the NR positions sit in
 * one output row with unit stride and their inputs are inside the frame, a row of the panel is a
 * contiguous run of the input and is copied with two vector loads. */
void pack_b_im2col(const void *ctx, float *dst, int j0, int nc, int k0, int kc) {
  const conv_src *s = ctx;
  const int khw = s->kh * s->kw, kthw = s->kt * khw, HWo = s->Ho * s->Wo;
  for (int p = 0; p < nc; p += NR, dst += (size_t)kc * NR) {
    int to[NR], yo[NR], xo[NR], n = imin(NR, nc - p);
    for (int c = 0; c < NR; c++) {
      int j = j0 + p + (c < n ? c : 0);
      to[c] = j / HWo, yo[c] = (j / s->Wo) % s->Ho, xo[c] = j % s->Wo;
    }
    const int one_row = n == NR && s->sw == 1 && to[NR - 1] == to[0] && yo[NR - 1] == yo[0];
    for (int k = 0; k < kc; k++) {
      int kk = k0 + k, ci = kk / kthw, a = (kk / khw) % s->kt, r = (kk / s->kw) % s->kh, q = kk % s->kw;
      float *d = dst + (size_t)k * NR;
      int t = to[0] * s->st + a - s->tp, y = yo[0] * s->sh + r - s->top, x = xo[0] + q - s->left;
      if (one_row && t >= 0 && y >= 0 && y < s->H && x >= 0 && x + NR <= s->W) {
        const float *src = s->x + (((size_t)ci * s->T + t) * s->H + y) * s->W + x;
        vstore(d, vload(src)), vstore(d + 4, vload(src + 4));
        continue;
      }
      for (int c = 0; c < NR; c++)
        d[c] = c < n ? conv_fetch(s, ci, to[c] * s->st + a - s->tp, yo[c] * s->sh + r - s->top, xo[c] * s->sw + q - s->left)
                     : 0.0f;
    }
  }
}

void KINO_EXPORT(kino_conv3d)(int tid, int nth, float *out, const float *x, const float *prev, const void *w, int wdt,
                              const float *bias, int B, int Cin, int Cout, int T, int H, int W, int kt, int kh, int kw,
                              int st, int sh, int sw, int tp, int top, int left, int To, int Ho, int Wo) {
  const int K = Cin * kt * kh * kw, P = To * Ho * Wo;
  int i_lo = 0, i_hi = Cout, j_lo = 0, j_hi = P;
  if (P >= nth * 4 * NR) { /* split output positions */
    range_t r = split_range((size_t)(P + NR - 1) / NR, tid, nth);
    j_lo = (int)r.lo * NR, j_hi = imin(P, (int)r.hi * NR);
  } else { /* few positions: split output channels */
    range_t r = split_range((size_t)(Cout + MR - 1) / MR, tid, nth);
    i_lo = (int)r.lo * MR, i_hi = imin(Cout, (int)r.hi * MR);
  }
  if (i_lo >= i_hi || j_lo >= j_hi) return;
  rows_src ws = {w, wdt, K};
  for (int b = 0; b < B; b++) {
    conv_src s = {x + (size_t)b * Cin * T * H * W, prev ? prev + (size_t)b * Cin * tp * H * W : 0,
                  Cin, T, H, W, kt, kh, kw, st, sh, sw, tp, top, left, To, Ho, Wo};
    float *ob = out + (size_t)b * Cout * P;
    gemm_blocked(i_lo, i_hi, j_lo, j_hi, K, pack_a_rows, &ws, pack_b_im2col, &s, ob, P, 0, 0, thread_scratch(tid));
    if (bias)
      for (int i = i_lo; i < i_hi; i++)
        for (int j = j_lo; j < j_hi; j++) ob[(size_t)i * P + j] += bias[i];
  }
}
