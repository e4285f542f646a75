// The mma.sync tile machinery shared by the sm_80 tensor-core kernels (gemm_mma.cu, conv_mma.cu):
// how a pipeline stage lays out its K-major operand tiles in shared memory, and a warp's ldmatrix
// fragments and mma.sync m16n8k16 on them (the ring that fills the stages and runs the warps'
// multiply: mma_ring.cuh).
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

// One warp's operand fragments for one 16-deep k step (kk: 0 or 1 within the stage) of a stage:
// A rows [row0, row0 + 16·MI) as MI ldmatrix.x4 (m16k16 A fragments), B rows [row0, row0 + 8·NJ) as
// NJ / 2 ldmatrix.x4 (two k16n8 B fragments each; NJ must be even). The ring (mma_ring.cuh)
// double-buffers them across k steps.
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
