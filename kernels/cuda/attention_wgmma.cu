// Attention forward on Hopper (sm_90a) in the FlashAttention-3 manner: TMA loads, wgmma, warp
// specialization, register reallocation and ping-pong between two consumer warpgroups.
//
// Semantics and CPU reference: attention.cu's header (out = softmax(scale · q·kᵀ + bias, masked) · v,
// layouts [B, L, H, D]; the visible keys of query row i are the prefix [0, n(i))). Precision: the same
// promise as the mma.sync kernel (attention.cu's header): q, k, v in bf16, S and O accumulated in f32,
// the softmax in f32 in the exp2 domain, P rounded to bf16 for P·V.
//
// A persistent grid (one 384-thread block per multiprocessor) walks the work items (128-query tile,
// head, batch item). Where every item has the same key tiles and whole items would leave blocks idle in
// the last round long enough to matter, it does so by stream-K: each block takes an equal range of the
// list of all items' key tiles, and attention_combine.cu merges the parts of an item a range boundary
// cut (attention_split.cuh has the arithmetic; KINO_CUDA_ATTENTION_SPLIT=0 turns it off). Otherwise
// whole items round-robin, the longest first. Both roles below derive the same sequence on their own.
// Per item (or part of one):
//   producer (warpgroup 0, 24 registers): one thread loads the q tile (128 rows × D) with TMA, then
//     streams the item's key tiles — k and v, BKV keys each (128; 176 at D 128 on request, below) —
//     through a 2-stage shared-memory ring.
//     Each load completes on a "full" mbarrier; k and v have separate barriers so S = Q·Kᵀ can start
//     before v has landed. It refills a stage once both consumers arrived on its "empty" barrier.
//   consumers (warpgroups 1 and 2, 240 registers): each owns 64 query rows. For key tile t:
//     S = Q·Kᵀ   D/16 × wgmma m64nBKVk16, q and k K-major straight from the swizzled tiles;
//     softmax    scale, T5 bias and mask in the log2 domain (masked logits are -inf, so masked keys
//                contribute exactly 0), online row max and sum in f32, exp2 in place in S;
//     O += P·V   O rescaled, P packed to bf16 (the S accumulator layout is the A operand layout), then
//                BKV/16 × wgmma m64nDk16 with P from registers and v from shared memory as an N-major B
//                (the instruction transposes it), so v is never transposed by hand.
//   Ping-pong: the consumers take turns at the tensor cores through named barriers 1 and 2. In its
//   turn a consumer issues S(t) = Q·K(t)ᵀ and O += P(t-1)·V(t-1) back to back and hands the turn over;
//   its softmax of tile t then overlaps the other consumer's GEMMs. Inside a consumer the softmax of
//   tile t also overlaps its own P(t-1)·V(t-1): it starts once S(t) has retired (wgmma groups retire
//   in order) and touches neither O nor P, which are updated after the P·V retired.
// Tails and masks: the tensor maps end at Lq (q) and kv_len (k, v), so TMA zero-fills rows past them
// and keys of another batch item are never read. A block visits only key tiles below the largest n of
// its rows (block-causal items skip the future); the mask is evaluated only in tiles that cross a
// row's n, the bias in every tile when present. Rows with n = 0 come out as zeros.
//
// Why these sizes (D = 128): q 32 KiB + 2 stages × (k 32 KiB + v 32 KiB) = 160 KiB of shared memory;
// per consumer thread S and O take 64 f32 registers each and P 32, which fits the 240-register budget
// without spilling. D = 64 uses the same tiles with half the bytes. FlashAttention-3's forward tile for
// D = 128 without causal masks is 128 × 176 (BKV 176, KINO_CUDA_ATTENTION_BKV=176, D = 128 only; not
// chosen by auto until tools/gpu-check.sh has timed it): q 32 KiB + 2 × (k 44 KiB + v 44 KiB) = 208 KiB
// of the 227 KiB a block may have, S 88 registers, P 44, O 64, S = Q·Kᵀ one m64n176k16 per K step and
// P·V 11 K steps; 176 rows are 22 swizzle atoms of 8, so every box stays 1024-byte aligned.
#include "attention.cuh"
#include "hopper.cuh"

