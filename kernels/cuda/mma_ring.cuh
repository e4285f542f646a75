// The cp.async ring and the warps' multiply that the mma.sync GEMM (gemm_mma.cu) and convolution
// (conv_mma.cu) share: a row copier for K-major operand tiles, and the main loop that fills a ring of
// stages (mma_tile.cuh's layout) while each warp multiplies its piece of the block's tile with its
// fragments double-buffered across k steps. The kernels differ in how they fetch the A tile (the GEMM
// copies rows of a matrix, the convolution gathers im2col rows) and in their epilogues, not here.
//
// The ring: tile kt + STAGES − 1's copies are issued at the start of tile kt, into the slot of tile
// kt − 1; the wait and barrier for tile kt + 1 come before tile kt's last k step, so that step's MMAs
// are issued while tile kt + 1's first fragments load, and no warp waits for ldmatrix after a barrier.
// Each ldmatrix'd fragment feeds the warp's whole row or column of MMAs (gemm_mma.cu's header has the
// arithmetic of why that matters).
#pragma once
#include "mma_tile.cuh"

// One thread's share of copying a K-major operand's tile rows into a stage: rows tid/4 + j·(THREADS/4),
// 16-byte chunk tid % 4 of each (the same swizzle for all j: the rows are a multiple of 8 apart); where
// THREADS/4 does not divide the rows (128 rows by the 6-warp tile's 48-row passes) the last pass covers
// what is left. The first row's address and how many rows are left are worked out once, so a K step
// costs each copy an address add, a compare and a select.
template <int ROWS, int THREADS>
struct KcMmaRowCopier {
  static constexpr int STEP = THREADS / KC_MMA_CHUNKS, COPIES = (ROWS + STEP - 1) / STEP;
  static_assert(STEP % 8 == 0, "one swizzle phase for all of a thread's rows");
  const uint16_t* src;  // the first row's chunk at k = 0
  int rows_left;        // rows from the first one to the end of the matrix
  __device__ __forceinline__ KcMmaRowCopier(const uint16_t* m, int r0, int nrows, int K) {
    const int row = threadIdx.x / KC_MMA_CHUNKS;
    src = m + (int64_t)(r0 + row) * K + threadIdx.x % KC_MMA_CHUNKS * 8;
    rows_left = nrows - r0 - row;
  }
  // K columns [k0, k0 + BK) into the tile at shared address `tile`; rows past the end and columns past K
  // are zero-filled (cp.async with 0 source bytes, from the matrix's first row: nothing is read).
  __device__ __forceinline__ void copy(uint32_t tile, const uint16_t* m, int k0, int K) const {
    const int row = threadIdx.x / KC_MMA_CHUNKS, chunk = threadIdx.x % KC_MMA_CHUNKS, k = k0 + chunk * 8;
    const bool k_ok = KC_PLANTED(2) ? k <= K : k < K;
#pragma unroll
    for (int j = 0; j < COPIES; j++) {
      // planted 33: the last, partial pass left out (the tile's last ROWS % STEP rows never copied)
      if (ROWS % STEP != 0 && j == COPIES - 1 && (KC_PLANTED(33) || row + j * STEP >= ROWS)) break;
      const bool ok = k_ok && j * STEP < rows_left;
      kc_cp_async16(tile + kc_mma_swizzle(row + j * STEP, chunk), ok ? src + (int64_t)j * STEP * K + k0 : m, ok ? 16 : 0);
    }
  }
};

// The main loop over `ktiles` K tiles of KC_MMA_BK: load(kt, a, b) issues the cp.async copies of K tile
// kt's A and B rows into the stage at shared addresses a and b (it runs for kt = 0, 1, 2, … in turn,
// once each, so a loader may advance counters instead of dividing); each warp adds A rows [a_row0,
// a_row0 + 16·MI) · B rows [b_row0, b_row0 + 8·NJ)ᵀ into acc (m16n8 fragments). A stage is STAGE_BYTES
// from `base` on, its B rows A_BYTES in. Returns with every copy landed: the ring's shared memory is
// free for an epilogue once the block passes a barrier.
template <int STAGES, int STAGE_BYTES, int A_BYTES, int MI, int NJ, bool F16, typename Load>
__device__ __forceinline__ void kc_mma_ring(int ktiles, uint32_t base, int a_row0, int b_row0, int lane, Load&& load,
                                            float (&acc)[MI][NJ][4]) {
  constexpr int KSTEPS = KC_MMA_BK / 16;
  static_assert(KSTEPS % 2 == 0, "a tile's last k step loads into fragment set 0, which the next tile's first k step reads");
  auto stage_a = [&](int s) { return base + s * STAGE_BYTES; };
  auto stage_b = [&](int s) { return base + s * STAGE_BYTES + A_BYTES; };
  // Tile kt's copies into slot kt % STAGES (none past the last tile), one commit group either way so
  // that the wait counts stay uniform.
  auto load_tile = [&](int kt) {
    if (kt < ktiles) {
      const int s = kt % STAGES;
      load(kt, stage_a(s), stage_b(s));
    }
    kc_cp_async_commit();
  };

  uint32_t af[2][MI][4], bf[2][NJ][2];  // fragments of k step j in set j % 2
#pragma unroll
  for (int t = 0; t < STAGES - 1; t++) load_tile(t);
  kc_cp_async_wait<STAGES - 2>();
  __syncthreads();
  kc_mma_frags_a<MI>(stage_a(0), a_row0, 0, lane, af[0]);
  kc_mma_frags_b<NJ>(stage_b(0), b_row0, 0, lane, bf[0]);

  for (int kt = 0; kt < ktiles; kt++) {
    // Slot (kt − 1) % STAGES: every warp read its last fragments before the previous barrier.
    load_tile(kt + STAGES - 1);
    const int s = kt % STAGES;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; kk++) {
      const int next = (kk + 1) % 2;
      if (kk + 1 < KSTEPS) {
        // planted 38: the next set loaded from this k step again, not the next one
        const int k_next = KC_PLANTED(38) ? kk : kk + 1;
        kc_mma_frags_a<MI>(stage_a(s), a_row0, k_next, lane, af[next]);
        kc_mma_frags_b<NJ>(stage_b(s), b_row0, k_next, lane, bf[next]);
      } else {
        // Tile kt + 1 landed (its group and older ones done: STAGES − 2 newer ones may still fly) for every
        // thread; its first fragments load while this step multiplies. Past the last tile they read a
        // slot that holds nothing used.
        const int s1 = (kt + 1) % STAGES;
        auto first_frags = [&] {
          kc_mma_frags_a<MI>(stage_a(s1), a_row0, 0, lane, af[next]);
          kc_mma_frags_b<NJ>(stage_b(s1), b_row0, 0, lane, bf[next]);
        };
        if (KC_PLANTED(32)) first_frags();
        if (KC_PLANTED(31)) kc_cp_async_wait<STAGES - 1>();
        else kc_cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (!KC_PLANTED(32)) first_frags();
      }
      kc_mma_frags_mma<MI, NJ, F16>(acc, af[kk % 2], bf[kk % 2]);
    }
  }
  kc_cp_async_wait<0>();
}
