/*
 * Linear layers over weights packed once (the wasm backend keeps the packed copy next to the weight):
 * w [N, K] → wp [ceil(N/NR)][K][NR], the exact panels gemm.c's pack_b_wrows builds for every call.
 * With few rows of activations (a streaming DiT runs 16–32 tokens through matrices of 256×768) that
 * per-call transpose and widening cost about as much as the multiply-adds; read from wp, every block of
 * B is already in place. Same blocking, same k order and epilogue as kino_gemm, so the sums are
 * identical.
 */
#include "dtype.h"
#include "gemm.h"
#include "scratch.h"

/* Panels split across threads; columns past N are zeros. */
void KINO_EXPORT(kino_pack_w)(int tid, int nth, float *wp, const void *w, int wdt, int N, int K) {
  const int panels = (N + NR - 1) / NR;
  range_t r = split_range((size_t)panels, tid, nth);
  for (size_t p = r.lo; p < r.hi; p++)
    for (int c = 0; c < NR; c++) {
      const int n = (int)p * NR + c;
      float *dst = wp + p * (size_t)K * NR + c;
      for (int k = 0; k < K; k++) dst[(size_t)k * NR] = n < N ? load_w1(w, wdt, (size_t)n * K + k) : 0.0f;
    }
}

void KINO_EXPORT(kino_gemm_packed)(int tid, int nth, float *out, const float *a, const float *wp, const float *bias, int M,
                                   int N, int K, int gelu, const float *residual, const float *gate, int L, int G) {
  int i_lo, i_hi, j_lo, j_hi;
  if (!gemm_thread_block(tid, nth, M, N, &i_lo, &i_hi, &j_lo, &j_hi)) return;
  const gemm_epi e = {bias, gelu, residual, gate, L, G};
  float *ap = thread_scratch(tid) + (size_t)KC * NC; /* where gemm_blocked keeps its A block */
  rows_src as = {a, DT_F32, K};
  if (K == 0) return gemm_empty_sum(i_lo, i_hi, j_lo, j_hi, out, N, 0, &e);
  for (int jc = j_lo; jc < j_hi; jc += NC) {
    const int nc = imin(NC, j_hi - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = imin(KC, K - pc);
      for (int ic = i_lo; ic < i_hi; ic += MC) {
        const int mc = imin(MC, i_hi - ic);
        pack_a_rows(&as, ap, ic, mc, pc, kc);
        const float *bp = wp + (size_t)(jc / NR) * K * NR + (size_t)pc * NR;
        gemm_macro(ic, mc, jc, nc, pc, kc, K, ap, bp, (size_t)K * NR, out, N, 0, &e);
      }
    }
  }
}