namespace {
constexpr int BQ = 128, STAGES = 2, THREADS = 384;  // BKV, the key tile: a template parameter (128 or 176)
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;  // (24 + 2 × 240) × 128 threads ≤ 64 Ki registers
constexpr int TURN_BAR = 1;        // consumer c issues its GEMMs when named barrier TURN_BAR + c opens
constexpr int CONSUMERS = 2 * 128;  // arrivals that release an "empty" barrier; threads per turn barrier

template <int D, int BKV>
struct Layout {
  static constexpr int BOXES = D / 64;                        // 64-element (128-byte) TMA boxes per row
  static constexpr int Q_BOX = BQ * 128, KV_BOX = BKV * 128;  // bytes of one box
  static constexpr int Q_BYTES = BOXES * Q_BOX, KV_BYTES = BOXES * KV_BOX;
  static constexpr int SMEM = Q_BYTES + 2 * STAGES * KV_BYTES + 1024;  // + slack to align to 1024 (swizzle atom)
  static_assert(BKV % 16 == 0 && BKV <= 256, "key tiles of whole K steps, at most one wgmma N (and one TMA box) wide");
  static_assert(KV_BOX % 1024 == 0, "each box starts on a 1024-byte swizzle atom");
  static_assert(SMEM <= 227 * 1024, "more shared memory than a Hopper block may have");
};

// A block's next piece of work: the key tiles [t0, t0 + ntiles) of one item (query tile, head, batch
// item), all of them unless the stream-K schedule cut the item (attention_split.cuh).
struct Work {
  int q0, h, b;
  int t0, ntiles;
  int slot;  // -1: the whole item, stored normalized into out; else the cut part's slot of `partial`
};

// The work of one block, in order; the producer and the consumers walk it alike. Under stream-K
// (split.tiles > 0) the block's range of the list of key tiles; otherwise whole items, round-robin.
struct Walk {
  int64_t pos, end;
};
__device__ __forceinline__ Walk walk_start(const KcAttentionSplit& split, int items) {
  if (split.tiles > 0) return {kc_split_begin(split, blockIdx.x), kc_split_begin(split, blockIdx.x + 1)};
  return {(int64_t)blockIdx.x, (int64_t)items};
}

template <int BKV>
__device__ __forceinline__ bool next_work(Walk& walk, Work& w, const KcAttentionSplit& split, int q_tiles, int H, int Lq,
                                          int kv_len, int block_size, int q_offset) {
  if (walk.pos >= walk.end) return false;
  if (split.tiles > 0) {
    const KcSplitPart part = kc_split_next(split, blockIdx.x, &walk.pos, walk.end);
    const KcAttentionItem it = kc_attention_item(part.item, q_tiles, H, BQ);
    w = {it.q0, it.h, it.b, part.t0, part.ntiles, part.slot};
  } else {
    const KcAttentionItem it = kc_attention_item(walk.pos, q_tiles, H, BQ);
    // At least one tile, even where no row sees a key (a negative q_offset): its keys are all masked, so
    // the rows come out as zeros, and the pipeline needs no special case.
    const int keys = kc_tile_keys(it.q0, BQ, Lq, kv_len, block_size, q_offset);
    w = {it.q0, it.h, it.b, 0, max(1, (keys + BKV - 1) / BKV), -1};
    walk.pos += gridDim.x;
  }
  return true;
}

template <int D, int BKV, typename TO>
__global__ void __launch_bounds__(THREADS, 1)
    attention_wgmma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                           const __grid_constant__ CUtensorMap map_v, TO* __restrict__ out,
                           float* __restrict__ partial, const float* __restrict__ bias, int Lq, int kv_len, int H,
                           int items, KcAttentionSplit split, float scale, int block_size, int q_offset) {
#ifdef KC_HAS_WGMMA
  using L = Layout<D, BKV>;
  __shared__ __align__(8) uint64_t bars[2 + 4 * STAGES];
  const uint32_t sq = (kc_smem_addr(kc_dynamic_smem()) + 1023) & ~1023u;
  auto sk = [&](int s) { return sq + L::Q_BYTES + s * L::KV_BYTES; };
  auto sv = [&](int s) { return sq + L::Q_BYTES + (STAGES + s) * L::KV_BYTES; };
  const uint32_t bar0 = kc_smem_addr(bars), q_full = bar0, q_empty = bar0 + 8;
  auto k_full = [&](int s) { return bar0 + 8 * (2 + s); };
  auto k_empty = [&](int s) { return bar0 + 8 * (2 + STAGES + s); };
  auto v_full = [&](int s) { return bar0 + 8 * (2 + 2 * STAGES + s); };
  auto v_empty = [&](int s) { return bar0 + 8 * (2 + 3 * STAGES + s); };
  const int q_tiles = (Lq + BQ - 1) / BQ;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    kc_mbar_init(q_full, 1);
    kc_mbar_init(q_empty, CONSUMERS);
    for (int s = 0; s < STAGES; s++) {
      kc_mbar_init(k_full(s), 1);
      kc_mbar_init(k_empty(s), CONSUMERS);
      kc_mbar_init(v_full(s), 1);
      kc_mbar_init(v_empty(s), CONSUMERS);
    }
    kc_fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    kc_setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      int tile = 0;  // key tiles loaded so far: tile % STAGES is the stage, (tile / STAGES) & 1 its phase
      int n = 0;     // pieces of work loaded so far: the phase of the q barriers
      Walk walk = walk_start(split, items);
      for (Work w; next_work<BKV>(walk, w, split, q_tiles, H, Lq, kv_len, block_size, q_offset); n++) {
        kc_mbar_wait(q_empty, (n & 1) ^ 1);  // both consumers finished their last S of the previous item
        kc_mbar_expect_tx(q_full, L::Q_BYTES);
        for (int x = 0; x < L::BOXES; x++) kc_tma_load_4d(sq + x * L::Q_BOX, &map_q, q_full, 64 * x, w.h, w.q0, w.b);
        for (int t = 0; t < w.ntiles; t++, tile++) {
          const int s = tile % STAGES;
          const uint32_t free_phase = ((tile / STAGES) & 1) ^ 1;  // the first round passes at once
          const int key = KC_PLANTED(34) ? t : w.t0 + t;  // planted: a cut part's keys from its item's start
          kc_mbar_wait(k_empty(s), free_phase);
          kc_mbar_expect_tx(k_full(s), L::KV_BYTES);
          for (int x = 0; x < L::BOXES; x++)
            kc_tma_load_4d(sk(s) + x * L::KV_BOX, &map_k, k_full(s), 64 * x, w.h, key * BKV, w.b);
          kc_mbar_wait(v_empty(s), free_phase);
          kc_mbar_expect_tx(v_full(s), L::KV_BYTES);
          for (int x = 0; x < L::BOXES; x++)
            kc_tma_load_4d(sv(s) + x * L::KV_BOX, &map_v, v_full(s), 64 * x, w.h, key * BKV, w.b);
        }
      }
    }
  } else {
    kc_setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const float sl2 = scale * KC_LOG2E;
    const uint32_t qa = sq + c * 64 * 128;  // this consumer's 64 rows inside each q box
    if (c == 1) kc_bar_arrive(TURN_BAR, CONSUMERS);  // consumer 0 takes the first turn
    int tile = 0, n = 0;
    Walk walk = walk_start(split, items);
    for (Work w; next_work<BKV>(walk, w, split, q_tiles, H, Lq, kv_len, block_size, q_offset); n++) {
      // The two query rows whose accumulators this thread holds (fragment rows lane/4 and lane/4 + 8).
      const int row0 = w.q0 + c * 64 + warp * 16 + lane / 4, row1 = row0 + 8;
      const int lim0 = row0 < Lq ? kc_visible_keys(row0, kv_len, block_size, q_offset) : 0;
      const int lim1 = row1 < Lq ? kc_visible_keys(row1, kv_len, block_size, q_offset) : 0;
      const int64_t bias0 = ((int64_t)w.h * Lq + row0) * kv_len, bias1 = bias0 + 8 * (int64_t)kv_len;
      float o[D / 2];
#pragma unroll
      for (int i = 0; i < D / 2; i++) o[i] = 0.f;
      float s[BKV / 2];
      uint32_t p[BKV / 16][4];                                   // P as bf16 pairs, the A operand of P·V
      float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // running max (log2 units), partial sums
      float alpha0, alpha1;                                      // rescale of o by the last softmax

      // S = Q·K(stage)ᵀ, overwriting s.
      auto issue_s = [&](int stage) {
        const uint32_t kb = sk(stage);
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
          kc_wgmma_ss<BKV>(s, kc_desc_kmajor_sw128(qa + (kk / 4) * L::Q_BOX + (kk % 4) * 32),
                           kc_desc_kmajor_sw128(kb + (kk / 4) * L::KV_BOX + (kk % 4) * 32), kk > 0);
        kc_wgmma_commit();
      };
      // O += P·V(stage); keys 16kk .. 16kk+15 are two 8-row groups of every v box.
      auto issue_pv = [&](int stage) {
        const uint32_t vb = sv(stage);
#pragma unroll
        for (int kk = 0; kk < BKV / 16; kk++)
          kc_wgmma_rs_tb<D>(o, p[kk], kc_desc_sw128(vb + kk * 16 * 128, KC_PLANTED(11) ? L::KV_BOX / 2 : L::KV_BOX));
        kc_wgmma_commit();
      };
      // The softmax of key tile t, in place: s becomes the unnormalized probabilities (f32); m, l and
      // the factors o must be rescaled by are updated. It touches neither o nor p, so it may run while
      // the previous P·V still does.
      auto softmax = [&](int t) {
        // Logits in the log2 domain are mul · s. Tiles with a bias or a row's end get the scale, bias
        // and mask applied in place (mul = 1); elsewhere the scale folds into the max and into one FMA
        // per exponent (a positive scale commutes with the max). Column of s[4j + e]:
        // t·BKV + 8j + 2(lane%4) + (e & 1); row: row0 for e < 2, row1 otherwise.
        float mul = sl2;
        if (bias != nullptr || t * BKV + BKV > min(lim0, lim1) || !(sl2 > 0.f)) {
          const int col0 = t * BKV + 2 * (lane % 4);
#pragma unroll
          for (int j = 0; j < BKV / 8; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int col = col0 + 8 * j + (e & 1), lim = e < 2 ? lim0 : lim1;
              float x = s[4 * j + e] * sl2;
              if (bias != nullptr && col < lim) x += bias[(e < 2 ? bias0 : bias1) + col] * KC_LOG2E;
              s[4 * j + e] = col < lim ? x : -INFINITY;
            }
            // 176-key tiles: the bias loads in two halves (a compiler barrier between them), or ptxas
            // issues all 88 at once and spills (S 88 + P 44 + O 64 registers live here).
            if constexpr (BKV > 128)
              if (j == BKV / 16 - 1) asm volatile("" ::: "memory");
          }
          mul = 1.f;
        }
        // Online softmax: the four threads of a quad share a row.
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < BKV / 8; j++) {
          mx0 = fmaxf(mx0, fmaxf(s[4 * j], s[4 * j + 1]));
          mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
        }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
          mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
          mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        const float new0 = fmaxf(m0, mx0 * mul), new1 = fmaxf(m1, mx1 * mul);
        // A row with nothing visible yet keeps max -inf; subtracting 0 instead keeps exp2 at 0, not NaN.
        const float base0 = new0 == -INFINITY ? 0.f : new0, base1 = new1 == -INFINITY ? 0.f : new1;
        alpha0 = kc_exp2_ftz(m0 - base0);
        alpha1 = kc_exp2_ftz(m1 - base1);
        m0 = new0;
        m1 = new1;
        l0 *= alpha0;
        l1 *= alpha1;
#pragma unroll
        for (int j = 0; j < BKV / 8; j++) {
          s[4 * j] = kc_exp2_ftz(fmaf(s[4 * j], mul, -base0));
          s[4 * j + 1] = kc_exp2_ftz(fmaf(s[4 * j + 1], mul, -base0));
          s[4 * j + 2] = kc_exp2_ftz(fmaf(s[4 * j + 2], mul, -base1));
          s[4 * j + 3] = kc_exp2_ftz(fmaf(s[4 * j + 3], mul, -base1));
          l0 += s[4 * j] + s[4 * j + 1];
          l1 += s[4 * j + 2] + s[4 * j + 3];
        }
      };
      // Once the P·V reading p has retired: o joins the new max, and s is packed into p. P for keys
      // 16kk .. 16kk+15 is the A fragment of K step kk (hopper.cuh, kc_wgmma_rs_tb).
      auto rescale_and_pack = [&] {
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
          o[4 * j] *= alpha0;
          o[4 * j + 1] *= alpha0;
          o[4 * j + 2] *= alpha1;
          o[4 * j + 3] *= alpha1;
        }
