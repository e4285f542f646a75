/*
 * The blocked GEMM core shared by linear layers (gemm.c), convolutions (conv.c, as implicit GEMM)
 * and attention (attention.c uses the micro-kernel directly).
 *
 * C[M×N] (+)= A[M×K] · B[K×N], GotoBLAS-style: B is packed per (KC × NC) block into NR-wide panels
 * ([k][NR], contiguous), A per (MC × KC) block into MR-tall panels ([k][MR]), and the micro-kernel
 * keeps an MR×NR tile of C in registers while it streams both panels. Packing is what makes the
 * inner loop a pure load/splat/mul/add sequence, and it is also where the operand layouts differ:
 * Linear weights are [N, K] (each panel is a transpose), conv inputs are gathered im2col-style, and
 * bf16/f16 weights are widened. So the core takes two packing callbacks instead of matrices.
 */
#ifndef KINO_GEMM_H
#define KINO_GEMM_H

#include "common.h"
#include "gemm_epilogue.h"

/* Register tile: MR rows × NR columns = MR·NR/4 v128 accumulators. x86 engines give WebAssembly 16
 * vector registers; 4×8 keeps 8 accumulators, 2 B vectors and a splat live and measured best in
 * JavaScriptCore next to 3×12, 4×12, 5×8, 6×8 and 8×8 (the larger tiles spill). */
#define MR 4
#define NR 8
#define NV (NR / 4)
/* Cache blocking: a KC×NR B panel (8 KiB) stays in L1 across a whole MC block of A panels; the
 * MC×KC A block (96 KiB) and the KC×NC B block (512 KiB) stay in L2. */
#define KC 256
#define MC 96
#define NC 512

/* Scratch floats one thread needs for gemm_blocked. */
#define GEMM_SCRATCH_FLOATS ((size_t)KC * (NC + MC))

/* Fill dst with the A block rows [i0, i0+mc) × k [k0, k0+kc) as ceil(mc/MR) panels [kc][MR],
 * zero-padding rows past mc. */
typedef void (*pack_a_fn)(const void *ctx, float *dst, int i0, int mc, int k0, int kc);
/* Fill dst with the B block k [k0, k0+kc) × columns [j0, j0+nc) as ceil(nc/NR) panels [kc][NR],
 * zero-padding columns past nc. */
typedef void (*pack_b_fn)(const void *ctx, float *dst, int j0, int nc, int k0, int kc);

/* Packing source for a row-major [rows, ld] matrix of any weight dtype (dtype.h codes): linear
 * activations as A (f32), linear weights as B (gemm.c), conv weights as A (conv.c). */
typedef struct {
  const void *p;
  int dt, ld;
} rows_src;

/* pack_a_fn over a rows_src. */
void pack_a_rows(const void *ctx, float *dst, int i0, int mc, int k0, int kc);

/* C[i, j] for i in [i_lo, i_hi), j in [j_lo, j_hi): overwritten with the product (accumulate = 0) or
 * added to (accumulate = 1). C has row stride ldc. epi (null: none; only with accumulate = 0) is
 * applied as the tiles are stored (gemm_epilogue.h). */
void gemm_blocked(int i_lo, int i_hi, int j_lo, int j_hi, int K, pack_a_fn pack_a, const void *actx,
                  pack_b_fn pack_b, const void *bctx, float *C, int ldc, int accumulate, const gemm_epi *epi,
                  float *scratch);

/* Linear layers (gemm.c): out[M, N] = a[M, K] · w[N, K]ᵀ + bias, then the epilogue (gelu; residual
 * [M, N], which may be out, with gate [B, G, N] or null: gemm_epilogue.h). */
void kino_gemm(int tid, int nth, float *out, const float *a, const void *w, int wdt, const float *bias, int M, int N,
               int K, int gelu, const float *residual, const float *gate, int L, int G);

/* The block of C when K = 0: zeros, or with an epilogue, its value at y = bias. */
void gemm_empty_sum(int i_lo, int i_hi, int j_lo, int j_hi, float *C, int ldc, int accumulate, const gemm_epi *epi);

/*
 * The micro-kernel: the MR×NR tile at c (row stride ldc) = / += pa[kc][MR] · pb[kc][NR-wide rows
 * ldb apart]. ldb = NR for packed panels; attention passes V rows directly with ldb = H·D.
 */
/* One k of an MR x NR tile: acc += pa[0..MR) (column of A) x pb[0..NR) (row of B). */
static inline void tile_step(v4f acc[MR][NV], const float *pa, const float *pb) {
  v4f b[NV];
  KINO_UNROLL
  for (int v = 0; v < NV; v++) b[v] = vload(pb + 4 * v);
  KINO_UNROLL
  for (int r = 0; r < MR; r++) {
    v4f a = vsplat(pa[r]);
    KINO_UNROLL
    for (int v = 0; v < NV; v++) acc[r][v] += a * b[v];
  }
}

/* Adds (accumulate) or stores a finished MR x (4*NV) accumulator tile into C. */
static inline void store_tile(v4f acc[MR][NV], float *c, int ldc, int accumulate) {
  KINO_UNROLL
  for (int r = 0; r < MR; r++)
    KINO_UNROLL
    for (int v = 0; v < NV; v++) {
      if (accumulate) acc[r][v] += vload(c + r * ldc + 4 * v);
      vstore(c + r * ldc + 4 * v, acc[r][v]);
    }
}

