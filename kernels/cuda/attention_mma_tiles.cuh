// The query tilings of the mma.sync attention (attention_mma.cuh: blocks of 4 warps on 128 or 64 query
// rows; attention.cu's header has the arithmetic behind the figures here and the model's picks) and
// the host-side model that picks one per call. Plain C++ without CUDA, so that
// test/runtime/cuda-attention-mma-tiles.test.ts runs the model itself (cuda-emulator/attention-tiles.cpp)
// for GPUs that machine does not have.
//
// The model, per tiling and call:
//   b      = blocks of the tiling one SM holds (mma_gpu.cuh): its shared memory, its 128 threads and the
//            registers ptxas gives it (KC_ATTENTION_MMA_REGISTERS);
//   step   = SM cycles for one block to pass one 64-key tile: the greater of the tensor cores' time for
//            its MMAs and shared memory's for its traffic (the warps' ldmatrix reads of K and V, and of Q
//            where Q does not stay in registers; the cp.async writes of the K and V tiles) — the two
//            overlap, the slower one sets the pace, as in the GEMM's model (gemm_mma_tiles.cuh);
//   a block takes tiles · b · step, tiles being the key tiles it loads (up to the visible keys of its
//            last query row): the b blocks on an SM share its tensor cores and shared memory;
//   time   = when the last block ends, with the blocks handed out in launch order (attention_mma.cuh:
//            the query tiles of a head and batch item last-first, then the heads, then the batch items)
//            to SMs · b slots, each block to the first slot that frees, as the hardware's block scheduler
//            does. Where all blocks load the same key tiles (no mask; a mask under which every row of the
//            call sees the same keys, as in a streaming chunk) or all fit at once, that is a closed form:
//            ⌈blocks / slots⌉ waves · the most key tiles of a block · b · step. Otherwise (a
//            block-causal pass over several blocks of queries) the list schedule is simulated
//            (kc_attention_mma_uneven).
// The least time wins; a tie goes to 128 rows, since what the model leaves out weighs more on more,
// smaller blocks: each block's fixed costs (staging Q, the ring's fill: one memory latency, the output
// stores) and the barriers per key tile. It also leaves out the softmax's own instructions, which cost
// the same per query row on both tilings, and takes a block alone on an SM (in a last, part-filled wave)
// to run at the pace it keeps beside b − 1 others (its 4 warps hide less latency alone), which may
// undersell 128-row blocks in grids that leave most SMs one of them. tools/gpu-check-kernels.py bench
// times both tilings forced beside the pick.
#pragma once
#include <stdint.h>
#include <algorithm>
#include <functional>
#include <vector>
#include "attention_mask.cuh"
#include "mma_gpu.cuh"

constexpr int KC_ATTENTION_MMA_WARPS = 4;  // per block
constexpr int KC_ATTENTION_MMA_BKV = 64;   // keys per tile
constexpr int KC_ATTENTION_MMA_SLOTS = 3;  // K and V half-tiles in the cp.async ring

// A tiling by its 16-row slices per warp, mi: 2 for blocks of 128 query rows, 1 for 64.
static inline int kc_attention_mma_rows_of(int mi) { return KC_ATTENTION_MMA_WARPS * 16 * mi; }
// Q's fragments stay in registers beside O and S where they fit (mi · D / 4 of them); at D 128 with 32
// rows a warp re-reads them from shared memory for every key tile.
static inline bool kc_attention_mma_q_in_registers(int D, int mi) { return mi * D <= 128; }
// Dynamic shared memory: the block's Q tile and the ring of K/V half-tiles, bf16.
static inline int kc_attention_mma_smem(int D, int mi) {
  return (kc_attention_mma_rows_of(mi) + KC_ATTENTION_MMA_SLOTS * KC_ATTENTION_MMA_BKV) * D * 2;
}

// Registers per thread that ptxas gives attention_mma_kernel<D, mi, out> (both outputs alike) in the
// sm_80 build (which every GPU but sm_90 JIT-compiles from the compute_80 PTX) and the sm_90a one (H100,
// H200). test/runtime/cuda-ptx.test.ts holds them to the build's ptxas report.
struct KcAttentionMmaRegisters {
  int D, mi, sm80, sm90a;
};
constexpr KcAttentionMmaRegisters KC_ATTENTION_MMA_REGISTERS[] = {
    {128, 2, 255, 255}, {64, 2, 231, 249}, {32, 2, 190, 181}, {16, 2, 159, 160},
    {128, 1, 205, 207}, {64, 1, 149, 151}, {32, 1, 110, 112}, {16, 1, 106, 107},
};
// __launch_bounds__(128, 2) caps a thread at 255: the figure for a head size the table lacks.
static inline int kc_attention_mma_registers(int D, int mi, int sm_major) {
  for (const KcAttentionMmaRegisters& r : KC_ATTENTION_MMA_REGISTERS)
    if (r.D == D && r.mi == mi) return sm_major == 9 ? r.sm90a : r.sm80;
  return 255;
}

