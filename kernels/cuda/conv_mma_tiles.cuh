// The block tiles of the mma.sync convolution (conv_mma.cu, whose header has the arithmetic behind the
// figures here and the model's picks at the Wan-VAE decoder's levels) and the host-side model that picks
// one per call. Plain C++ without CUDA, so that test/runtime/cuda-conv-mma-tiles.test.ts runs the model
// itself (cuda-emulator/conv-tiles.cpp) for GPUs that machine does not have.
//
// The model is the GEMM's (gemm_mma_tiles.cuh) over M = output voxels (the batch folded in) and N =
// Cout: per tile, b = blocks one SM holds (mma_gpu.cuh, with the registers ptxas gives the tile), waves
// = ⌈tiles / (SMs · b)⌉, and time = waves · b · the greater of a block's tensor and shared-memory cycles
// per 32-deep K step (kc_mma_wave_cycles). K drops out: every tile of a call runs the same K steps. The
// smallest time wins; a tie goes to the first tile of KC_CONV_MMA_TILES, which lists them by MMAs per K
// step and then by shared-memory bytes per MMA, since what the model leaves out (a block's fixed costs:
// the ring's fill, its voxels' decomposition, the epilogue) weighs more on more, smaller blocks. Where
// Cout ≤ 16 the narrow tile is the only one: any other would pad Cout to 96 or more, and the model,
// which counts no global-memory traffic, would not see what re-gathering the voxel rows for every column
// tile costs. tools/gpu-check-conv.py times every tile forced beside the pick.
#pragma once
#include <stdint.h>
#include "mma_gpu.cuh"

constexpr int KC_CONV_MMA_STAGES = 4;     // the cp.async ring's depth
constexpr int KC_CONV_MMA_ROW_BYTES = 64;  // a stage row: 32 16-bit values of K

// A block tile: warps_m × warps_n warps, each on mi m16 row fragments × nj n8 column fragments.
struct KcConvMmaTile {
  int warps_m, warps_n, mi, nj;
  constexpr int warps() const { return warps_m * warps_n; }
  constexpr int threads() const { return 32 * warps(); }
  constexpr int bm() const { return warps_m * mi * 16; }
  constexpr int bn() const { return warps_n * nj * 8; }
  constexpr int smem() const { return KC_CONV_MMA_STAGES * (bm() + bn()) * KC_CONV_MMA_ROW_BYTES; }
  // m16n8k16 MMAs per 32-deep K step
  constexpr int mmas() const { return bm() * bn() / 64; }
  // shared-memory bytes moved per K step: each warp's 2 k16 × (mi + nj / 2) ldmatrix.x4 of 512 B, and the
  // stage's cp.async writes
  constexpr int smem_traffic() const { return warps() * 2 * (mi + nj / 2) * 512 + (bm() + bn()) * KC_CONV_MMA_ROW_BYTES; }
};
// 128×192: 6 warps of 64×64; 256×96 and 128×96: 8 and 4 warps of 64×48 (a 96-wide tile takes Cout 96,
// 192 and 384 without padding); 256×16: 8 warps of 32×16, the narrow tile for the 3-channel output conv.
constexpr KcConvMmaTile KC_CONV_MMA_TILES[] = {{2, 3, 4, 8}, {4, 2, 4, 6}, {2, 2, 4, 6}, {8, 1, 2, 2}};
constexpr int KC_CONV_MMA_TILE_COUNT = sizeof KC_CONV_MMA_TILES / sizeof KC_CONV_MMA_TILES[0];
constexpr int KC_CONV_MMA_NARROW = KC_CONV_MMA_TILE_COUNT - 1;  // its index: the only tile for Cout ≤ 16
constexpr int KC_CONV_MMA_NARROW_COUT = 16;

// Registers per thread that ptxas gives conv_mma_kernel on each tile (KC_CONV_MMA_TILES' order) in the
// sm_80 build (which every GPU but sm_90 JIT-compiles from the compute_80 PTX) and the sm_90a one (H100,
// H200). test/runtime/cuda-ptx.test.ts holds them to the build's ptxas report.
struct KcConvMmaRegisters {
  int sm80, sm90a;
};
constexpr KcConvMmaRegisters KC_CONV_MMA_REGISTERS[KC_CONV_MMA_TILE_COUNT] = {{255, 255}, {224, 215}, {215, 211}, {93, 93}};

static inline int kc_conv_mma_blocks_per_sm(const KcMmaGpu& g, int tile) {
  const KcConvMmaTile& t = KC_CONV_MMA_TILES[tile];
  const KcConvMmaRegisters& r = KC_CONV_MMA_REGISTERS[tile];
  return kc_mma_sm_blocks(g, t.smem(), g.sm_major == 9 ? r.sm90a : r.sm80, t.threads());
}

// The model's time for a call of M voxels × Cout channels on a tile, in SM cycles per K step; INT64_MAX
// where the tile does not fit.
static inline int64_t kc_conv_mma_tile_cycles(const KcMmaGpu& g, int tile, int64_t M, int Cout) {
  const KcConvMmaTile& t = KC_CONV_MMA_TILES[tile];
  const int64_t tiles = (M + t.bm() - 1) / t.bm() * ((Cout + t.bn() - 1) / t.bn());
  return kc_mma_wave_cycles(g, kc_conv_mma_blocks_per_sm(g, tile), tiles, t.mmas(), t.smem_traffic());
}

// The tile (its index in KC_CONV_MMA_TILES) with the least model time; the first of equals.
static inline int kc_conv_mma_pick_tile(const KcMmaGpu& g, int64_t M, int Cout) {
  if (Cout <= KC_CONV_MMA_NARROW_COUT) return KC_CONV_MMA_NARROW;
  int best = 0;
  int64_t best_cycles = kc_conv_mma_tile_cycles(g, 0, M, Cout);
  for (int i = 1; i < KC_CONV_MMA_NARROW; i++) {
    const int64_t c = kc_conv_mma_tile_cycles(g, i, M, Cout);
    if (c < best_cycles) best = i, best_cycles = c;
  }
  return best;
}
