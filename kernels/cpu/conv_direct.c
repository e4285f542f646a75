/*
 * Stride-1 Conv3d without im2col packing (the Wan-VAE decoder's convs: 3×3×3, 1×3×3, 3×1×1, 1×1×1).
 *
 * conv.c gathers every B panel of the implicit GEMM element by element, with four integer divisions
 * per panel row; with the VAE's few channels (12–48) each gathered element feeds only Cout
 * multiply-adds, so the gather costed more than the arithmetic (≈9 GFLOP/s). Here the input is first
 * copied once into a zero-padded buffer xp [Cin, tp + T, Hp, Wp] (kino_conv3d_pad: the `prev` frames,
 * then x, with the spatial padding as zeros), where Hp = Ho + kh − 1 and Wp = Wo + kw − 1. In xp every
 * tap of the kernel is a constant offset from the output position:
 *
 *   out[co, t, y, x] = Σ_k W[co, k] · xp[base(t, y, x) + koff[k]],
 *   base = (t·Hp + y)·Wp + x,  koff[(ci, a, r, q)] = ((ci·Tp + a)·Hp + r)·Wp + q,
 *
 * so NR consecutive outputs of a row read NR consecutive floats of xp for every k: the micro-kernel
 * loads B straight from xp (two vector loads per k) and only the weights are packed. The blocking
 * (KC × MC weight blocks, k order, bias added last) is conv.c's, so both paths give the same sums.
 */
#include "dtype.h"
#include "gemm.h"
#include "scratch.h"

_Static_assert(((size_t)MC * KC + KC) * sizeof(float) <= SCRATCH_BYTES, "direct conv blocks exceed the scratch block");

/* Floats xp needs past its last frame: the widest read of an edge tile. */
#define XP_TAIL NR

/* xp = [prev frames (zeros without prev) | x], zero-padded in space; one (ci, t) frame per work item. */
void KINO_EXPORT(kino_conv3d_pad)(int tid, int nth, float *xp, const float *x, const float *prev, int Cin, int T, int H,
                                  int W, int tp, int Hp, int Wp, int top, int left) {
  const int Tp = tp + T;
  range_t r = split_range((size_t)Cin * Tp, tid, nth);
  for (size_t f = r.lo; f < r.hi; f++) {
    const int ci = (int)(f / Tp), t = (int)(f % Tp);
    const float *src = t < tp ? (prev ? prev + ((size_t)ci * tp + t) * H * W : 0) : x + ((size_t)ci * T + t - tp) * H * W;
    float *dst = xp + f * Hp * Wp;
    for (int y = 0; y < Hp; y++) {
      float *d = dst + (size_t)y * Wp;
      const int sy = y - top;
      if (!src || sy < 0 || sy >= H) {
        for (int c = 0; c < Wp; c++) d[c] = 0.0f;
        continue;
      }
      const float *s = src + (size_t)sy * W;
      for (int c = 0; c < Wp; c++) {
        const int sx = c - left;
        d[c] = sx >= 0 && sx < W ? s[sx] : 0.0f;
      }
    }
  }
  if (tid == nth - 1)
    for (int i = 0; i < XP_TAIL; i++) xp[(size_t)Cin * Tp * Hp * Wp + i] = 0.0f;
}

/* The MR×NR tile at c = / += pa[kc][MR] · (NR floats at xb + koff[k], for each k). */
static inline void direct_tile(int kc, const float *pa, const float *xb, const int *koff, float *c, int ldc, int accumulate) {
  v4f acc[MR][NV] = {{{0}}};
  for (int k = 0; k < kc; k++, pa += MR) {
    tile_step(acc, pa, xb + koff[k]);
  }
  store_tile(acc, c, ldc, accumulate);
}

static inline void direct_tile_edge(int kc, const float *pa, const float *xb, const int *koff, float *c, int ldc, int mr,
                                    int nr, int accumulate) {
  float tile[MR * NR];
  direct_tile(kc, pa, xb, koff, tile, NR, 0);
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + tile[i * NR + j];
}

/* out [B, Cout, To, Ho, Wo] from xp (one padded input per batch item, each Cin·Tp·Hp·Wp + XP_TAIL
 * floats apart); threads split the output rows (t, y). */
void KINO_EXPORT(kino_conv3d_direct)(int tid, int nth, float *out, const float *xp, const void *w, int wdt,
                                     const float *bias, int B, int Cin, int Cout, int Tp, int Hp, int Wp, int kt, int kh,
                                     int kw, int To, int Ho, int Wo) {
  const int K = Cin * kt * kh * kw, P = To * Ho * Wo, khw = kh * kw, kthw = kt * khw;
  range_t rows = split_range((size_t)To * Ho, tid, nth);
  if (rows.lo >= rows.hi) return;
  float *ap = thread_scratch(tid);
  int *koff = (int *)(ap + (size_t)MC * KC);
  rows_src ws = {w, wdt, K};
  const size_t xp_stride = (size_t)Cin * Tp * Hp * Wp + XP_TAIL;
  for (int b = 0; b < B; b++) {
    const float *xb = xp + b * xp_stride;
    float *ob = out + (size_t)b * Cout * P;
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = imin(KC, K - pc);
      for (int k = 0; k < kc; k++) {
        const int kk = pc + k, ci = kk / kthw, a = (kk / khw) % kt, r = (kk / kw) % kh, q = kk % kw;
        koff[k] = ((ci * Tp + a) * Hp + r) * Wp + q;
      }
      for (int ic = 0; ic < Cout; ic += MC) {
        const int mc = imin(MC, Cout - ic);
        pack_a_rows(&ws, ap, ic, mc, pc, kc);
        for (size_t row = rows.lo; row < rows.hi; row++) {
          const int t = (int)(row / Ho), y = (int)(row % Ho);
          const float *xrow = xb + ((size_t)t * Hp + y) * Wp;
          float *orow = ob + row * Wo;
          for (int x0 = 0; x0 < Wo; x0 += NR) {
            const int nr = imin(NR, Wo - x0);
            for (int ir = 0; ir < mc; ir += MR) {
              const int mr = imin(MR, mc - ir);
              float *c = orow + (size_t)(ic + ir) * P + x0;
              if (mr == MR && nr == NR) direct_tile(kc, ap + (size_t)ir * kc, xrow + x0, koff, c, P, pc > 0);
              else direct_tile_edge(kc, ap + (size_t)ir * kc, xrow + x0, koff, c, P, mr, nr, pc > 0);
            }
          }
        }
      }
    }
    if (bias)
      for (int i = 0; i < Cout; i++)
        for (size_t row = rows.lo; row < rows.hi; row++) {
          float *o = ob + (size_t)i * P + row * Wo;
          for (int j = 0; j < Wo; j++) o[j] += bias[i];
        }
  }
}
