// Tensor-core GEMM with mma.sync (sm_80 and later): the path on Ampere/Ada, and on Hopper when the
// wgmma kernel is unavailable (KINO_CUDA_GEMM=mma forces it for comparison). Reference: gemm.cuh.
//
// One kernel, three block tiles, every warp on a 64×64 piece (4×8 m16n8k16 fragments); K steps of 32
// through a 4-stage cp.async ring, stages laid out as mma_tile.cuh's swizzled 64-byte rows:
//   128×256, 8 warps (2×4), 96 KiB, one block per SM;
//   128×192, 6 warps (2×3), 80 KiB, one block per SM (two would need 2 · 192 threads · 240 registers);
//   128×128, 4 warps (2×2), 64 KiB, two blocks per SM on A100/H100 (164/228 KiB), one on sm_86/sm_89
//            (100 KiB an SM).
// Each call takes the tile that a model of its waves on this GPU predicts fastest (gemm_mma_tiles.cuh;
// below); KINO_CUDA_GEMM_MMA_TILE=128x128|128x192|128x256 forces one (tests, and tools/gpu-check.sh
// times each).
//
// Why 64×64 warps: mma.sync on A100-class parts is bound by shared memory unless each ldmatrix'd
// fragment feeds enough MMAs. Per SM and 32-deep K step, shared memory moving 128 B per cycle and the
// tensor cores taking 2 cycles per m16n8k16 on A100 (1 on H100, 4 or more on sm_86/sm_89):
//   a 128×128 tile of 8 warps at 64×32: 6 ldmatrix.x4 (3 KiB) per 16 MMAs; 8 warps · 2 k16 · 3 KiB =
//     48 KiB read + 16 KiB cp.async written = 512 cycles per 256 MMAs (512 tensor cycles on A100, 256 on
//     H100): shared memory the limit on both;
//   128×256, warps 64×64: 8 ldmatrix.x4 (4 KiB) per 32 MMAs; 64 KiB read + 24 KiB written = 704 cycles per
//     512 MMAs (1024 on A100: 0.69 of the tensor time; 512 on H100: 1.38, 1.45× the MMAs per cycle);
//   128×192, 6 warps: 48 + 20 KiB = 544 cycles per 384 MMAs (0.71 on A100; 1.42 on H100);
//   128×128, 4 warps: 32 + 16 KiB = 384 cycles per 256 MMAs (0.75 on A100; 1.5 on H100).
// 64×64 is as large as a warp tile gets: 128 accumulators plus two sets of fragments (64 registers,
// double-buffered across k steps) come to 228–240 registers, no spills (test/runtime/cuda-ptx.test.ts).
// 128-row tiles rather than 256: M = 4680 pads to 37·128 = 4736 rows (1.2 %) against 19·256 = 4864
// (3.9 %).
//
// Which tile: a grid runs in waves of SMs · (blocks per SM) blocks, and at the Wan shapes the last wave
// of the widest tile is often mostly empty. The model (gemm_mma_tiles.cuh) predicts each tile's time as
// waves · blocks per SM · a block's cycles per K step (the greater of its tensor and shared-memory
// cycles above), so a wave of 128×192 costs 3/4 of a 128×256 one where the tensor cores bound both
// (A100, sm_86/sm_89) and 544/704 on H100, and a wave of two 128×128 blocks as much as a 128×256 one on
// A100 (768/704 on H100). Waves of 128×256 / 128×192 / 128×128 at the Wan shapes (M = 4680) and 4096³,
// and the pick (ᵗ: a tie with 128×128, which goes to the bigger tile):
//                          A100, 108 SMs            H100/H200, 132 SMs      L40S, 142 SMs (1 block a SM)
//   4096³                  5 / 7 / 5   → 128×256ᵗ   4 / 6 / 4   → 128×256   4 / 5 / 8    → 128×192
//   QKV 4680×4608          7 / 9 / 7   → 128×192    6 / 7 / 6   → 128×192   5 / 7 / 10   → 128×256ᵗ
//   O, FFN down, N = 1536  3 / 3 / 3   → 128×192    2 / 3 / 2   → 128×256   2 / 3 / 4    → 128×256ᵗ
//   FFN up 4680×8960       12 / 17 / 12 → 128×256ᵗ  10 / 14 / 10 → 128×256  10 / 13 / 19 → 128×128
// On A100 the N = 1536 GEMMs (222 tiles of 128×256 in 2.06 waves: a third wave of 6 blocks) gain the
// most: 3 full waves of 128×192 at 3/4 the cost. These are predictions: an H200 (tools/gpu-check-kernels.py
// bench, every tile forced beside the pick) can check the 132-SM column only. BK stays 32 with 4 stages:
// 4 · (128 + 256) · 64 B = 96 KiB fits the 99 KiB a block may have on sm_86/sm_89 (RTX 30xx/40xx, L40S)
// as well as A100/H100, where BK 64 with 3 stages would take 144 KiB.
//
// The ring and the warps' double-buffered multiply are mma_ring.cuh's (conv_mma.cu runs the same): tile
// kt + 3's copies are issued at the start of tile kt, into the slot of tile kt − 1; the wait and barrier
// for tile kt + 1 come before tile kt's last k step, so that step's MMAs are issued while tile kt + 1's
// first fragments load, and no warp waits for ldmatrix after a barrier. Rows past M/N and the K tail are
// zero-filled by cp.async (src size 0), which is why any M and N work; K must be a multiple of 8
// (16-byte rows), gemm.cu checks it. The epilogue goes through shared memory, so that each warp stores
// whole rows (below).
#include "gemm.cuh"
#include "gemm_mma_tiles.cuh"
#include "mma_ring.cuh"

