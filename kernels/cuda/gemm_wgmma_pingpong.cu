// Hopper GEMM (sm_90a), warp-specialized "ping-pong": a persistent grid of 384-thread blocks, one per
// multiprocessor, whose two consumer warpgroups each own whole output tiles and take turns on the
// tensor cores, so that one stores a tile while the other multiplies the next. Reference: gemm.cuh;
// the kernels it is compared with: gemm_wgmma.cu (one block per 128×256 tile, both consumers on one
// tile) and gemm_wgmma_persistent.cu (the same on a persistent grid); operands, tile order and
// epilogue are theirs (gemm_wgmma.cuh).
//
// Block b walks tiles b, b + grid, b + 2·grid, … of the grouped order (gemm_wgmma.cuh); call them the
// block's tiles j = 0, 1, 2, …. Consumer 0 (warpgroup 1) takes the even j, consumer 1 (warpgroup 2)
// the odd j, each a whole 128 × 112 tile (two m64n112k16 per 16 of K: rows 0–63 and 64–127).
//   producer (warpgroup 0, one thread): two TMA copies per K step (a: 128 × 64, w: 112 × 64) into the
//     stage ring, tile after tile in j order, up to STAGES K steps ahead of whoever consumes them.
//   turns: named barrier TURN + c is consumer c's turn. Consumer c waits for it before the first
//     K step of its tile j (except j = 0), issues the tile's whole mainloop, then hands the turn to
//     the partner (bar.arrive on the partner's barrier, only if tile j + 1 exists: every wait meets
//     exactly one hand-over, and no barrier is left half-arrived at exit), and only then waits for
//     its last batch, releases its last stage and runs the epilogue (gemm_epilogue.cuh, from the
//     registers) — while the partner's mainloop runs. So the tensor cores see the block's mainloops
//     back to back in j order, and every epilogue but the block's last overlaps the next mainloop.
//     The turns are also what keeps the parity waits sound: a wait on parity p cannot tell the phase
//     it wants from the one two phases earlier, so nobody may wait for a stage's next use before its
//     current use was waited for. Within a turn the K steps go in order; a turn begins only once
//     every K step of the tiles before it was waited for (issued), by either consumer.
//   ring: a tile's K steps are steps j·ktiles … (j+1)·ktiles − 1 of the block's one sequence; the
//     stage is step % STAGES and its mbarriers' parity (step / STAGES) & 1. Each consumer keeps that
//     position (Ring) and, after its tile, skips the partner's ktiles steps, so the phase bookkeeping
//     runs on unbroken across tiles and consumers. A stage is read by one consumer only: its "empty"
//     mbarrier counts 128 arrivals, and each is released once the batch after it was issued and it
//     retired (the last of a tile once the last batch retired), as in the other two kernels.
//
// Tile shape and registers. setmaxnreg splits the multiprocessor's 64 Ki registers between the three
// warpgroups: 128 · (producer + 2 · consumer) ≤ 65536, so with the producer at 40 a consumer may have
// 232 (counts are multiples of 8). Here one warpgroup holds a whole tile: BM · BN / 128 f32
// accumulators per thread. The cooperative 128×256 tile would need 256 (more than a thread can
// address), 128×224 224, leaving 8 for the descriptors, barrier addresses, loop state and the
// epilogue's row pointers and bias pairs; so at most about 192. Among the tilings with BM 64 or 128,
// BN a multiple of 8, at most 192 accumulators and at least 64×128 in area, the ones whose wave bound
// (below) is 94.9 % or more at all four Wan shapes are 64×128, 128×64, 64×224 and 128×112. The last
// two have the largest area and so move the fewest bytes per multiply-add (0.0804 and 0.0826, against
// 0.0938 and 0.1094: below), and of those 128×112 bounds far better at 4096³ (98.5 % against 88.7 %).
// Its 112 accumulators are under half the budget: nothing spills (cuda-ptx.test.ts checks ptxas).
//
// Wave quantization: the block's mainloops run one after another, each the same length (same K), so
// with S multiprocessors the tensor cores are busy ⌈tiles / S⌉ mainloops long and the share spent on
// real outputs is at most M·N / (⌈tiles / S⌉ · S · BM · BN) (rows past M, columns past N waste). On an
// H200 (S = 132), at Wan2.1-1.3B's shapes (M = 4680: 37 row-tiles of 128, 74 of 64), tiles, tiles / 132
// → mainloops per busiest block, bound:
//   shape (M×N×K)               128×112 (this kernel)    64×224                   128×128
//   4096³                       1184  8.97→9   98.5%     1216  9.21→10  88.7%     1024  7.76→8   97.0%
//   QKV 4680×4608×1536          1554 11.77→12  95.0%     1554 11.77→12  95.0%     1332 10.09→11  90.7%
//   O / cross-Q 4680×1536×1536   518  3.92→4   95.0%      518  3.92→4   95.0%      444  3.36→4   83.1%
//   FFN up 4680×8960×1536       2960 22.42→23  96.3%     2960 22.42→23  96.3%     2590 19.62→20  96.9%
//   FFN down 4680×1536×8960      518  3.92→4   95.0%      518  3.92→4   95.0%      444  3.36→4   83.1%
// (the one-block-per-tile 128×256 kernel: 83.1 % at QKV, O and FFN down; gemm_wgmma_persistent.cu's
// table.)
// Bytes through shared memory per multiply-add, derived from the shapes: the TMA writes
// 2·(BM + BN) / (BM·BN) (128×112: 0.0335; 64×224: 0.0402; the cooperative 128×256: 0.0234) and an
// m64nNk16 from shared memory reads (64 + N)·32 / (1024·N) (N = 112: 0.0491; 224: 0.0402; 256:
// 0.0391), in all 0.0826, 0.0804 and 0.0625. Both ping-pong tilings move about a third more per
// multiply-add than the cooperative tile (half the tile area per warpgroup: the price of a whole tile
// in one warpgroup's registers); 128×112 moves the fewest bytes over L2 of the two. Whether hiding the
// epilogue gains more than that costs is the device check's to measure (tools/gpu-check-kernels.py
// pingpong); these are bounds and byte counts, not speeds.
//
// Shared memory: a stage is 16 KiB of a plus 14 KiB of w; as many as fit the 227 KiB a block may opt
// into: 7 stages, 210 KiB (+ 1 KiB to align the ring to the 1024-byte swizzle atom).
#include "gemm_wgmma.cuh"

