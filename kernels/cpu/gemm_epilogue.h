/*
 * What a linear layer does with each finished output y = Σ_k a·w + bias before it stores it
 * (Backend.gemm's GemmEpilogue): nothing, GELU (an FFN's up-projection), or a residual connection
 * out = residual + gate·y (Wan's gated residuals; gate absent = 1). Applied per register tile as the
 * blocked GEMM stores it, so the output is written once instead of once by the GEMM and once more by
 * each elementwise op after it.
 *
 * The blocked GEMM sums K in blocks of KC and keeps the partial sums in the output between blocks.
 * The residual may be the output itself (in place: x = x + gate·(h·w)), so it must be read before the
 * first partial sum overwrites it: the first block stores residual + gate·(t + bias) and every later
 * block adds gate·t. That is the same sum, distributed over the blocks (one rounding per block, within
 * the GEMM's promise). GELU is not linear and is applied once, on the last block. GELU and a residual
 * are never combined (the TypeScript side offers one or the other).
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

/* How the tiles of a K block are stored: straight from the registers (a plain block), through the
 * epilogue (the first block of a residual; the last of bias and GELU), or, for the later blocks of a
 * gated residual, from the registers times the gate (micro_kernel_gated in gemm.h): those are most
 * blocks of a long K, so they keep the plain block's speed. An ungated residual's later blocks are
 * plain accumulation. */
enum { EPI_NONE, EPI_TILE, EPI_GATED };

static inline int gemm_epi_block(const gemm_epi *e, int first, int last) {
  if (!gemm_epi_active(e)) return EPI_NONE;
  if (e->residual) return first ? EPI_TILE : e->gate ? EPI_GATED : EPI_NONE;
  return last ? EPI_TILE : EPI_NONE;
}

static inline const float *gemm_epi_gate_row(const gemm_epi *e, int m, int N) {
  if (!e->gate) return 0;
  return e->gate + ((size_t)(m / e->L) * e->G + (size_t)((m % e->L) / (e->L / e->G))) * N;
}

/* Four outputs: t the block's products, c what the output holds from earlier blocks. */
static inline v4f gemm_epi_v4(const gemm_epi *e, v4f t, v4f c, v4f b, v4f r, v4f g, int first, int last) {
  if (e->residual) return first ? r + g * (t + b) : c + g * t;
  v4f y = first ? t : c + t;
  if (!last) return y;
  y += b;
  return e->gelu ? vgelu(y) : y;
}

/* The gate rows of output rows [i, i + n) (null pointers without a gate): looked up once per block
 * of rows, not once per tile and K block (the lookup divides). */
static inline void gemm_epi_gate_rows(const gemm_epi *e, int i, int n, int N, const float **rows) {
  for (int r = 0; r < n; r++) rows[r] = gemm_epi_gate_row(e, i + r, N);
}

/*
 * Stores an mr × nr block of products t (row stride ldt) into rows i.. and columns j.. of C (row
 * stride ldc, the output of N = ldc columns), for a K block that is the first and/or last of the sum.
 * gates[r]: the gate row of output row i + r (gemm_epi_gate_rows).
 */
static inline void gemm_epi_store(const gemm_epi *e, const float *t, int ldt, float *C, int ldc, int i, int j, int mr,
                                  int nr, int first, int last, const float *const *gates) {
  const v4f one = vsplat(1.0f), zero = vsplat(0.0f);
  for (int r = 0; r < mr; r++) {
    float *c = C + (size_t)(i + r) * ldc + j;
    const float *res = e->residual ? e->residual + (size_t)(i + r) * ldc + j : 0;
    const float *g = gates[r] ? gates[r] + j : 0, *b = e->bias ? e->bias + j : 0;
    const float *tr = t + (size_t)r * ldt;
    int q = 0;
    for (; q + 4 <= nr; q += 4) {
      v4f cv = first ? zero : vload(c + q), rv = res && first ? vload(res + q) : zero;
      vstore(c + q, gemm_epi_v4(e, vload(tr + q), cv, b ? vload(b + q) : zero, rv, g ? vload(g + q) : one, first, last));
    }
    for (; q < nr; q++) {
      v4f cv = vsplat(first ? 0.0f : c[q]), rv = vsplat(res && first ? res[q] : 0.0f);
      c[q] = gemm_epi_v4(e, vsplat(tr[q]), cv, vsplat(b ? b[q] : 0.0f), rv, vsplat(g ? g[q] : 1.0f), first, last)[0];
    }
  }
}

/* K = 0: every output is the epilogue of y = bias. */
static inline void gemm_epi_empty_sum(const gemm_epi *e, float *C, int ldc, int i_lo, int i_hi, int j_lo, int j_hi) {
  const float zeros[8] = {0};
  for (int i = i_lo; i < i_hi; i++) {
    const float *gate = gemm_epi_gate_row(e, i, ldc);
    for (int j = j_lo; j < j_hi; j += 8) gemm_epi_store(e, zeros, 0, C, ldc, i, j, 1, imin(8, j_hi - j), 1, 1, &gate);
  }
}

#endif