namespace {
constexpr int STAGES = KC_GEMM_MMA_STAGES, BK = KC_MMA_BK;
static_assert(KC_MMA_ROW_BYTES == KC_GEMM_MMA_ROW_BYTES, "the model's stage rows are the kernel's");

// Every warp multiplies a 64×64 piece of the block's tile: 4×8 m16n8 fragments. The tiles and their
// sizes are the model's (gemm_mma_tiles.cuh: KC_MMA_TILES).
constexpr int MI = 4, NJ = 8;
template <int WARPS_M, int WARPS_N>
struct Tile {
  static constexpr KcMmaTile SHAPE{WARPS_M, WARPS_N};
  static constexpr int THREADS = SHAPE.threads(), BM = SHAPE.bm(), BN = SHAPE.bn();
  static constexpr int A_BYTES = BM * KC_MMA_ROW_BYTES, STAGE_BYTES = (BM + BN) * KC_MMA_ROW_BYTES;
  static constexpr int SMEM_BYTES = SHAPE.smem();
  static_assert(BM == WARPS_M * MI * 16 && BN == WARPS_N * NJ * 8 && SMEM_BYTES == STAGES * STAGE_BYTES, "the model's tile is the kernel's");
};
static_assert(Tile<2, 4>::SMEM_BYTES == 96 * 1024 && Tile<2, 3>::SMEM_BYTES == 80 * 1024 && Tile<2, 2>::SMEM_BYTES == 64 * 1024,
              "the shared memory the header promises");

template <int WARPS_M, int WARPS_N, bool F16, typename TO>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N) gemm_mma_kernel(TO* __restrict__ out, const uint16_t* __restrict__ a,
                                                     const uint16_t* __restrict__ w, const KcGemmEpilogue epi, int M,
                                                     int N, int K, bool pairs) {
  using T = Tile<WARPS_M, WARPS_N>;
  const uint32_t base = kc_smem_addr(kc_dynamic_smem());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;  // warp tile: rows wm·16·MI, cols wn·8·NJ
  const int m0 = blockIdx.y * T::BM, n0 = blockIdx.x * T::BN;
  const int a_row0 = wm * MI * 16, b_row0 = wn * NJ * 8;
  const int ktiles = (K + BK - 1) / BK;

  const KcMmaRowCopier<T::BM, T::THREADS> copy_a(a, m0, M, K);
  const KcMmaRowCopier<T::BN, T::THREADS> copy_b(w, n0, N, K);
  float acc[MI][NJ][4] = {};
  kc_mma_ring<STAGES, T::STAGE_BYTES, T::A_BYTES, MI, NJ, F16>(ktiles, base, a_row0, b_row0, lane, [&](int kt, uint32_t sa, uint32_t sb) {
    copy_a.copy(sa, a, kt * BK, K);
    copy_b.copy(sb, w, kt * BK, K);
  }, acc);

  // The epilogue (gemm_epilogue.cuh), through the ring's shared memory, one row of the warp grid (64 rows
  // of the tile) at a time: its warps put their accumulators in a [64][BN + 8] f32 array (m16n8 fragment
  // layout: c0,c1 at row lane/4, cols 2·(lane%4), +1; c2,c3 eight rows below; the pad of 8 puts each
  // half-warp's float2 writes on 32 distinct banks), then every thread takes one column pair down the
  // rows: a warp stores 64 contiguous columns of a row, and a thread works out its columns' bias and
  // output positions once. The rows' gate rows (kc_epi_gate_row: divisions) are looked up once per row.
  constexpr int LD = T::BN + 8, PAIRS = T::BN / 2, ROWS_PER_PASS = T::THREADS / PAIRS, WROWS = MI * 16;
  static_assert(T::THREADS % PAIRS == 0 && WROWS * LD * 4 + WROWS * 8 <= T::SMEM_BYTES, "the staged rows fit the ring");
  float* staged = reinterpret_cast<float*>(kc_dynamic_smem());
  const float** gate_rows = reinterpret_cast<const float**>(staged + WROWS * LD);
  const int pair = threadIdx.x % PAIRS, n = n0 + 2 * pair;
  const bool has0 = n < N, has1 = n + 1 < N;
  const float bias0 = has0 ? kc_epi_bias(epi, n) : 0.f, bias1 = has1 ? kc_epi_bias(epi, n + 1) : 0.f;
  // out + row_stride · m + col: kc_epi_out with what depends on n alone taken out of the row loop
  const int64_t row_stride = epi.split ? epi.split : N;
  const int64_t col0 = epi.split ? (n / epi.split) * epi.part_stride + n % epi.split : n;
  const int64_t col1 = epi.split ? ((n + 1) / epi.split) * epi.part_stride + (n + 1) % epi.split : n + 1;
#pragma unroll 1
  for (int wr = 0; wr < WARPS_M; wr++) {
    __syncthreads();  // every warp is done with the ring (first pass) or with the previous pass's rows
    if (wm == wr) {
#pragma unroll
      for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int nj = 0; nj < NJ; nj++) {
          float* p = staged + (mi * 16 + lane / 4) * LD + b_row0 + nj * 8 + (lane % 4) * 2;
          *reinterpret_cast<float2*>(p) = make_float2(acc[mi][nj][0], acc[mi][nj][1]);
          *reinterpret_cast<float2*>(p + 8 * LD) = make_float2(acc[mi][nj][2], acc[mi][nj][3]);
        }
    }
    const int mbase = m0 + wr * WROWS;
    if (epi.gate && threadIdx.x < WROWS && mbase + (int)threadIdx.x < M)
      gate_rows[threadIdx.x] = kc_epi_gate_row(epi, mbase + threadIdx.x, N);
    __syncthreads();
#pragma unroll 2
    for (int r = threadIdx.x / PAIRS; r < WROWS; r += ROWS_PER_PASS) {
      const int m = mbase + r;
      if (KC_PLANTED(3) ? m > M : m >= M) break;  // rows only grow along the loop
      const float2 v = *reinterpret_cast<const float2*>(staged + r * LD + 2 * pair);
      const float* gate_row = epi.gate ? gate_rows[r] : nullptr;
      TO* o = out + row_stride * m;
      if (has1) {
        const float v0 = kc_epi_apply(epi, v.x + bias0, m, n, N, gate_row);
        const float v1 = kc_epi_apply(epi, v.y + bias1, m, n + 1, N, gate_row);
        if (pairs) kc_put2(o + col0, v0, v1);
        else kc_put(o + col0, v0), kc_put(o + col1, v1);  // an odd split may put n + 1 in the next part
      } else if (has0) {
        kc_put(o + col0, kc_epi_apply(epi, v.x + bias0, m, n, N, gate_row));
      }
    }
  }
}

