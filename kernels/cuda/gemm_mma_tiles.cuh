// The block tiles of the mma.sync GEMM (gemm_mma.cu, whose header has the arithmetic behind the
// figures here) and the host-side model that picks one per call. Plain C++ without CUDA, so that
// test/runtime/cuda-gemm-mma-tiles.test.ts runs the model itself (cuda-emulator/gemm-tiles.cpp) for
// GPUs that machine does not have.
//
// The model, per tile t and call (M × N; K drops out, every tile of a call runs the same K steps):
//   b     = blocks of t one SM holds: the fewest its shared memory (the tile's ring plus the 1 KiB the
//           runtime reserves per block, 0 over the per-block opt-in limit), registers and thread
//           slots allow (mma_gpu.cuh);
//   waves = ⌈tiles / (SMs · b)⌉;
//   step  = SM cycles for one 32-deep K step of one block: the greater of the tensor cores' time for
//           its MMAs (kc_mma_tensor_cycles each) and shared memory's for its traffic (ldmatrix reads
//           and cp.async writes, 128 B a cycle) — the two overlap, the slower one sets the pace;
//   time  = waves · b · step: the b blocks of a wave share the SM's tensor cores and shared memory.
// The smallest time wins; a tie goes to the bigger tile (KC_MMA_TILES' order), since what the model
// leaves out, each block's fixed costs (the ring's fill: one memory latency; the epilogue's pass through
// shared memory), weighs more on more, smaller blocks. It also takes a block alone in a part-filled
// wave of a two-per-SM tile to run at the pace it keeps beside a neighbour (its 4 warps hide less
// latency than 8), which may undersell 128×128 there. tools/gpu-check-kernels.py bench times every
// tile forced beside the pick.
#pragma once
#include <stdint.h>
#include "mma_gpu.cuh"

constexpr int KC_GEMM_MMA_STAGES = 4;     // the cp.async ring's depth
constexpr int KC_GEMM_MMA_ROW_BYTES = 64;  // a stage row: 32 16-bit values of K
// __launch_bounds__ lets ptxas give a thread up to 255 registers; the counts it takes (228–240: the
// build's ptxas report) round to the same blocks per SM, so the model assumes the cap.
constexpr int KC_GEMM_MMA_REGS = 255;

// A block tile: warps_m × warps_n warps, each on a 64×64 piece of the output.
struct KcMmaTile {
  int warps_m, warps_n;
  constexpr int warps() const { return warps_m * warps_n; }
  constexpr int threads() const { return 32 * warps(); }
  constexpr int bm() const { return warps_m * 64; }
  constexpr int bn() const { return warps_n * 64; }
  constexpr int smem() const { return KC_GEMM_MMA_STAGES * (bm() + bn()) * KC_GEMM_MMA_ROW_BYTES; }
  // m16n8k16 MMAs per 32-deep K step
  constexpr int mmas() const { return bm() * bn() / 64; }
  // shared-memory bytes moved per K step: each warp's 2 k16 × (4 + 4) ldmatrix.x4 of 512 B, and the
  // stage's cp.async writes
  constexpr int smem_traffic() const { return warps() * 8192 + (bm() + bn()) * KC_GEMM_MMA_ROW_BYTES; }
};
// Biggest first: the order ties are broken in.
constexpr KcMmaTile KC_MMA_TILES[] = {{2, 4}, {2, 3}, {2, 2}};  // 128×256, 128×192, 128×128
constexpr int KC_MMA_TILE_COUNT = sizeof KC_MMA_TILES / sizeof KC_MMA_TILES[0];

static inline int kc_mma_blocks_per_sm(const KcMmaGpu& g, KcMmaTile t) {
  return kc_mma_sm_blocks(g, t.smem(), KC_GEMM_MMA_REGS, t.threads());
}

// The model's time for an M × N call on tile t, in SM cycles per K step; INT64_MAX where t does not fit.
static inline int64_t kc_mma_tile_cycles(const KcMmaGpu& g, KcMmaTile t, int M, int N) {
  const int64_t tiles = (int64_t)((M + t.bm() - 1) / t.bm()) * ((N + t.bn() - 1) / t.bn());
  return kc_mma_wave_cycles(g, kc_mma_blocks_per_sm(g, t), tiles, t.mmas(), t.smem_traffic());
}

// The tile (its index in KC_MMA_TILES) with the least model time; the first (biggest) of equals.
static inline int kc_mma_pick_tile(const KcMmaGpu& g, int M, int N) {
  int best = 0;
  int64_t best_cycles = kc_mma_tile_cycles(g, KC_MMA_TILES[0], M, N);
  for (int i = 1; i < KC_MMA_TILE_COUNT; i++) {
    const int64_t c = kc_mma_tile_cycles(g, KC_MMA_TILES[i], M, N);
    if (c < best_cycles) best = i, best_cycles = c;
  }
  return best;
}
