// Hopper GEMM (sm_90a) on a persistent grid: TMA loads + wgmma, warp-specialized, one 384-thread block
// per multiprocessor walking the output tiles. Reference: gemm.cuh; the one-block-per-tile kernel it
// is compared with: gemm_wgmma.cu (the same warp roles, operands and epilogue: gemm_wgmma.cuh).
//
// Grid: min(tiles, multiprocessors) blocks; block b computes tiles b, b + grid, b + 2·grid, … in the
// grouped order (gemm_wgmma.cuh: 8 row-tiles × every column-tile), so the tiles in flight at one time
// are neighbours in that order and share their operands in L2. Producer and consumers derive the same
// tile sequence on their own, and count K steps over all of the block's tiles (`step`): step % STAGES
// is the stage, (step / STAGES) & 1 the parity of its "full" and "empty" mbarriers, so the phase
// bookkeeping runs on unbroken from one tile into the next. Per tile:
//   producer (warpgroup 0, one thread): two TMA copies per K step (a: 128 × 64, w: BN × 64) into the
//     stage ring. It runs up to STAGES K steps ahead, across the end of a tile too: while the consumers
//     store tile i, the first STAGES K steps of tile i + 1 are already landing.
//   consumers (warpgroups 1, 2, 64 rows each): wgmma m64nBNk16 straight from the swizzled stages, the
//     first K step of a tile overwriting the accumulators (scale-d 0), one batch kept in flight, each
//     stage released once the batch after it was issued and it retired; the tile's last stage once
//     the last batch retired, before the epilogue (gemm_epilogue.cuh, from the registers).
// What the persistence buys over one block per tile: no block launch and pipeline fill per tile (the
// next tile's loads overlap this tile's epilogue), and one wave boundary per launch instead of one per
// block. The epilogue itself still keeps both consumers off the tensor cores for its duration; hiding
// that too takes consumers on different tiles (ping-pong), which needs 128-row tiles per consumer.
//
// Tile width per shape (pick_bn below). Every tile of a GEMM takes the same time (same K), so with S
// multiprocessors the launch lasts ⌈tiles / S⌉ tile-times and the share of the tensor cores' time
// spent on real outputs is at most M·N / (⌈tiles / S⌉ · S · 128 · BN) — the bound below (rows past M
// and columns past N in edge tiles count as waste). On an H200 (S = 132), at Wan2.1-1.3B's shapes
// (M = 4680 tokens: 37 row-tiles, the last holding 72 rows), tiles, tiles / 132 → waves, bound:
//   shape (M×N×K)               128×256              128×224              128×192              128×128
//   4096³                        512 3.88→4  97.0%    608 4.61→5  88.7%    704 5.33→6  86.2%   1024 7.76→8  97.0%
//   QKV 4680×4608×1536           666 5.05→6  83.1%    777 5.89→6  95.0%    888 6.73→7  95.0%   1332 10.09→11 90.7%
//   O / cross-Q 4680×1536×1536   222 1.68→2  83.1%    259 1.96→2  95.0%    296 2.24→3  73.9%    444 3.36→4  83.1%
//   FFN up 4680×8960×1536       1295 9.81→10 96.9%   1480 11.21→12 92.3%  1739 13.17→14 92.3%  2590 19.62→20 96.9%
//   FFN down 4680×1536×8960      222 1.68→2  83.1%    259 1.96→2  95.0%    296 2.24→3  73.9%    444 3.36→4  83.1%
// (256×128, 128 rows per consumer: 512/684/228/1330/228 tiles, bounds 97.0/83.1/83.1/88.1/83.1 %:
// never better than 128×256 here.) 128×256 loses a sixth of the machine at N = 1536 (1.68 waves) and
// at QKV (5.05 waves: 6 tiles in the last one); 128×224 turns both into ~2 and ~6 full waves (95.0 %),
// while at FFN up and 4096³ 128×256 stays best. Narrower tiles bound as high or slightly higher at
// some shapes (128×112: 98.5/95.0/95.0/96.3/95.0 %) but read more shared memory per multiply-add (each
// 64×16 slice of a serves 112 columns instead of 224), and a wgmma from shared memory nears the
// shared-memory bandwidth as N shrinks. So the candidates are the two wide tiles, two template
// instances (N = 1536 and QKV take 224, the wider N and 4096³ take 256), and pick_bn takes the higher
// bound for the GEMM at hand on this device's multiprocessor count, 256 on a tie. These are bounds on
// tail waste, not speeds: the device check (tools/gpu-check-kernels.py persistent) measures the kernel.
//
// Shared memory: a stage is 16 KiB of a plus BN × 128 bytes of w; as many stages as fit the 227 KiB a
// block may opt into: 4 × 48 KiB at BN = 256, 5 × 44 KiB at BN = 224. Registers: the producer gives
// its own away (40), each consumer thread holds BN / 2 f32 accumulators within its 232.
//
// The TMA-store epilogue (TMA_OUT; gemm path 6, gemm_epilogue_tma.cuh) stages each consumer's results
// in two 8 KiB buffers of its own, 32 KiB in all, taken from what the ring would have: at BN = 256 the
// four 48 KiB stages leave 34 KiB free anyway, so the staging costs nothing; at BN = 224 it costs the
// fifth 44 KiB stage (4 stages, 176 KiB). One buffer per consumer would not bring that stage back
// (220 + 16 KiB > 227), and two let a chunk's store read one while the next chunk is written into the
// other. Four stages still run the producer a whole 256-element K slice ahead (at K = 1536, 24 steps
// per tile), the depth the one-block-per-tile kernel has always run with; whether the store gained
// more than the stage cost is the device check's to measure (tools/gpu-check-kernels.py
// persistent-tma, beside the register epilogue).
#include "gemm_epilogue_tma.cuh"