static inline int kc_attention_mma_blocks_per_sm(const KcMmaGpu& g, int D, int mi) {
  return kc_mma_sm_blocks(g, kc_attention_mma_smem(D, mi), kc_attention_mma_registers(D, mi, g.sm_major),
                          KC_ATTENTION_MMA_WARPS * 32);
}

// Per block and 64-key tile: m16n8k16 MMAs (each warp D · mi: S = Q·Kᵀ, D/16 k steps × 8 key fragments ×
// mi slices, and O += P·V, 4 key steps × D/8 fragments × mi) and shared-memory bytes (each warp's
// ldmatrix.x4 of 512 B: D/4 of K and D/4 of V, each feeding mi slices, plus mi · D/16 of Q where Q is
// re-read; the cp.async writes of a K and a V tile).
static inline int kc_attention_mma_tile_mmas(int D, int mi) { return KC_ATTENTION_MMA_WARPS * D * mi; }
static inline int kc_attention_mma_tile_smem_bytes(int D, int mi) {
  const int x4 = D / 2 + (kc_attention_mma_q_in_registers(D, mi) ? 0 : mi * D / 16);
  return KC_ATTENTION_MMA_WARPS * x4 * 512 + 2 * KC_ATTENTION_MMA_BKV * D * 2;
}
// SM cycles for one block to pass one key tile: the slower of the tensor cores and shared memory.
static inline int64_t kc_attention_mma_step(const KcMmaGpu& g, int D, int mi) {
  const int64_t tensor = (int64_t)kc_attention_mma_tile_mmas(D, mi) * kc_mma_tensor_cycles(g.sm_major, g.sm_minor);
  const int64_t smem = (kc_attention_mma_tile_smem_bytes(D, mi) + KC_MMA_SMEM_BYTES_PER_CYCLE - 1) / KC_MMA_SMEM_BYTES_PER_CYCLE;
  return tensor > smem ? tensor : smem;
}

// One kc_attention call as the model sees it (attention.cu: the arguments of the same names).
struct KcAttentionCall {
  int B, Lq, H, D, kv_len, block_size, q_offset;
};

// The key tiles the block of query tile x loads: those below the visible keys of its last row.
static inline int kc_attention_mma_key_tiles(const KcAttentionCall& c, int mi, int x) {
  const int rows = kc_attention_mma_rows_of(mi), last = std::min((x + 1) * rows, c.Lq) - 1;
  return (kc_visible_keys(last, c.kv_len, c.block_size, c.q_offset) + KC_ATTENTION_MMA_BKV - 1) / KC_ATTENTION_MMA_BKV;
}

