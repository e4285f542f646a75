// The mma.sync tile machinery shared by the sm_80 tensor-core kernels (gemm_mma.cu, conv_mma.cu):
// how a pipeline stage lays out its K-major operand tiles in shared memory, and a warp's ldmatrix
// fragments and mma.sync m16n8k16 on them; for the convolution also the row loader, the cp.async ring
// that fills the stages and a warp's whole multiply of a stage (the GEMM has its own ring, with
// fragments double-buffered across k steps, and its own row copier: gemm_mma.cu).
//
// A stage holds rows of KC_MMA_BK = 32 16-bit values (64 bytes, four 16-byte chunks) of A (output
// rows) and B (output columns), both K-major. ldmatrix reads one 16-byte chunk from 8 consecutive
// rows; unswizzled, rows r and r+2 would share banks. Storing chunk c of row r at c ^ ((r >> 1) & 3)
// puts the 8 rows of every ldmatrix phase on 8 distinct 16-byte bank groups, and keeps each 16-byte
// cp.async write whole.
#pragma once
#include "common.cuh"

constexpr int KC_MMA_BK = 32;
constexpr int KC_MMA_ROW_BYTES = KC_MMA_BK * 2;
constexpr int KC_MMA_CHUNKS = KC_MMA_BK / 8;  // 16-byte chunks per row

__device__ __forceinline__ uint32_t kc_mma_swizzle(int row, int chunk) {
  return (uint32_t)(row * KC_MMA_ROW_BYTES + ((chunk ^ ((row >> 1) & 3)) << 4));
}

// Stages rows [r0, r0+ROWS) × K columns [k0, k0+BK) of a K-major matrix with `nrows` rows into a
// swizzled tile; rows past the end and columns past K are zero-filled (cp.async with 0 source bytes).
// K must be a multiple of 8 (whole 16-byte chunks).
template <int ROWS, int THREADS>
__device__ __forceinline__ void kc_mma_load_rows(uint32_t dst, const uint16_t* src, int r0, int nrows, int k0, int K) {
  constexpr int CHUNKS = ROWS * KC_MMA_CHUNKS;
#pragma unroll
  for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
    int idx = threadIdx.x + i * THREADS;
    if (CHUNKS % THREADS != 0 && idx >= CHUNKS) break;
    int row = idx / KC_MMA_CHUNKS, chunk = idx % KC_MMA_CHUNKS;
    int r = r0 + row, k = k0 + chunk * 8;
    bool ok = r < nrows && k < K;
    const uint16_t* p = ok ? src + (int64_t)r * K + k : src;
    kc_cp_async16(dst + kc_mma_swizzle(row, chunk), p, ok ? 16 : 0);
  }
}

// The multistage ring: load_stage(kt) issues the cp.async copies of K tile kt into slot kt % STAGES
// (nothing when kt ≥ ktiles) and commits one group, so that the wait counts stay uniform;
// compute(slot) multiplies the tile in a slot. Three tiles are in flight while one is multiplied.
template <int STAGES, typename Load, typename Compute>
__device__ __forceinline__ void kc_mma_pipeline(int ktiles, Load&& load_stage, Compute&& compute) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) load_stage(s);
  for (int kt = 0; kt < ktiles; kt++) {
    if (KC_PLANTED(7)) kc_cp_async_wait<STAGES - 1>();
    else kc_cp_async_wait<STAGES - 2>();
    __syncthreads();                // tile kt landed for all threads; slot (kt-1)%STAGES is free again
    load_stage(kt + STAGES - 1);    // refill the slot consumed in the previous iteration
    compute(kt % STAGES);
  }
  kc_cp_async_wait<0>();
}

// One warp's operand fragments for one 16-deep k step (kk: 0 or 1 within the stage) of a stage:
// A rows [row0, row0 + 16·MI) as MI ldmatrix.x4 (m16k16 A fragments), B rows [row0, row0 + 8·NJ) as
// NJ / 2 ldmatrix.x4 (two k16n8 B fragments each; NJ must be even). gemm_mma.cu double-buffers these
// across k steps; kc_mma_warp_stage below loads and multiplies them in turn.
template <int MI>
__device__ __forceinline__ void kc_mma_frags_a(uint32_t sa, int row0, int kk, int lane, uint32_t (&af)[MI][4]) {
#pragma unroll
  for (int mi = 0; mi < MI; mi++) {
    int row = row0 + mi * 16 + (lane % 16), chunk = kk * 2 + lane / 16;
    kc_ldmatrix_x4(sa + kc_mma_swizzle(row, chunk), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
  }
}
template <int NJ>
__device__ __forceinline__ void kc_mma_frags_b(uint32_t sb, int row0, int kk, int lane, uint32_t (&bf)[NJ][2]) {
  static_assert(NJ % 2 == 0, "B fragments load in pairs");
#pragma unroll
  for (int p = 0; p < NJ / 2; p++) {
    int row = row0 + p * 16 + (lane % 8) + (lane / 16) * 8, chunk = kk * 2 + (KC_PLANTED(1) ? lane / 16 : (lane / 8) % 2);
    kc_ldmatrix_x4(sb + kc_mma_swizzle(row, chunk), bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1]);
  }
}
// acc[mi][nj] (m16n8 fragments) += af[mi] · bf[nj]: MI · NJ mma.sync m16n8k16.
template <int MI, int NJ, bool F16>
__device__ __forceinline__ void kc_mma_frags_mma(float (&acc)[MI][NJ][4], const uint32_t (&af)[MI][4], const uint32_t (&bf)[NJ][2]) {
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int nj = 0; nj < NJ; nj++) kc_mma_16816<F16>(acc[mi][nj], af[mi], bf[nj]);
}

// One warp's share of a stage: acc[mi][nj] (m16n8 fragments) += A rows [a_row0, a_row0 + 16·MI) ·
// B rows [b_row0, b_row0 + 8·NJ)ᵀ over the stage's 32 k. NJ must be even (ldmatrix.x4 loads two n8
// fragments of B at a time).
template <int MI, int NJ, bool F16>
__device__ __forceinline__ void kc_mma_warp_stage(uint32_t sa, uint32_t sb, int a_row0, int b_row0, int lane,
                                                  float (&acc)[MI][NJ][4]) {
#pragma unroll
  for (int kk = 0; kk < KC_MMA_BK / 16; kk++) {
    uint32_t af[MI][4], bf[NJ][2];
    kc_mma_frags_a<MI>(sa, a_row0, kk, lane, af);
    kc_mma_frags_b<NJ>(sb, b_row0, kk, lane, bf);
    kc_mma_frags_mma<MI, NJ, F16>(acc, af, bf);
  }
}