namespace {
constexpr int BM = KC_GEMM_BM, BN = 112, BK = KC_GEMM_BK, THREADS = KC_GEMM_THREADS;
constexpr int SMEM_OPTIN = 227 * 1024;  // the most dynamic shared memory an sm_90 block may opt into
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // bytes: 16 KiB, 14 KiB (multiples of 1024)
constexpr int STAGES = (SMEM_OPTIN - 1024 - 256) / (A_STAGE + B_STAGE);  // 256 bytes: the mbarriers
constexpr int SMEM = STAGES * (A_STAGE + B_STAGE) + 1024;  // + slack to align to 1024
static_assert(B_STAGE % 1024 == 0 && STAGES >= 3, "stages stay 1024-byte aligned; a ring of at least 3");
constexpr int TURN = 1;  // named barrier TURN + c: consumer c's turn on the tensor cores (0 is __syncthreads)

// A K step's place in the stage ring: its stage and the parity of that stage's current use.
struct Ring {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void next() {
    if (++stage == STAGES) stage = 0, phase ^= 1;
  }
  __device__ __forceinline__ void skip(int steps) {
    const int to = stage + steps;
    stage = to % STAGES;
    phase ^= (uint32_t)(to / STAGES) & 1;
  }
};

template <bool F16, typename TO>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_pingpong_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                               TO* __restrict__ out, const KcGemmEpilogue epi, int M, int N, int K) {
#ifdef KC_HAS_WGMMA
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const auto ring = kc_gemm_ring<STAGES, A_STAGE, B_STAGE>(full_bar, empty_bar);

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int ktiles = (K + BK - 1) / BK;
  const int mine = (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1;  // this block's tiles (grid ≤ tiles)
  auto tile_at = [&](int j) { return kc_gemm_tile_at((int)blockIdx.x + j * (int)gridDim.x, tiles_m, tiles_n); };
  const int wg = threadIdx.x / 128;

  // every thread of the one consumer reading a stage; planted 19: both counted, as where they share a tile
  kc_gemm_ring_init(full_bar, empty_bar, KC_PLANTED(19) ? 2 * 128 : 128);

  if (wg == 0) {
    kc_setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      Ring r;
      for (int j = 0; j < mine; j++) {
        const KcGemmTileAt tile = tile_at(j);
        for (int kt = 0; kt < ktiles; kt++, r.next()) {
          kc_mbar_wait(ring.empty(r.stage), r.phase ^ 1);  // first round passes: phase "-1" counts as done
          kc_mbar_expect_tx(ring.full(r.stage), A_STAGE + B_STAGE);
          kc_tma_load_2d(ring.a(r.stage), &map_a, ring.full(r.stage), kt * BK, tile.m * BM);
          kc_tma_load_2d(ring.w(r.stage), &map_w, ring.full(r.stage), kt * BK, tile.n * BN);
        }
      }
    }
  } else {
    kc_setmaxnreg_inc<232>();
    const int c = wg - 1;  // takes the block's tiles j = c, c + 2, …
    float d[BN];           // rows 0–63 of the tile in d[0 .. BN/2), rows 64–127 in d[BN/2 .. BN)
#pragma unroll
    for (int i = 0; i < BN; i++) d[i] = 0.f;  // (each tile's first K step overwrites them)
    Ring r;
    // planted 18: each consumer counts only its own K steps, as if the ring were its alone
    if (!KC_PLANTED(18)) r.skip(c * ktiles);  // consumer 1 starts at the block's second tile
    for (int j = c; j < mine; j += 2) {
      const KcGemmTileAt tile = tile_at(j);
      // planted 17: no turns taken (neither waited for nor handed over)
      if (j > 0 && !KC_PLANTED(17)) kc_bar_sync(TURN + c, 256);  // the partner has issued tile j − 1
      // planted 20: the turn handed over after the block's last tile too, to a partner with none left
      const bool hand_over = j + 1 < mine || KC_PLANTED(20);
      int last = 0;  // the stage of the K step before
      for (int kt = 0; kt < ktiles; kt++, r.next()) {
        // planted 21: the turn handed over before the tile's last K step was issued
        if (KC_PLANTED(21) && kt == ktiles - 1 && hand_over) kc_bar_arrive(TURN + 1 - c, 256);
        kc_mbar_wait(ring.full(r.stage), r.phase);
        kc_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
          // A K step of 16 elements is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
          const uint64_t dw = kc_desc_kmajor_sw128(ring.w(r.stage) + kk * 32);
#pragma unroll
          for (int h = 0; h < 2; h++)
            kc_wgmma_ss<BN, F16>(d + h * (BN / 2), kc_desc_kmajor_sw128(ring.a(r.stage) + h * 64 * 128 + kk * 32), dw,
                                 kt > 0 || kk > 0);
        }
        kc_wgmma_commit();
        kc_wgmma_wait<1>();  // the batch of the step before has retired: its stage can be refilled
        kc_fence_regs(d);
        if (kt > 0) kc_mbar_arrive(ring.empty(last));
        last = r.stage;
      }
      // Every batch of this tile is issued: the partner's mainloop may queue behind the last one.
      if (hand_over && !KC_PLANTED(17) && !KC_PLANTED(21)) kc_bar_arrive(TURN + 1 - c, 256);
      kc_wgmma_wait<0>();
      kc_fence_regs(d);
      kc_mbar_arrive(ring.empty(last));  // the producer may refill it
      kc_wgmma_gemm_store<BN>(d, out, epi, M, N, tile.m, tile.n, 0);
      kc_wgmma_gemm_store<BN>(d + BN / 2, out, epi, M, N, tile.m, tile.n, 1);
      if (!KC_PLANTED(18)) r.skip(ktiles);  // the partner's tile j + 1
    }
  }
#endif
}

template <bool F16, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  return kc_gemm_wgmma_start<gemm_wgmma_pingpong_kernel<F16, TO>, BN, F16, TO>(ctx, "gemm_wgmma_pingpong_kernel", SMEM, true,
                                                                               out, a, w, epi, M, N, K);
}
}  // namespace

// Needs what kc_gemm_wgmma_launch needs (gemm.cu checks it): sm_90 with cuTensorMapEncodeTiled,
// K % 8 == 0, N and a split's part even, 128-byte aligned a and w, 8-byte aligned out.
int kc_gemm_wgmma_pingpong_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                                  const KcGemmEpilogue& epi, int M, int N, int K) {
  if (f16) return out_bf16 ? launch<true, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<true, float>(ctx, out, a, w, epi, M, N, K);
  return out_bf16 ? launch<false, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<false, float>(ctx, out, a, w, epi, M, N, K);
}