// The model's time for the call on tiling mi, in SM cycles; INT64_MAX where the tiling does not fit.
// `last_first`: the kernel's launch order (query tiles longest first); false models them in index
// order, for comparison.
static inline int64_t kc_attention_mma_cycles(const KcMmaGpu& g, const KcAttentionCall& c, int mi, bool last_first = true) {
  const int b = kc_attention_mma_blocks_per_sm(g, c.D, mi);
  if (b == 0 || g.sms <= 0) return INT64_MAX;
  const int rows = kc_attention_mma_rows_of(mi), tiles_q = (c.Lq + rows - 1) / rows;
  const int64_t blocks = (int64_t)tiles_q * c.H * c.B, slots = (int64_t)g.sms * b;
  const int64_t pace = b * kc_attention_mma_step(g, c.D, mi);  // cycles per key tile of a block in a slot
  // Visible keys grow with the row, so the first and last query tiles bound every block's key tiles.
  const int fewest = kc_attention_mma_key_tiles(c, mi, 0), most = kc_attention_mma_key_tiles(c, mi, tiles_q - 1);
  if (fewest == most || blocks <= slots) return (blocks + slots - 1) / slots * most * pace;
  // The list schedule: the times the slots free, in a min-heap; each block, in launch order, goes to the
  // root (the slot that frees first), which then sinks to its place. The first `slots` blocks start at 0.
  std::vector<int64_t> took((size_t)tiles_q);  // per query tile in launch order: its block's cycles
  for (int i = 0; i < tiles_q; i++) took[i] = kc_attention_mma_key_tiles(c, mi, last_first ? tiles_q - 1 - i : i) * pace;
  std::vector<int64_t> free_at((size_t)slots);
  int q = 0;  // the query tile (its place in launch order) of the next block
  for (int64_t n = 0; n < slots; n++, q = q + 1 == tiles_q ? 0 : q + 1) free_at[n] = took[q];
  std::make_heap(free_at.begin(), free_at.end(), std::greater<int64_t>());
  int64_t* heap = free_at.data();
  for (int64_t n = slots; n < blocks; n++, q = q + 1 == tiles_q ? 0 : q + 1) {
    const int64_t t = heap[0] + took[q];
    int64_t i = 0;
    for (int64_t child = 1; child < slots; i = child, child = 2 * i + 1) {
      if (child + 1 < slots && heap[child + 1] < heap[child]) child++;
      if (heap[child] >= t) break;
      heap[i] = heap[child];
    }
    heap[i] = t;
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

// Whether the blocks of the call load different key tiles (a block-causal pass over several blocks of
// queries): where they do and outnumber the slots, the model simulates the list schedule, one heap
// operation per block (some 30 ns: about 0.2 ms for both tilings of Wan's block-causal clip of 18720
// tokens, 12 heads), so kc_attention keeps such picks (attention.cu). Visible keys grow with the row,
// so 64-row tiles even at both ends make 128-row ones even too.
static inline bool kc_attention_mma_uneven(const KcAttentionCall& c) {
  return c.Lq > 0 && kc_attention_mma_key_tiles(c, 1, 0) != kc_attention_mma_key_tiles(c, 1, (c.Lq - 1) / kc_attention_mma_rows_of(1));
}

// The query rows per block (128 or 64) with the least model time; 128 on a tie.
static inline int kc_attention_mma_pick_rows(const KcMmaGpu& g, const KcAttentionCall& c) {
  return kc_attention_mma_cycles(g, c, 1) < kc_attention_mma_cycles(g, c, 2) ? 64 : 128;
}

// Parts over the keys (attention_mma.cuh: grid.z runs over batch item × part; attention_combine.cu
// merges each item's parts). Where every block loads the same T key tiles, S parts make the grid S
// times the blocks, each of ⌈T / S⌉ tiles: ⌈S · blocks / slots⌉ waves of them instead of ⌈blocks /
// slots⌉ of T, which fills a part-empty last wave (Wan's streaming chunk on an A100: 444 blocks in 216
// slots, 3 waves of which the last holds 12 blocks). The fewest parts of the least time win, and only
// where they save at least a tenth, each part spanning at least KC_ATTENTION_MMA_MIN_PART_TILES key
// tiles: a part costs its slot (its rows in f32, written and read back by the combine) and the call a
// combine launch, which such a saving pays for many times. Uneven work (the list schedule's domain) is
// not split.
constexpr int KC_ATTENTION_MMA_MAX_PARTS = 4;
constexpr int KC_ATTENTION_MMA_MIN_PART_TILES = 16;  // 1024 keys

struct KcAttentionMmaParts {
  int parts;
  int64_t waves, tiles;  // of the pick: its waves and each part's key tiles (the largest part's)
};
static inline KcAttentionMmaParts kc_attention_mma_parts(const KcMmaGpu& g, const KcAttentionCall& c, int mi) {
  const int b = kc_attention_mma_blocks_per_sm(g, c.D, mi), rows = kc_attention_mma_rows_of(mi);
  const int tiles_q = (c.Lq + rows - 1) / rows, T = kc_attention_mma_key_tiles(c, mi, tiles_q - 1);
  const int64_t blocks = (int64_t)tiles_q * c.H * c.B, slots = (int64_t)g.sms * b;
  const KcAttentionMmaParts none{1, slots > 0 ? (blocks + slots - 1) / slots : 0, T};
  if (b == 0 || g.sms <= 0 || kc_attention_mma_uneven(c)) return none;
  const int64_t whole = none.waves * T;
  int64_t least = whole;
  KcAttentionMmaParts best = none;
  for (int S = 2; S <= KC_ATTENTION_MMA_MAX_PARTS && T / S >= KC_ATTENTION_MMA_MIN_PART_TILES; S++) {
    const int64_t waves = (S * blocks + slots - 1) / slots, tiles = (T + S - 1) / S;
    if (waves * tiles < least) least = waves * tiles, best = {S, waves, tiles};
  }
  return least * 10 <= whole * 9 ? best : none;
}