#pragma unroll
        for (int kk = 0; kk < BKV / 16; kk++)
#pragma unroll
          for (int i = 0; i < 4; i++) p[kk][i] = kc_pack_bf16(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
      };
      // This consumer's turn at the tensor cores: `issue` runs between the turn barriers.
      auto turn = [&](auto issue) {
        kc_bar_sync(TURN_BAR + c, CONSUMERS);
        kc_wgmma_fence();  // o was rescaled and p written by ordinary instructions since the last wgmma
        issue();
        kc_bar_arrive(TURN_BAR + (c ^ 1), CONSUMERS);
      };
      auto stage = [](int i) { return i % STAGES; };
      auto phase = [](int i) { return (uint32_t)(i / STAGES) & 1; };

      // Turn 0: S(0). Turns 1 .. ntiles-1: S(t), then P(t-1)·V(t-1); the softmax of tile t starts as
      // soon as S(t) has retired and runs while P(t-1)·V(t-1) still does. Turn ntiles: the last P·V.
      // Every wgmma sits on an unconditional path of its turn, so ptxas need not serialize them.
      kc_mbar_wait(q_full, n & 1);
      kc_mbar_wait(k_full(stage(tile)), phase(tile));
      turn([&] { issue_s(stage(tile)); });
      kc_wgmma_wait<0>();
      kc_fence_regs(s);
      kc_mbar_arrive(k_empty(stage(tile)));
      if (w.ntiles == 1) kc_mbar_arrive(q_empty);
      softmax(w.t0);
      rescale_and_pack();
      for (int t = 1; t < w.ntiles; t++) {
        const int cur = tile + t, prev = cur - 1;
        kc_mbar_wait(k_full(stage(cur)), phase(cur));
        kc_mbar_wait(v_full(stage(prev)), phase(prev));
        turn([&] {
          issue_s(stage(cur));
          issue_pv(stage(prev));
        });
        if (KC_PLANTED(12)) softmax(w.t0 + t);              // planted: S(t) read before it retired
        if (KC_PLANTED(13) && t == w.ntiles - 1) kc_mbar_arrive(q_empty);  // planted: q released while S(t) reads it
        kc_wgmma_wait<1>();  // groups retire in order: S(t) is done, P(t-1)·V(t-1) may still run
        kc_fence_regs(s);
        kc_mbar_arrive(k_empty(stage(cur)));
        if (!KC_PLANTED(13) && t == w.ntiles - 1) kc_mbar_arrive(q_empty);  // both consumers done with q: the next item's may land
        if (!KC_PLANTED(12)) softmax(w.t0 + t);
        kc_wgmma_wait<0>();
        kc_fence_regs(o);
        kc_fence_regs(s);  // the packing into p, too, stays behind the wait
        kc_mbar_arrive(v_empty(stage(prev)));
        rescale_and_pack();
      }
      const int last = tile + w.ntiles - 1;
      kc_mbar_wait(v_full(stage(last)), phase(last));
      turn([&] { issue_pv(stage(last)); });
      kc_wgmma_wait<0>();
      kc_fence_regs(o);
      kc_mbar_arrive(v_empty(stage(last)));
      tile += w.ntiles;

      // Epilogue (outside the turns, so it overlaps the other consumer's GEMMs).
