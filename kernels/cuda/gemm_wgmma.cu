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
// which handles M = 4680 style tails and the K tail; the epilogue bounds-checks its stores.
// Tiles are visited in groups of 8 row-tiles so that neighbouring blocks share operands in L2.
//
// Why 128×256: with 2 consumer warpgroups it is the largest tile whose accumulators fit the register
// file (2 × 128 × 128 floats), and the wider N halves how often each a tile is re-read from shared
// memory compared to 128×128. 4 stages × 48 KiB = 192 KiB of the 227 KiB available.
#include "gemm.cuh"
#include <cuda.h>

namespace {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 384;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // bytes: 16 KiB, 32 KiB
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) + 1024;  // + slack to align to 1024 (swizzle atom)

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KC_HAS_WGMMA 1
#endif

#ifdef KC_HAS_WGMMA
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// 2-D tile copy global → shared; coordinates are (column, row) = (k, m or n), innermost first.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

// wgmma shared-memory matrix descriptor for a K-major tile whose 128-byte rows were written with the
// 128-byte swizzle: start address, stride between 8-row groups (1024 B) and swizzle mode 1 (128 B).
// The leading-byte offset is unused by this layout (set to 1 as the ISA suggests).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}

#define KC_ACC8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define KC_ACC32(i) KC_ACC8(i), KC_ACC8(i + 8), KC_ACC8(i + 16), KC_ACC8(i + 24)
#define KC_WGMMA_REGS                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "   \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, "   \
  "%65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "   \
  "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, " \
  "%106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "      \
  "%123, %124, %125, %126, %127}"

// d[64×256 fragment, 128 f32 per thread] += A(64×16, smem) · B(256×16, smem)ᵀ, both K-major. The
// scale-d predicate is true (accumulate): d starts zeroed, so no first-step special case is needed.
template <bool F16>
__device__ __forceinline__ void wgmma_m64n256k16(float* d, uint64_t desc_a, uint64_t desc_b) {
  if constexpr (F16) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " KC_WGMMA_REGS
                 ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : KC_ACC32(0), KC_ACC32(32), KC_ACC32(64), KC_ACC32(96)
                 : "l"(desc_a), "l"(desc_b));
  } else {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " KC_WGMMA_REGS
                 ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : KC_ACC32(0), KC_ACC32(32), KC_ACC32(64), KC_ACC32(96)
                 : "l"(desc_a), "l"(desc_b));
  }
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across a wgmma wait.
__device__ __forceinline__ void fence_acc(float* d) {
#pragma unroll
  for (int i = 0; i < 128; i++) asm volatile("" : "+f"(d[i])::"memory");
}
#endif  // KC_HAS_WGMMA

template <bool F16>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                      float* __restrict__ out, const float* __restrict__ bias, int M, int N, int K) {
#ifdef KC_HAS_WGMMA
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const uint32_t base = (kc_smem_addr(smem_raw) + 1023) & ~1023u;
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
      mbar_init(full(s), 1);
      mbar_init(empty(s), 2 * 128);  // every consumer thread arrives once per use
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < ktiles; kt++) {
        int s = kt % STAGES;
        mbar_wait(empty(s), ((kt / STAGES) & 1) ^ 1);  // first round passes: phase "-1" counts as done
        mbar_expect_tx(full(s), A_STAGE + B_STAGE);
        tma_load(stage_a(s), &map_a, full(s), kt * BK, tile_m * BM);
        tma_load(stage_w(s), &map_w, full(s), kt * BK, tile_n * BN);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;  // this consumer's rows: c*64 .. c*64+63 of the tile
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; kt++) {
      int s = kt % STAGES;
      mbar_wait(full(s), (kt / STAGES) & 1);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        // A K step of 16 bf16 is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
        uint64_t da = smem_desc(stage_a(s) + c * 64 * 128 + kk * 32);
        uint64_t dw = smem_desc(stage_w(s) + kk * 32);
        wgmma_m64n256k16<F16>(d, da, dw);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the batch issued for kt-1 has retired: its stage can be refilled
      fence_acc(d);
      if (kt > 0) mbar_arrive(empty((kt - 1) % STAGES));
    }
    wgmma_wait<0>();
    fence_acc(d);

    // Accumulator layout (per warp of the warpgroup: 16 rows): d[4j..4j+3] hold
    // (r, 8j + 2q), (r, 8j + 2q + 1), (r + 8, 8j + 2q), (r + 8, 8j + 2q + 1), r = lane/4, q = lane%4.
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int row0 = tile_m * BM + c * 64 + warp * 16 + lane / 4;
    const int col0 = tile_n * BN + (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
      int n = col0 + j * 8;
      if (n >= N) break;
      float b0 = bias ? bias[n] : 0.f, b1 = (bias && n + 1 < N) ? bias[n + 1] : 0.f;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        int m = row0 + half * 8;
        if (m >= M) continue;
        float* o = out + (int64_t)m * N + n;
        float v0 = d[4 * j + 2 * half] + b0, v1 = d[4 * j + 2 * half + 1] + b1;
        if (n + 1 < N) *reinterpret_cast<float2*>(o) = make_float2(v0, v1);  // N is even (K-major TMA rows)
        else o[0] = v0;
      }
    }
  }
#endif
}

typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// A [rows, K] K-major 16-bit matrix as TMA sees it: boxes of box_rows × 64 elements, 128-byte swizzle.
int encode_map(KcContext* ctx, CUtensorMap* map, const void* ptr, bool f16, int rows, int K, int box_rows) {
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  cuuint32_t box[2] = {BK, (cuuint32_t)box_rows};
  cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = ((EncodeTiledFn)ctx->encode_tensor_map)(
      map, f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims,
      strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return kc_fail(ctx, (int)r, "cuTensorMapEncodeTiled", "could not describe a GEMM operand");
  return 0;
}
}  // namespace

// Needs: sm_90 with the driver's cuTensorMapEncodeTiled, K % 8 == 0 and N even (16-byte TMA rows,
// float2 stores), 16-byte aligned a and w. gemm.cu checks these and otherwise uses the mma.sync kernel.
int kc_gemm_wgmma_launch(KcContext* ctx, float* out, const void* a, const void* w, bool f16, const float* bias,
                         int M, int N, int K) {
  static bool configured[2] = {false, false};
  auto kernel = f16 ? gemm_wgmma_kernel<true> : gemm_wgmma_kernel<false>;
  if (!configured[f16]) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES),
                    "cudaFuncSetAttribute(gemm_wgmma_kernel)"));
    configured[f16] = true;
  }
  CUtensorMap map_a, map_w;
  KC_TRY(encode_map(ctx, &map_a, a, f16, M, K, BM));
  KC_TRY(encode_map(ctx, &map_w, w, f16, N, K, BN));
  unsigned blocks = (unsigned)(((M + BM - 1) / BM) * ((N + BN - 1) / BN));
  kernel<<<blocks, THREADS, SMEM_BYTES, ctx->stream>>>(map_a, map_w, out, bias, M, N, K);
  return kc_launched(ctx, "gemm_wgmma_kernel");
}
