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
// Tiles are visited in groups of 8 row-tiles so that neighbouring blocks share operands in L2.
//
// Why 128×256: with 2 consumer warpgroups it is the largest tile whose accumulators fit the register
// file (2 × 128 × 128 floats), and the wider N halves how often each a tile is re-read from shared
// memory compared to 128×128. 4 stages × 48 KiB = 192 KiB of the 227 KiB available.
#include "gemm.cuh"
#include "hopper.cuh"

namespace {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 384;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // bytes: 16 KiB, 32 KiB
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) + 1024;  // + slack to align to 1024 (swizzle atom)

template <bool F16, typename TO>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                      TO* __restrict__ out, const KcGemmEpilogue epi, int M, int N, int K) {
#ifdef KC_HAS_WGMMA
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const uint32_t base = (kc_smem_addr(kc_dynamic_smem()) + 1023) & ~1023u;
  auto stage_a = [&](int s) { return base + s * A_STAGE; };
  auto stage_w = [&](int s) { return base + STAGES * A_STAGE + s * B_STAGE; };
  auto full = [&](int s) { return kc_smem_addr(&full_bar[s]); };
  auto empty = [&](int s) { return kc_smem_addr(&empty_bar[s]); };

  constexpr int GROUP_M = 8;
  // Grouped tile order: GROUP_M row-tiles × all column-tiles, column-major inside the group.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n, group = blockIdx.x / per_group;
  const int first_m = group * GROUP_M, group_rows = min(tiles_m - first_m, GROUP_M);
  const int tile_m = first_m + (blockIdx.x % per_group) % group_rows;
  const int tile_n = (blockIdx.x % per_group) / group_rows;
  const int ktiles = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      kc_mbar_init(full(s), 1);
      kc_mbar_init(empty(s), 2 * 128);  // every consumer thread arrives once per use
    }
    kc_fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    kc_setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < ktiles; kt++) {
        int s = kt % STAGES;
        if (!KC_PLANTED(9)) kc_mbar_wait(empty(s), ((kt / STAGES) & 1) ^ 1);  // first round passes: phase "-1" counts as done
        kc_mbar_expect_tx(full(s), A_STAGE + B_STAGE);
        kc_tma_load_2d(stage_a(s), &map_a, full(s), kt * BK, tile_m * BM);
        kc_tma_load_2d(stage_w(s), &map_w, full(s), kt * BK, tile_n * BN);
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
      kc_mbar_wait(full(s), ((kt / STAGES) & 1) ^ (KC_PLANTED(8) ? 1 : 0));
      kc_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        // A K step of 16 bf16 is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
        uint64_t da = kc_desc_kmajor_sw128(stage_a(s) + c * 64 * 128 + kk * (KC_PLANTED(10) ? 16 : 32));
        uint64_t dw = kc_desc_kmajor_sw128(stage_w(s) + kk * 32);
        kc_wgmma_ss<BN, F16>(d, da, dw, 1);
      }
      kc_wgmma_commit();
      kc_wgmma_wait<1>();  // the batch issued for kt-1 has retired: its stage can be refilled
      kc_fence_regs(d);
      if (kt > 0) kc_mbar_arrive(empty((kt - 1) % STAGES));
    }
    kc_wgmma_wait<0>();
    kc_fence_regs(d);

    // Accumulator layout (per warp of the warpgroup: 16 rows): d[4j..4j+3] hold
    // (r, 8j + 2q), (r, 8j + 2q + 1), (r + 8, 8j + 2q), (r + 8, 8j + 2q + 1), r = lane/4, q = lane%4.
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    // The epilogue (gemm_epilogue.cuh) runs on the registers before the store; each thread's two rows
    // look up their gate rows once.
    const int row0 = tile_m * BM + c * 64 + warp * 16 + lane / 4;
    const int col0 = tile_n * BN + (lane % 4) * 2;
    const float* gate_rows[2] = {kc_epi_gate_row(epi, row0, N), kc_epi_gate_row(epi, row0 + 8, N)};
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
      int n = col0 + j * 8;
      if (n >= N) break;
      float b0 = kc_epi_bias(epi, n), b1 = n + 1 < N ? kc_epi_bias(epi, n + 1) : 0.f;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        int m = row0 + half * 8;
        if (m >= M) continue;
        TO* o = out + kc_epi_out(epi, m, n, N);
        float v0 = kc_epi_apply(epi, d[4 * j + 2 * half] + b0, m, n, N, gate_rows[half]);
        if (n + 1 < N) {  // N and a split's parts are even: a pair is whole, in one part, aligned
          float v1 = kc_epi_apply(epi, d[4 * j + 2 * half + 1] + b1, m, n + 1, N, gate_rows[half]);
          kc_put2(o, v0, v1);
        } else {
          kc_put(o, v0);
        }
      }
    }
  }
#endif
}

// A [rows, K] K-major 16-bit matrix as TMA sees it: boxes of box_rows × 64 elements.
int encode_map(KcContext* ctx, CUtensorMap* map, const void* ptr, bool f16, int rows, int K, int box_rows) {
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t box[2] = {BK, (cuuint32_t)box_rows};
  return kc_encode_tma(ctx, map, ptr, f16, 2, dims, strides, box, "could not describe a GEMM operand");
}

template <bool F16, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  static bool configured = false;
  auto kernel = gemm_wgmma_kernel<F16, TO>;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES),
                    "cudaFuncSetAttribute(gemm_wgmma_kernel)"));
    configured = true;
  }
  CUtensorMap map_a, map_w;
  KC_TRY(encode_map(ctx, &map_a, a, F16, M, K, BM));
  KC_TRY(encode_map(ctx, &map_w, w, F16, N, K, BN));
  unsigned blocks = (unsigned)(((M + BM - 1) / BM) * ((N + BN - 1) / BN));
  KC_LAUNCH(kernel, blocks, THREADS, SMEM_BYTES, ctx->stream)(map_a, map_w, (TO*)out, epi, M, N, K);
  return kc_launched(ctx, "gemm_wgmma_kernel");
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