#pragma unroll
      for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
      }
      if (w.slot >= 0) {
        // A cut part: the unnormalized rows and the softmax state, for attention_combine.cu.
        float* dst = partial + w.slot * kc_split_slot_floats(BQ, D);
        const int r0 = c * 64 + warp * 16 + lane / 4, r1 = r0 + 8;
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
          kc_put2(dst + r0 * D + 8 * j + 2 * (lane % 4), o[4 * j], o[4 * j + 1]);
          kc_put2(dst + r1 * D + 8 * j + 2 * (lane % 4), o[4 * j + 2], o[4 * j + 3]);
        }
        if (lane % 4 == 0) {
          dst[BQ * D + r0] = m0;
          dst[BQ * D + r1] = m1;
          dst[BQ * D + BQ + r0] = l0;
          dst[BQ * D + BQ + r1] = l1;
        }
        continue;
      }
      const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
      TO* dst0 = out + (((int64_t)w.b * Lq + row0) * H + w.h) * D + 2 * (lane % 4);
      TO* dst1 = dst0 + 8 * (int64_t)H * D;
      if (row0 < Lq) {
#pragma unroll
        for (int j = 0; j < D / 8; j++) kc_put2(dst0 + 8 * j, o[4 * j] * inv0, o[4 * j + 1] * inv0);
      }
      if (row1 < Lq) {
#pragma unroll
        for (int j = 0; j < D / 8; j++) kc_put2(dst1 + 8 * j, o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
      }
    }
    // Consumer 1 arrived once more on barrier TURN_BAR than consumer 0 waited on it: match it, so no
    // named barrier is left half-arrived when the block exits.
    if (c == 0) kc_bar_sync(TURN_BAR, CONSUMERS);
  }