/* This thread's block of an M x N output: columns split when there are enough of them (each thread
 * then packs only its own weights), rows otherwise. Returns 0 when the thread has nothing to do. */
static inline int gemm_thread_block(int tid, int nth, int M, int N, int *i_lo, int *i_hi, int *j_lo, int *j_hi) {
  *i_lo = 0, *i_hi = M, *j_lo = 0, *j_hi = N;
  if (N >= nth * 4 * NR) {
    range_t r = split_range((size_t)(N + NR - 1) / NR, tid, nth);
    *j_lo = (int)r.lo * NR, *j_hi = imin(N, (int)r.hi * NR);
  } else {
    range_t r = split_range((size_t)(M + MR - 1) / MR, tid, nth);
    *i_lo = (int)r.lo * MR, *i_hi = imin(M, (int)r.hi * MR);
  }
  return *i_lo < *i_hi && *j_lo < *j_hi;
}

static inline void micro_kernel(int kc, const float *pa, const float *pb, int ldb, float *c, int ldc, int accumulate) {
  v4f acc[MR][NV] = {{{0}}};
  for (int k = 0; k < kc; k++, pa += MR, pb += ldb) {
    tile_step(acc, pa, pb);
  }
  store_tile(acc, c, ldc, accumulate);
}

/* A later K block of a gated residual (gemm_epilogue.h): C += gate ⊙ products, from the registers, with
 * gates[r] the gate row of the tile's row r and j the tile's first column. */
static inline void micro_kernel_gated(int kc, const float *pa, const float *pb, int ldb, float *c, int ldc,
                                      const float *const *gates, int j) {
  v4f acc[MR][NV] = {{{0}}};
  for (int k = 0; k < kc; k++, pa += MR, pb += ldb) tile_step(acc, pa, pb);
  KINO_UNROLL
  for (int r = 0; r < MR; r++)
    KINO_UNROLL
    for (int v = 0; v < NV; v++) vstore(c + r * ldc + 4 * v, vload(c + r * ldc + 4 * v) + vload(gates[r] + j + 4 * v) * acc[r][v]);
}

/* Edge tiles (fewer than MR rows or NR columns): the full tile into a temporary, then the valid part. */
static inline void micro_kernel_edge(int kc, const float *pa, const float *pb, int ldb, float *c, int ldc, int mr, int nr,
                                     int accumulate) {
  float tile[MR * NR];
  micro_kernel(kc, pa, pb, ldb, tile, NR, 0);
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + tile[i * NR + j];
}

/*
 * One mc × nc block of C at rows i0, columns j0 for the K block [pc, pc + kc) of a K-long sum: A packed
 * in ap (MR-tall panels [kc][MR]), B panel p (NR wide, [kc][NR]) at bp + p·bstride. The first block
 * overwrites C unless accumulate. The epilogue (null: none) runs around the tiles, on the block while
 * it is in cache (gemm_epilogue.h): a residual's start before the first block, gate ⊙ products in every
 * block of a gated residual, bias and GELU after the last.
 */
static inline void gemm_macro(int i0, int mc, int j0, int nc, int pc, int kc, int K, const float *ap, const float *bp,
                              size_t bstride, float *C, int ldc, int accumulate, const gemm_epi *epi) {
  const int first = pc == 0 && !accumulate, last = pc + kc >= K;
  const int residual = epi && epi->residual, gated = residual && epi->gate;
  const float *gates[MC];
  if (residual && (first || gated)) gemm_epi_gate_rows(epi, i0, mc, ldc, gates);
  if (residual && first) gemm_epi_start(epi, C, ldc, i0, mc, j0, nc, gates);
  const int acc = !first || residual; /* onto earlier blocks, or onto residual + gate·bias */
  for (int jr = 0; jr < nc; jr += NR) {
    const int nr = imin(NR, nc - jr);
    const float *pb = bp + (size_t)(jr / NR) * bstride;
    for (int ir = 0; ir < mc; ir += MR) {
      const int mr = imin(MR, mc - ir), full = mr == MR && nr == NR;
      const float *pa = ap + (size_t)ir * kc;
      float *c = C + (size_t)(i0 + ir) * ldc + j0 + jr;
      if (gated && full) {
        micro_kernel_gated(kc, pa, pb, NR, c, ldc, gates + ir, j0 + jr);
      } else if (gated) {
        float tile[MR * NR];
        micro_kernel(kc, pa, pb, NR, tile, NR, 0);
        gemm_epi_gated_edge(tile, NR, C, ldc, i0 + ir, j0 + jr, mr, nr, gates + ir);
      } else if (full) {
        micro_kernel(kc, pa, pb, NR, c, ldc, acc);
      } else {
        micro_kernel_edge(kc, pa, pb, NR, c, ldc, mr, nr, acc);
      }
    }
  }
  if (last && !residual && gemm_epi_active(epi)) gemm_epi_finish(epi, C, ldc, i0, mc, j0, nc);
}

#endif