namespace {
constexpr int BM = KC_GEMM_BM, BK = KC_GEMM_BK, THREADS = KC_GEMM_THREADS;
constexpr int SMEM_OPTIN = 227 * 1024;  // the most dynamic shared memory an sm_90 block may opt into

template <int BN, bool TMA_OUT>
struct Tile {
  static constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // bytes; multiples of 1024 (swizzle atom)
  static constexpr int STAGING = TMA_OUT ? KC_GEMM_STAGING_BYTES : 0;  // after the ring
  // 256 bytes: the mbarriers
  static constexpr int STAGES = (SMEM_OPTIN - 1024 - 256 - STAGING) / (A_STAGE + B_STAGE);
  static constexpr int SMEM = STAGES * (A_STAGE + B_STAGE) + STAGING + 1024;  // + slack to align to 1024
  static_assert(B_STAGE % 1024 == 0 && STAGES >= 3, "stages stay 1024-byte aligned; a ring of at least 3");
};

// TMA_OUT: the TMA-store epilogue (gemm_epilogue_tma.cuh) through `out_maps`, else the register one
// (gemm_wgmma.cuh) through `out`, out_maps unused.
template <int BN, bool F16, typename TO, bool TMA_OUT>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                                 TO* __restrict__ out, const KcGemmEpilogue epi, int M, int N, int K,
                                 const __grid_constant__ KcGemmOutMaps out_maps) {
#ifdef KC_HAS_WGMMA
  using T = Tile<BN, TMA_OUT>;
  constexpr int STAGES = T::STAGES;
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const auto ring = kc_gemm_ring<STAGES, T::A_STAGE, T::B_STAGE>(full_bar, empty_bar);

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int ktiles = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  kc_gemm_ring_init(full_bar, empty_bar, 2 * 128);  // both consumers read every stage

  if (wg == 0) {
    kc_setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int step = 0;  // K steps loaded so far, over all of this block's tiles
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const KcGemmTileAt tile = kc_gemm_tile_at(t, tiles_m, tiles_n);
        for (int kt = 0; kt < ktiles; kt++, step++) {
          const int s = step % STAGES;
          kc_mbar_wait(ring.empty(s), ((step / STAGES) & 1) ^ 1);  // first round passes: phase "-1" counts as done
          kc_mbar_expect_tx(ring.full(s), T::A_STAGE + T::B_STAGE);
          kc_tma_load_2d(ring.a(s), &map_a, ring.full(s), kt * BK, tile.m * BM);
          kc_tma_load_2d(ring.w(s), &map_w, ring.full(s), kt * BK, tile.n * BN);
        }
      }
    }
  } else {
    kc_setmaxnreg_inc<232>();
    const int c = wg - 1;  // this consumer's rows: c*64 .. c*64+63 of each tile
    // TMA_OUT: this consumer's two staging buffers after the ring, and the chunks it staged so far
    const uint32_t staging = ring.end() + c * 2 * KC_GEMM_STAGING_BUF;
    uint32_t chunks = 0;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0.f;  // (each tile's first K step overwrites them)
    int step = 0;  // K steps consumed so far, over all of this block's tiles: the producer's count
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const KcGemmTileAt tile = kc_gemm_tile_at(t, tiles_m, tiles_n);
      for (int kt = 0; kt < ktiles; kt++, step++) {
        const int s = step % STAGES;
        // planted 14: the parity restarts with each tile, as if the phases did too
        kc_mbar_wait(ring.full(s), ((KC_PLANTED(14) ? kt : step) / STAGES) & 1);
        kc_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
          // A K step of 16 elements is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
          uint64_t da = kc_desc_kmajor_sw128(ring.a(s) + c * 64 * 128 + kk * 32);
          uint64_t dw = kc_desc_kmajor_sw128(ring.w(s) + kk * 32);
          // planted 16: the previous tile's sums carried into this one
          kc_wgmma_ss<BN, F16>(d, da, dw, kt > 0 || kk > 0 || KC_PLANTED(16));
        }
        kc_wgmma_commit();
        kc_wgmma_wait<1>();  // the batch of the step before has retired: its stage can be refilled
        kc_fence_regs(d);
        if (kt > 0) kc_mbar_arrive(ring.empty((step - 1) % STAGES));
      }
      // planted 15: the tile's last stage handed back while its batch may still read it
      if (KC_PLANTED(15)) kc_mbar_arrive(ring.empty((step - 1) % STAGES));
      kc_wgmma_wait<0>();
      kc_fence_regs(d);
      if (!KC_PLANTED(15)) kc_mbar_arrive(ring.empty((step - 1) % STAGES));  // the producer may refill it with the next tile's
      if constexpr (TMA_OUT) kc_wgmma_gemm_store_tma<BN, TO>(d, out_maps, epi, M, N, tile.m, tile.n, c, staging, chunks);
      else kc_wgmma_gemm_store<BN>(d, out, epi, M, N, tile.m, tile.n, c);
    }
    // planted 25: the consumer's last stores left in flight at its exit
    if (TMA_OUT && threadIdx.x % 128 == 0 && !KC_PLANTED(25)) kc_bulk_wait<0>();  // its stores read the block's shared memory
  }
