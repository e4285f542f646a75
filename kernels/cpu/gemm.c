/*
 * Linear layers: out[M, N] = a[M, K] · w[N, K]ᵀ + bias, w in f32/bf16/f16 (PyTorch Linear layout),
 * and the epilogue after it (gemm_epilogue.h: the bias, GELU or a gated residual, applied as tiles are
 * stored).
 *
 * Two paths. M ≤ 4 (time embeddings, a single token) is a matrix-vector product: it is bound by
 * reading w once, so it streams each weight row against all rows of a and skips packing. Larger M
 * goes through the blocked core (gemm_blocked below) with w packed into NR-wide panels — the transpose
 * and the bf16/f16 widening happen once per panel and are amortised over MC rows of a.
 */
#include "gemm.h"
#include "dtype.h"
#include "scratch.h"

_Static_assert(GEMM_SCRATCH_FLOATS * sizeof(float) <= SCRATCH_BYTES, "GEMM panels exceed the scratch block");

void pack_a_rows(const void *ctx, float *dst, int i0, int mc, int k0, int kc) {
  const rows_src *s = ctx;
  for (int p = 0; p < mc; p += MR, dst += (size_t)kc * MR) {
    for (int r = 0; r < MR; r++) {
      if (p + r >= mc) {
        for (int k = 0; k < kc; k++) dst[k * MR + r] = 0.0f;
        continue;
      }
      size_t row = (size_t)(i0 + p + r) * s->ld + k0;
      int k = 0;
      for (; k + 4 <= kc; k += 4) {
        v4f v = load_w4(s->p, s->dt, row + k);
        dst[k * MR + r] = v[0], dst[(k + 1) * MR + r] = v[1], dst[(k + 2) * MR + r] = v[2], dst[(k + 3) * MR + r] = v[3];
      }
      for (; k < kc; k++) dst[k * MR + r] = load_w1(s->p, s->dt, row + k);
    }
  }
}

/* B block from w[N, K]: column j of B is row j of w. */
static void pack_b_wrows(const void *ctx, float *dst, int j0, int nc, int k0, int kc) {
  const rows_src *s = ctx;
  for (int p = 0; p < nc; p += NR, dst += (size_t)kc * NR) {
    for (int r = 0; r < NR; r++) {
      if (p + r >= nc) {
        for (int k = 0; k < kc; k++) dst[k * NR + r] = 0.0f;
        continue;
      }
      size_t row = (size_t)(j0 + p + r) * s->ld + k0;
      int k = 0;
      for (; k + 4 <= kc; k += 4) {
        v4f v = load_w4(s->p, s->dt, row + k);
        dst[k * NR + r] = v[0], dst[(k + 1) * NR + r] = v[1], dst[(k + 2) * NR + r] = v[2], dst[(k + 3) * NR + r] = v[3];
      }
      for (; k < kc; k++) dst[k * NR + r] = load_w1(s->p, s->dt, row + k);
    }
  }
}

void gemm_empty_sum(int i_lo, int i_hi, int j_lo, int j_hi, float *C, int ldc, int accumulate, const gemm_epi *epi) {
  if (!gemm_epi_active(epi) && accumulate) return;
  for (int i = i_lo; i < i_hi; i++)
    for (int j = j_lo; j < j_hi; j++) C[(size_t)i * ldc + j] = gemm_epi_active(epi) ? gemm_epi_one(epi, 0.0f, ldc, i, j) : 0.0f;
}

void gemm_blocked(int i_lo, int i_hi, int j_lo, int j_hi, int K, pack_a_fn pack_a, const void *actx,
                  pack_b_fn pack_b, const void *bctx, float *C, int ldc, int accumulate, const gemm_epi *epi,
                  float *scratch) {
  float *bp = scratch, *ap = scratch + (size_t)KC * NC;
  if (K == 0) return gemm_empty_sum(i_lo, i_hi, j_lo, j_hi, C, ldc, accumulate, epi);
  for (int jc = j_lo; jc < j_hi; jc += NC) {
    int nc = imin(NC, j_hi - jc);
    for (int pc = 0; pc < K; pc += KC) {
      int kc = imin(KC, K - pc);
      pack_b(bctx, bp, jc, nc, pc, kc);
      for (int ic = i_lo; ic < i_hi; ic += MC) {
        int mc = imin(MC, i_hi - ic);
        pack_a(actx, ap, ic, mc, pc, kc);
        gemm_macro(ic, mc, jc, nc, pc, kc, K, ap, bp, (size_t)kc * NR, C, ldc, accumulate, epi);
      }
    }
  }
}

/* M ≤ 4: each weight row is read once and dotted with every row of a. */
static void gemm_small_m(float *out, const float *a, const void *w, int dt, const gemm_epi *e, int M, int N, int K,
                         int n_lo, int n_hi) {
  for (int n = n_lo; n < n_hi; n++) {
    v4f acc[4] = {{0}, {0}, {0}, {0}};
    size_t row = (size_t)n * K;
    int k = 0;
    for (; k + 4 <= K; k += 4) {
      v4f wv = load_w4(w, dt, row + k);
      for (int m = 0; m < M; m++) acc[m] += vload(a + (size_t)m * K + k) * wv;
    }
    for (int m = 0; m < M; m++) {
      float s = vsum(acc[m]);
      for (int kk = k; kk < K; kk++) s += a[(size_t)m * K + kk] * load_w1(w, dt, row + kk);
      out[(size_t)m * N + n] = gemm_epi_one(e, s, N, m, n);
    }
  }
}

/* gelu, residual, gate, L, G: the epilogue (gemm_epilogue.h); residual may be out. */
void KINO_EXPORT(kino_gemm)(int tid, int nth, float *out, const float *a, const void *w, int wdt, const float *bias,
                            int M, int N, int K, int gelu, const float *residual, const float *gate, int L, int G) {
  const gemm_epi e = {bias, gelu, residual, gate, L, G};
  if (M <= 4) {
    range_t r = split_range((size_t)N, tid, nth);
    gemm_small_m(out, a, w, wdt, &e, M, N, K, (int)r.lo, (int)r.hi);
    return;
  }
  int i_lo, i_hi, j_lo, j_hi;
  if (!gemm_thread_block(tid, nth, M, N, &i_lo, &i_hi, &j_lo, &j_hi)) return;
  rows_src as = {a, DT_F32, K}, ws = {w, wdt, K};
  gemm_blocked(i_lo, i_hi, j_lo, j_hi, K, pack_a_rows, &as, pack_b_wrows, &ws, out, N, 0, &e, thread_scratch(tid));
}
