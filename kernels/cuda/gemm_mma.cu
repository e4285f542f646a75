// Tensor-core GEMM with mma.sync (sm_80 and later): the path on Ampere/Ada, and on Hopper when the
// wgmma kernel is unavailable (KINO_CUDA_GEMM=mma forces it for comparison). Reference: gemm.cuh.
//
// Block tile 128×128, K step 32, 8 warps in a 2×4 grid (each warp 64×32 = 4×4 m16n8 fragments).
// Operands stream global → shared with 16-byte cp.async through a 4-stage ring, so three tiles are in
// flight while one is multiplied. Rows past M/N and the K tail are zero-filled by cp.async (src size 0),
// which is why any M and N work; K must be a multiple of 8 (16-byte rows), gemm.cu checks it.
//
// The stage layout (swizzled 64-byte rows), the cp.async ring and the warp's ldmatrix + mma step are
// mma_tile.cuh's, shared with the tensor-core convolution (conv_mma.cu).
#include "gemm.cuh"
#include "mma_tile.cuh"

namespace {
constexpr int BM = 128, BN = 128, BK = KC_MMA_BK, STAGES = 4, THREADS = 256;
constexpr int TILE_A_BYTES = BM * KC_MMA_ROW_BYTES, TILE_B_BYTES = BN * KC_MMA_ROW_BYTES;
constexpr int STAGE_BYTES = TILE_A_BYTES + TILE_B_BYTES;           // 16 KiB
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;                   // 64 KiB

template <bool F16, typename TO>
__global__ void __launch_bounds__(THREADS) gemm_mma_kernel(TO* __restrict__ out, const uint16_t* __restrict__ a,
                                                         const uint16_t* __restrict__ w,
                                                         const KcGemmEpilogue epi, int M, int N, int K, bool pairs) {
  const uint32_t base = kc_smem_addr(kc_dynamic_smem());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 4, wn = warp % 4;  // warp tile: rows wm*64, cols wn*32
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = (K + BK - 1) / BK;

  auto stage_a = [&](int s) { return base + s * STAGE_BYTES; };
  auto stage_b = [&](int s) { return base + s * STAGE_BYTES + TILE_A_BYTES; };
  float acc[4][4][4] = {};
  kc_mma_pipeline<STAGES>(
      ktiles,
      [&](int kt) {
        if (kt < ktiles) {
          int s = kt % STAGES;
          kc_mma_load_rows<BM, THREADS>(stage_a(s), a, m0, M, kt * BK, K);
          kc_mma_load_rows<BN, THREADS>(stage_b(s), w, n0, N, kt * BK, K);
        }
        kc_cp_async_commit();
      },
      [&](int s) { kc_mma_warp_stage<4, 4, F16>(stage_a(s), stage_b(s), wm * 64, wn * 32, lane, acc); });

  // Fragment layout of m16n8: c0,c1 at (row lane/4, cols 2·(lane%4), +1), c2,c3 eight rows below.
#pragma unroll
  for (int mi = 0; mi < 4; mi++) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      int m = m0 + wm * 64 + mi * 16 + lane / 4 + half * 8;
      if (KC_PLANTED(3) ? m > M : m >= M) continue;
      const float* gate_row = kc_epi_gate_row(epi, m, N);
#pragma unroll
      for (int nj = 0; nj < 4; nj++) {
        int n = n0 + wn * 32 + nj * 8 + (lane % 4) * 2;
        TO* o = out + kc_epi_out(epi, m, n, N);
        if (n + 1 < N) {
          float v0 = kc_epi_apply(epi, acc[mi][nj][half * 2] + kc_epi_bias(epi, n), m, n, N, gate_row);
          float v1 = kc_epi_apply(epi, acc[mi][nj][half * 2 + 1] + kc_epi_bias(epi, n + 1), m, n + 1, N, gate_row);
          if (pairs) kc_put2(o, v0, v1);
          else kc_put(o, v0), kc_put(out + kc_epi_out(epi, m, n + 1, N), v1);  // an odd split may put n + 1 in the next part
        } else if (n < N) {
          kc_put(o, kc_epi_apply(epi, acc[mi][nj][half * 2] + kc_epi_bias(epi, n), m, n, N, gate_row));
        }
      }
    }
  }
}

template <bool F16, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  static bool configured = false;
  auto kernel = gemm_mma_kernel<F16, TO>;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES),
                    "cudaFuncSetAttribute(gemm_mma_kernel)"));
    configured = true;
  }
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  KC_LAUNCH(kernel, grid, THREADS, SMEM_BYTES, ctx->stream)((TO*)out, (const uint16_t*)a, (const uint16_t*)w, epi, M, N,
                                                           K, N % 2 == 0 && epi.split % 2 == 0 && ((uintptr_t)out & 7) == 0);
  return kc_launched(ctx, "gemm_mma_kernel");
}
}  // namespace

int kc_gemm_mma_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                       const KcGemmEpilogue& epi, int M, int N, int K) {
  if (f16) return out_bf16 ? launch<true, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<true, float>(ctx, out, a, w, epi, M, N, K);
  return out_bf16 ? launch<false, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<false, float>(ctx, out, a, w, epi, M, N, K);
}
