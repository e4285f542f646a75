// Hopper GEMM (sm_90a): TMA bulk-tensor loads + wgmma, warp-specialized. Reference: gemm.cuh.
//
// One 384-thread block computes a 128×256 tile of out:
//   warpgroup 0 (producer) — one thread issues two TMA copies per K step (a: 128×64, w: 256×64) into
//     a 4-stage shared-memory ring, each stage guarded by a "full" mbarrier (TMA byte count) and an
//     "empty" mbarrier (consumers done reading). It gives most of its registers away (setmaxnreg).
//   warpgroups 1, 2 (consumers) — each owns 64 rows × 256 columns (128 f32 accumulators per thread)
//     and issues 4 wgmma m64n256k16 per K step straight from shared memory. One batch stays in flight:
//     a stage is released only after the next batch was issued and the previous one retired.
// The TMA copies use the 128-byte swizzle, and the wgmma descriptors name the same swizzle, so neither
// side has bank conflicts and no thread ever touches operand data. TMA zero-fills outside the matrix,
// which handles M = 4680 style tails and the K tail; the epilogue (gemm_epilogue.cuh: bias, GELU or a
// gated residual, on the accumulator registers) bounds-checks its stores.
// Tiles are visited in groups of 8 row-tiles so that neighbouring blocks share operands in L2
// (gemm_wgmma.cuh, with the epilogue and the operands' tensor maps, shared with the persistent kernel).
//
// Why 128×256: with 2 consumer warpgroups it is the largest tile whose accumulators fit the register
// file (2 × 128 × 128 floats), and the wider N halves how often each a tile is re-read from shared
// memory compared to 128×128. 4 stages × 48 KiB = 192 KiB of the 227 KiB available.
#include "gemm_wgmma.cuh"

namespace {
constexpr int BM = KC_GEMM_BM, BN = 256, BK = KC_GEMM_BK, STAGES = 4, THREADS = KC_GEMM_THREADS;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // bytes: 16 KiB, 32 KiB
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) + 1024;  // + slack to align to 1024 (swizzle atom)
static_assert(SMEM_BYTES <= 227 * 1024, "more shared memory than a Hopper block may have");

template <bool F16, typename TO>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                      TO* __restrict__ out, const KcGemmEpilogue epi, int M, int N, int K) {
#ifdef KC_HAS_WGMMA
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const auto ring = kc_gemm_ring<STAGES, A_STAGE, B_STAGE>(full_bar, empty_bar);

  const KcGemmTileAt tile = kc_gemm_tile_at(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN);
  const int tile_m = tile.m, tile_n = tile.n;
  const int ktiles = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  kc_gemm_ring_init(full_bar, empty_bar, 2 * 128);  // both consumers read every stage

  if (wg == 0) {
    kc_setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < ktiles; kt++) {
        int s = kt % STAGES;
        if (!KC_PLANTED(9)) kc_mbar_wait(ring.empty(s), ((kt / STAGES) & 1) ^ 1);  // first round passes: phase "-1" counts as done
        kc_mbar_expect_tx(ring.full(s), A_STAGE + B_STAGE);
        kc_tma_load_2d(ring.a(s), &map_a, ring.full(s), kt * BK, tile_m * BM);
        kc_tma_load_2d(ring.w(s), &map_w, ring.full(s), kt * BK, tile_n * BN);
      }
    }
  } else {
    kc_setmaxnreg_inc<232>();
    const int c = wg - 1;  // this consumer's rows: c*64 .. c*64+63 of the tile
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; kt++) {
      int s = kt % STAGES;
      kc_mbar_wait(ring.full(s), ((kt / STAGES) & 1) ^ (KC_PLANTED(8) ? 1 : 0));
      kc_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        // A K step of 16 bf16 is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
        uint64_t da = kc_desc_kmajor_sw128(ring.a(s) + c * 64 * 128 + kk * (KC_PLANTED(10) ? 16 : 32));
        uint64_t dw = kc_desc_kmajor_sw128(ring.w(s) + kk * 32);
        kc_wgmma_ss<BN, F16>(d, da, dw, 1);
      }
      kc_wgmma_commit();
      kc_wgmma_wait<1>();  // the batch issued for kt-1 has retired: its stage can be refilled
      kc_fence_regs(d);
      if (kt > 0) kc_mbar_arrive(ring.empty((kt - 1) % STAGES));
    }
    kc_wgmma_wait<0>();
    kc_fence_regs(d);

    kc_wgmma_gemm_store<BN>(d, out, epi, M, N, tile_m, tile_n, c);
  }
#endif
}

template <bool F16, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  return kc_gemm_wgmma_start<gemm_wgmma_kernel<F16, TO>, BN, F16, TO>(ctx, "gemm_wgmma_kernel", SMEM_BYTES, false, out, a, w,
                                                                      epi, M, N, K);
}
}  // namespace

// Needs: sm_90 with the driver's cuTensorMapEncodeTiled, K % 8 == 0 and N (and a split's part) even
// (16-byte TMA rows, pair stores), 128-byte aligned a and w (TMA with a swizzle), 8-byte aligned out.
// gemm.cu checks these and otherwise uses the mma.sync kernel.
int kc_gemm_wgmma_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                         const KcGemmEpilogue& epi, int M, int N, int K) {
  if (f16) return out_bf16 ? launch<true, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<true, float>(ctx, out, a, w, epi, M, N, K);
  return out_bf16 ? launch<false, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<false, float>(ctx, out, a, w, epi, M, N, K);
}