#endif
}

// The share of the tensor cores' time a BN-wide tiling can spend on real outputs (the header's bound).
double tail_bound(int M, int N, int BN, int sms) {
  const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN), waves = (tiles + sms - 1) / sms;
  return (double)M * N / ((double)waves * sms * BM * BN);
}

int pick_bn(int M, int N, int sms) { return tail_bound(M, N, 224, sms) > tail_bound(M, N, 256, sms) ? 224 : 256; }

template <int BN, bool F16, typename TO, bool TMA_OUT>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  KcGemmOutMaps maps;
  if constexpr (TMA_OUT) KC_TRY(kc_gemm_encode_out(ctx, &maps, out, sizeof(TO) == 2, M, N, epi.split, BN));
  else memset(&maps, 0, sizeof maps);
  return kc_gemm_wgmma_start<gemm_wgmma_persistent_kernel<BN, F16, TO, TMA_OUT>, BN, F16, TO>(
      ctx, TMA_OUT ? "gemm_wgmma_persistent_kernel (TMA store)" : "gemm_wgmma_persistent_kernel", Tile<BN, TMA_OUT>::SMEM, true,
      out, a, w, epi, M, N, K, maps);
}

template <int BN, bool TMA_OUT>
int launch_bn(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
              const KcGemmEpilogue& epi, int M, int N, int K) {
  if (f16)
    return out_bf16 ? launch<BN, true, __nv_bfloat16, TMA_OUT>(ctx, out, a, w, epi, M, N, K)
                    : launch<BN, true, float, TMA_OUT>(ctx, out, a, w, epi, M, N, K);
  return out_bf16 ? launch<BN, false, __nv_bfloat16, TMA_OUT>(ctx, out, a, w, epi, M, N, K)
                  : launch<BN, false, float, TMA_OUT>(ctx, out, a, w, epi, M, N, K);
}

template <bool TMA_OUT>
int launch_out(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16, const KcGemmEpilogue& epi,
               int M, int N, int K) {
  if (pick_bn(M, N, ctx->sm_count) == 224) return launch_bn<224, TMA_OUT>(ctx, out, out_bf16, a, w, f16, epi, M, N, K);
  return launch_bn<256, TMA_OUT>(ctx, out, out_bf16, a, w, f16, epi, M, N, K);
}
}  // namespace

// Whether TMA can store this output (else the register epilogue does): out 128-byte aligned (the
// 128-byte swizzle's requirement, as for the operands) and a row of S elements a multiple of 16 bytes
// (TMA's stride rule; S = split, or N).
bool kc_gemm_wgmma_tma_out_fits(const void* out, bool out_bf16, int N, int split) {
  const int64_t row_bytes = (int64_t)(split ? split : N) * (out_bf16 ? 2 : 4);
  return ((uintptr_t)out & 127) == 0 && row_bytes % 16 == 0;
}

// Needs what kc_gemm_wgmma_launch needs (gemm.cu checks it): sm_90 with cuTensorMapEncodeTiled,
// K % 8 == 0, N and a split's part even, 128-byte aligned a and w, 8-byte aligned out; `tma_out` (the
// TMA-store epilogue) also kc_gemm_wgmma_tma_out_fits.
int kc_gemm_wgmma_persistent_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                                    const KcGemmEpilogue& epi, int M, int N, int K, bool tma_out) {
  if (tma_out) return launch_out<true>(ctx, out, out_bf16, a, w, f16, epi, M, N, K);
  return launch_out<false>(ctx, out, out_bf16, a, w, f16, epi, M, N, K);
}
