// What the Hopper GEMM kernels share (gemm_wgmma.cu: one block per output tile;
// gemm_wgmma_persistent.cu and gemm_wgmma_pingpong.cu: one block per multiprocessor walking the tiles):
// the block shape, the grouped tile order, the stage ring's barriers, the epilogue from the wgmma
// accumulator registers, the TMA description of an operand and the launch. Reference and semantics:
// gemm.cuh; the epilogue's ops: gemm_epilogue.cuh.
#pragma once
#include "gemm.cuh"
#include "hopper.cuh"
#include <stdio.h>

// 128 rows × BN columns per tile, K steps of 64 (one 128-byte swizzled row of 16-bit elements),
// 3 warpgroups: a TMA producer and two consumers of 64 rows each.
constexpr int KC_GEMM_BM = 128, KC_GEMM_BK = 64, KC_GEMM_THREADS = 384;
// Tiles are visited in groups of 8 row-tiles × every column-tile, column-major inside a group, so that
// the blocks running at one time share their a rows and w columns in L2.
constexpr int KC_GEMM_GROUP_M = 8;

struct KcGemmTileAt {
  int m, n;  // row-tile and column-tile
};

__device__ __forceinline__ KcGemmTileAt kc_gemm_tile_at(int t, int tiles_m, int tiles_n) {
  const int per_group = KC_GEMM_GROUP_M * tiles_n, group = t / per_group;
  const int first_m = group * KC_GEMM_GROUP_M, group_rows = min(tiles_m - first_m, KC_GEMM_GROUP_M);
  return {first_m + (t % per_group) % group_rows, (t % per_group) / group_rows};
}

#ifdef KC_HAS_WGMMA
// The stage ring's shared memory as the wgmma GEMMs lay it out: STAGES A tiles, then STAGES W tiles,
// from the dynamic shared memory rounded up to 1024 bytes (the 128-byte swizzle's atom), and the
// addresses of its "full" and "empty" barriers.
template <int STAGES, int A_STAGE, int B_STAGE>
struct KcGemmRing {
  uint32_t base;
  uint64_t* full_bar;
  uint64_t* empty_bar;
  __device__ __forceinline__ uint32_t a(int s) const { return base + s * A_STAGE; }
  __device__ __forceinline__ uint32_t w(int s) const { return base + STAGES * A_STAGE + s * B_STAGE; }
  __device__ __forceinline__ uint32_t full(int s) const { return kc_smem_addr(&full_bar[s]); }
  __device__ __forceinline__ uint32_t empty(int s) const { return kc_smem_addr(&empty_bar[s]); }
  /** The first byte past the ring. */
  __device__ __forceinline__ uint32_t end() const { return base + STAGES * (A_STAGE + B_STAGE); }
};

template <int STAGES, int A_STAGE, int B_STAGE>
__device__ __forceinline__ KcGemmRing<STAGES, A_STAGE, B_STAGE> kc_gemm_ring(uint64_t (&full_bar)[STAGES], uint64_t (&empty_bar)[STAGES]) {
  return {(kc_smem_addr(kc_dynamic_smem()) + 1023) & ~1023u, full_bar, empty_bar};
}

// The stage ring's barriers, set up by thread 0 before the block starts: a stage is "full" after the
// producer's one arrival (with its expect_tx) and the TMA bytes, "empty" after `readers` consumer
// threads arrived, each once per use of the stage.
template <int STAGES>
__device__ __forceinline__ void kc_gemm_ring_init(uint64_t (&full_bar)[STAGES], uint64_t (&empty_bar)[STAGES], uint32_t readers) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      kc_mbar_init(kc_smem_addr(&full_bar[s]), 1);
      kc_mbar_init(kc_smem_addr(&empty_bar[s]), readers);
    }
    kc_fence_mbar_init();
  }
  __syncthreads();
}

// Stores consumer c's 64 × BN accumulators of tile (tile_m, tile_n) through the epilogue. Accumulator
// layout (per warp of the warpgroup: 16 rows): d[4j..4j+3] hold (r, 8j + 2q), (r, 8j + 2q + 1),
// (r + 8, 8j + 2q), (r + 8, 8j + 2q + 1), r = lane/4, q = lane%4. Each thread's two rows look up their
// gate rows once; rows past M and columns past N are not stored (TMA zero-filled them).
template <int BN, typename TO>
__device__ __forceinline__ void kc_wgmma_gemm_store(const float* d, TO* __restrict__ out, const KcGemmEpilogue& epi,
                                                    int M, int N, int tile_m, int tile_n, int c) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int row0 = tile_m * KC_GEMM_BM + c * 64 + warp * 16 + lane / 4;
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

// A [rows, K] K-major 16-bit matrix as TMA sees it: boxes of box_rows × 64 elements, zeros outside.
static inline int kc_gemm_encode_operand(KcContext* ctx, CUtensorMap* map, const void* ptr, bool f16, int rows, int K,
                                         int box_rows) {
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t box[2] = {KC_GEMM_BK, (cuuint32_t)box_rows};
  return kc_encode_tma(ctx, map, ptr, f16, 2, dims, strides, box, "could not describe a GEMM operand");
}

// The host side of every wgmma GEMM kernel (each takes map_a, map_w, out, epi, M, N, K, then `extra`,
// on KC_GEMM_THREADS threads): opts KERNEL into `smem` bytes of dynamic shared memory on its first call,
// describes a (128-row boxes) and w (BN-row boxes) for TMA, and starts one block per output tile or,
// `persistent`, min(tiles, multiprocessors) blocks that walk them. `name`: the kernel, in errors.
template <auto KERNEL, int BN, bool F16, typename TO, typename... Extra>
static int kc_gemm_wgmma_start(KcContext* ctx, const char* name, int smem, bool persistent, void* out, const void* a,
                               const void* w, const KcGemmEpilogue& epi, int M, int N, int K, const Extra&... extra) {
  static bool configured = false;
  if (!configured) {
    char what[96];
    snprintf(what, sizeof what, "cudaFuncSetAttribute(%s)", name);
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), what));
    configured = true;
  }
  CUtensorMap map_a, map_w;
  KC_TRY(kc_gemm_encode_operand(ctx, &map_a, a, F16, M, K, KC_GEMM_BM));
  KC_TRY(kc_gemm_encode_operand(ctx, &map_w, w, F16, N, K, BN));
  const int64_t tiles = (int64_t)((M + KC_GEMM_BM - 1) / KC_GEMM_BM) * ((N + BN - 1) / BN);
  if (tiles > INT32_MAX) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "too many GEMM output tiles");
  const unsigned grid = (unsigned)(persistent && tiles > ctx->sm_count ? ctx->sm_count : tiles);
  KC_LAUNCH(KERNEL, grid, KC_GEMM_THREADS, smem, ctx->stream)(map_a, map_w, (TO*)out, epi, M, N, K, extra...);
  return kc_launched(ctx, name);
}
