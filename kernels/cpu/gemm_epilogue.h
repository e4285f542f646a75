/*
 * What a linear layer does with each output y = Σ_k a·w + bias (Backend.gemm's GemmEpilogue): nothing
 * more, GELU (an FFN's up-projection), or a residual connection out = residual + gate·y (Wan's gated
 * residuals; gate absent = 1), so that the output is written by the GEMM only instead of once more by
 * each elementwise op after it.
 *
 * The blocked GEMM (gemm.h gemm_macro) sums K in blocks of KC and keeps the partial sums in the output
 * between blocks; the micro-kernel's register loop stays the plain GEMM's, and the epilogue works on
 * an MC × NC block of the output while it is in cache:
 *   bias, GELU  after the last K block: C = GELU(C + bias);
 *   residual    before the first K block: C = residual + gate·bias; then every block adds gate ⊙ its
 *               products (plain accumulation without a gate). The residual may be the output itself
 *               (in place: x = x + gate·(h·w)); it is read before any product lands on it. The sum is
 *               the same, distributed over the blocks (one rounding per block, within the GEMM's
 *               promise).
 * GELU and a residual are never combined (the TypeScript side offers one or the other).
 */
#ifndef KINO_GEMM_EPILOGUE_H
#define KINO_GEMM_EPILOGUE_H

#include "common.h"
#include "kmath.h"

typedef struct {
  const float *bias;     /* [N] or null */
  int gelu;              /* out = GELU(y) */
  const float *residual; /* [M, N] or null: out = residual + gate·y; may be the output */
  const float *gate;     /* [B, G, N] or null (gate 1) */
  int L, G;              /* output row m reads gate row (m / L)·G + (m % L) / (L / G) */
} gemm_epi;

/* Whether the epilogue does anything (a plain GEMM keeps the direct tile stores). */
static inline int gemm_epi_active(const gemm_epi *e) { return e && (e->bias || e->gelu || e->residual); }

static inline const float *gemm_epi_gate_row(const gemm_epi *e, int m, int N) {
  if (!e->gate) return 0;
  return e->gate + ((size_t)(m / e->L) * e->G + (size_t)((m % e->L) / (e->L / e->G))) * N;
}

/* The gate rows of output rows [i, i + n) (null pointers without a gate): looked up once per block
 * of rows, not once per tile and K block (the lookup divides). */
static inline void gemm_epi_gate_rows(const gemm_epi *e, int i, int n, int N, const float **rows) {
  for (int r = 0; r < n; r++) rows[r] = gemm_epi_gate_row(e, i + r, N);
}

/* One output whose sum s is complete (the matrix-vector path, K = 0): the whole epilogue at once. */
static inline float gemm_epi_one(const gemm_epi *e, float s, int ldc, int m, int n) {
  const float y = s + (e->bias ? e->bias[n] : 0.0f);
  if (e->residual) {
    const float *g = gemm_epi_gate_row(e, m, ldc);
    return e->residual[(size_t)m * ldc + n] + (g ? g[n] : 1.0f) * y;
  }
  return e->gelu ? vgelu(vsplat(y))[0] : y;
}

/* Before the first K block of a residual: rows [i, i + m) × columns [j, j + n) of C (row stride ldc,
 * N = ldc) = residual + gate·bias. gates[r]: the gate row of row i + r. */
static inline void gemm_epi_start(const gemm_epi *e, float *C, int ldc, int i, int m, int j, int n,
                                  const float *const *gates) {
  const v4f zero = vsplat(0.0f), one = vsplat(1.0f);
  for (int r = 0; r < m; r++) {
    float *c = C + (size_t)(i + r) * ldc + j;
    const float *res = e->residual + (size_t)(i + r) * ldc + j, *g = gates[r] ? gates[r] + j : 0;
    const float *b = e->bias ? e->bias + j : 0;
    int q = 0;
    for (; q + 4 <= n; q += 4)
      vstore(c + q, vload(res + q) + (g ? vload(g + q) : one) * (b ? vload(b + q) : zero));
    for (; q < n; q++) c[q] = res[q] + (g ? g[q] : 1.0f) * (b ? b[q] : 0.0f);
  }
}

/* After the last K block of bias / GELU: the same block of C = GELU(C + bias). */
static inline void gemm_epi_finish(const gemm_epi *e, float *C, int ldc, int i, int m, int j, int n) {
  const v4f zero = vsplat(0.0f);
  for (int r = 0; r < m; r++) {
    float *c = C + (size_t)(i + r) * ldc + j;
    const float *b = e->bias ? e->bias + j : 0;
    int q = 0;
    for (; q + 4 <= n; q += 4) {
      v4f y = vload(c + q) + (b ? vload(b + q) : zero);
      vstore(c + q, e->gelu ? vgelu(y) : y);
    }
    for (; q < n; q++) {
      float y = c[q] + (b ? b[q] : 0.0f);
      c[q] = e->gelu ? vgelu(vsplat(y))[0] : y;
    }
  }
}

/* A gated residual's edge tile (mr × nr products t, row stride ldt) at (i, j): C += gate ⊙ t, as
 * micro_kernel_gated does for full tiles. */
static inline void gemm_epi_gated_edge(const float *t, int ldt, float *C, int ldc, int i, int j, int mr, int nr,
                                       const float *const *gates) {
  for (int r = 0; r < mr; r++)
    for (int q = 0; q < nr; q++) C[(size_t)(i + r) * ldc + j + q] += gates[r][j + q] * t[r * ldt + q];
}

#endif