#endif
}

// [B, L, H, D] bf16 as a 4-D tensor {D, H, L, B} that ends at `rows` tokens (of batch stride L): boxes
// of 64 features × 1 head × `box_rows` tokens (BQ for q, BKV for k and v).
int encode(KcContext* ctx, CUtensorMap* map, const void* ptr, int B, int L, int rows, int H, int D, int box_rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)H, (cuuint64_t)rows, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)H * D * 2, (cuuint64_t)L * H * D * 2};
  const cuuint32_t box[4] = {64, 1, (cuuint32_t)box_rows, 1};
  return kc_encode_tma(ctx, map, ptr, false, 4, dims, strides, box, "could not describe an attention operand");
}

template <int D, int BKV, typename TO>
int launch(KcContext* ctx, void* out, const void* q, const void* k, const void* v, const float* bias, int B,
           int Lq, int Lkv, int kv_len, int H, float scale, int block_size, int q_offset) {
  static bool configured = false;
  if (!configured) {
    KC_TRY(kc_check(ctx,
                    cudaFuncSetAttribute(attention_wgmma_kernel<D, BKV, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         Layout<D, BKV>::SMEM),
                    "cudaFuncSetAttribute(attention_wgmma_kernel)"));
    configured = true;
  }
  CUtensorMap map_q, map_k, map_v;
  KC_TRY(encode(ctx, &map_q, q, B, Lq, Lq, H, D, BQ));
  KC_TRY(encode(ctx, &map_k, k, B, Lkv, kv_len, H, D, BKV));
  KC_TRY(encode(ctx, &map_v, v, B, Lkv, kv_len, H, D, BKV));
  const int q_tiles = (Lq + BQ - 1) / BQ;
  const int64_t items = (int64_t)q_tiles * H * B;
  if (items > INT32_MAX) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "too many attention work items");
  // Stream-K where every query tile sees the same key tiles (n grows with the row, so the first and the
  // last tile bound the rest) and whole items would leave blocks idle (attention_split.cuh).
  const int tiles = (kc_tile_keys(0, BQ, Lq, kv_len, block_size, q_offset) + BKV - 1) / BKV;
  const bool uniform = tiles == (kc_tile_keys((q_tiles - 1) * BQ, BQ, Lq, kv_len, block_size, q_offset) + BKV - 1) / BKV;
  const int min_gain = kc_attention_split_min_gain(ctx->attention_split);
  const int split_grid = min_gain && uniform ? kc_attention_split_grid(items, tiles, ctx->sm_count, min_gain) : 0;
  KcAttentionSplit split{0, 0, 0};
  float* partial = nullptr;
  if (split_grid) {
    split = {items * tiles, tiles, split_grid};
    partial = (float*)kc_scratch(ctx, (size_t)2 * split_grid * kc_split_slot_floats(BQ, D) * sizeof(float));
    if (!partial) return kc_fail(ctx, KC_E_OOM, "kc_attention", "no memory for the stream-K partial results");
  }
  const unsigned grid = split_grid ? (unsigned)split_grid : (unsigned)(items < ctx->sm_count ? items : ctx->sm_count);
  auto kernel = attention_wgmma_kernel<D, BKV, TO>;
  constexpr int smem = Layout<D, BKV>::SMEM;
  KC_LAUNCH(kernel, grid, THREADS, smem, ctx->stream)(
      map_q, map_k, map_v, (TO*)out, partial, bias, Lq, kv_len, H, (int)items, split, scale, block_size, q_offset);
  int rc = kc_launched(ctx, "attention_wgmma_kernel");
  if (!rc && split_grid)
    rc = kc_attention_combine_launch(ctx, out, sizeof(TO) == 2, partial, split, BQ, q_tiles, Lq, H, D);
  if (partial) kc_scratch_release(ctx, partial);  // stream-ordered: the next user runs after the combine
  return rc;
}
}  // namespace