template <int WARPS_M, int WARPS_N, bool F16, typename TO>
int launch_tile(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  using T = Tile<WARPS_M, WARPS_N>;
  static bool configured = false;
  auto kernel = gemm_mma_kernel<WARPS_M, WARPS_N, F16, TO>;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM_BYTES),
                    "cudaFuncSetAttribute(gemm_mma_kernel)"));
    configured = true;
  }
  dim3 grid((N + T::BN - 1) / T::BN, (M + T::BM - 1) / T::BM);
  KC_LAUNCH(kernel, grid, T::THREADS, T::SMEM_BYTES, ctx->stream)((TO*)out, (const uint16_t*)a, (const uint16_t*)w, epi, M, N,
                                                                 K, N % 2 == 0 && epi.split % 2 == 0 && ((uintptr_t)out & 7) == 0);
  return kc_launched(ctx, "gemm_mma_kernel");
}

// KINO_CUDA_GEMM_MMA_TILE's tile (ctx->gemm_mma_tile: its width), else the model's (gemm_mma_tiles.cuh).
int tile_for(const KcContext* ctx, int M, int N) {
  for (int i = 0; i < KC_MMA_TILE_COUNT; i++)
    if (KC_MMA_TILES[i].bn() == ctx->gemm_mma_tile) return i;
  return kc_mma_pick_tile(kc_mma_gpu(ctx), M, N);
}

template <bool F16, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  constexpr auto is = [](KcMmaTile t, int wm, int wn) { return t.warps_m == wm && t.warps_n == wn; };
  static_assert(KC_MMA_TILE_COUNT == 3 && is(KC_MMA_TILES[0], 2, 4) && is(KC_MMA_TILES[1], 2, 3) && is(KC_MMA_TILES[2], 2, 2),
                "an instance per tile of the model, in its order");
  switch (tile_for(ctx, M, N)) {
    case 0: return launch_tile<2, 4, F16, TO>(ctx, out, a, w, epi, M, N, K);
    case 1: return launch_tile<2, 3, F16, TO>(ctx, out, a, w, epi, M, N, K);
    default: return launch_tile<2, 2, F16, TO>(ctx, out, a, w, epi, M, N, K);
  }
}
}  // namespace

int kc_gemm_mma_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                       const KcGemmEpilogue& epi, int M, int N, int K) {
  if (f16) return out_bf16 ? launch<true, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<true, float>(ctx, out, a, w, epi, M, N, K);
  return out_bf16 ? launch<false, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K) : launch<false, float>(ctx, out, a, w, epi, M, N, K);
}

// The block tile's width (128, 192 or 256; 128 rows each) that an M × N call of the mma.sync GEMM runs
// on this context: for tools/gpu-check-kernels.py bench to print beside its timings of every tile.
KC_API int kc_gemm_mma_tile(KcContext* ctx, int M, int N) { return KC_MMA_TILES[tile_for(ctx, M, N)].bn(); }