bool kc_attention_wgmma_supported(const KcContext* ctx, int D) {
  return ctx->sm_major == 9 && ctx->encode_tensor_map != nullptr && (D == 64 || D == 128);
}

int kc_attention_wgmma_launch(KcContext* ctx, void* out, bool out_bf16, const void* q, const void* k, const void* v,
                              const float* bias, int B, int Lq, int Lkv, int kv_len, int H, int D, float scale,
                              int block_size, int q_offset) {
  if (!kc_attention_wgmma_supported(ctx, D))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention",
                   "the wgmma attention kernel needs an sm_90 GPU, the driver's cuTensorMapEncodeTiled and D 64 or 128");
  // TMA with the 128-byte swizzle reads from 128-byte aligned global memory only (the CUDA programming
  // guide's TMA swizzle requirements; the driver's encoder itself checks for 16); the epilogue stores
  // pairs (float2, or two bf16).
  if (!kc_attention_wgmma_aligned(q, k, v) || ((uintptr_t)out & 7))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention",
                   "the wgmma attention kernel needs 128-byte aligned q, k, v and an 8-byte aligned out");
  // 176-key tiles only at D 128 and only where asked for (KINO_CUDA_ATTENTION_BKV=176); kc_last_kernel says which ran.
  const bool bkv176 = D == 128 && ctx->attention_bkv == 176;
  if (bkv176) ctx->last_attention = "wgmma-bkv176";
  if (out_bf16) {
    if (D == 64) return launch<64, 128, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
    if (bkv176) return launch<128, 176, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
    return launch<128, 128, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
  }
  if (D == 64) return launch<64, 128, float>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
  if (bkv176) return launch<128, 176, float>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
  return launch<128, 128, float>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset);
}
