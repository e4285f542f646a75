// Shared by every kernel file of libkino_cuda.so: the context handle, dtype codes, error plumbing and
// small device helpers (bf16/f16 conversion, warp reductions, cp.async / ldmatrix / mma.sync wrappers).
//
// The C ABI (every symbol starts with kc_) is the only thing exported: the library is compiled with
// -fvisibility=hidden and KC_API marks the entry points. Every entry point returns 0 on success or a
// cudaError_t / KC_E* code; kc_last_error(ctx) then holds a message naming the failing call.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stddef.h>
#include "mma_gpu.cuh"

#define KC_API extern "C" __attribute__((visibility("default")))

// Element types, shared with src/runtime/backends/cuda.ts.
enum KcDtype { KC_F32 = 0, KC_BF16 = 1, KC_F16 = 2 };

// Error codes of our own live above CUDA's range (cudaError_t values are < 1000).
enum KcError { KC_OK = 0, KC_E_ARG = 10001, KC_E_UNSUPPORTED = 10002, KC_E_OOM = 10003 };

struct KcAllocator;  // context.cu

struct KcContext {
  int device;
  int sm_major, sm_minor, sm_count;
  size_t smem_optin;           // max dynamic shared memory per block after opt-in
  int smem_per_sm;             // shared memory an SM shares among its blocks (bytes)
  int smem_reserved;           // shared memory the runtime keeps per block (bytes)
  int regs_per_sm, threads_per_sm;  // 32-bit registers and resident threads per SM
  cudaStream_t stream;
  KcAllocator* alloc;
  void* encode_tensor_map;     // cuTensorMapEncodeTiled from the driver (sm_90 kernels), or null
  int gemm_path;               // 0 auto, 1 force mma.sync, 2 force SIMT, 3 force wgmma, 4 force persistent wgmma,
                               // 5 force ping-pong wgmma (KINO_CUDA_GEMM=mma|simt|wgmma|wgmma-persistent|wgmma-pingpong)
  int gemm_mma_tile;           // the mma.sync GEMM's block tile forced, by its width: 128, 192 or 256 (128×…);
                               // 0 by the model (KINO_CUDA_GEMM_MMA_TILE=128x128|128x192|128x256; gemm_mma.cu)
  int attention_path;          // 0 auto, 1 force the f32 SIMT kernel, 2 force wgmma, 3 force mma.sync
                               // (KINO_CUDA_ATTENTION=f32|wgmma)
  int attention_bkv;           // key tile of the wgmma attention at D 128: 128, or FlashAttention-3's 176
                               // (KINO_CUDA_ATTENTION_BKV=176; 0 reads as 128)
  int attention_bq;            // query rows per block of the mma.sync attention: 64 or 128 forced, 0 by shape
                               // (KINO_CUDA_ATTENTION_BQ=64|128)
  int attention_split;         // the Hopper attention's stream-K: 1 where it pays, 0 never, 2 wherever it cuts
                               // an item (KINO_CUDA_ATTENTION_SPLIT=0|always; attention.cuh); 0 also keeps
                               // the mma.sync kernel's keys in one part
  int attention_parts;         // the mma.sync kernel's parts over the keys forced (1…8), 0 by the model
                               // (KINO_CUDA_ATTENTION_PARTS)
  // The mma.sync attention's picks for the last calls whose waves its model simulates (attention.cu:
  // mma_rows), round robin: each call's B, Lq, H, D, kv_len, block_size, q_offset, then its rows (0: empty).
  int attention_rows_kept[4][8];
  int attention_rows_next;
  int conv_path;               // 0 auto, 1 force the f32 SIMT kernel, 2 force mma.sync, 3 force wgmma
                               // (KINO_CUDA_CONV=simt|mma|wgmma)
  int conv_mma_tile;           // the mma.sync conv's block tile forced, by its index in KC_CONV_MMA_TILES + 1;
                               // 0 by the model (KINO_CUDA_CONV_MMA_TILE=128x192|256x96|128x96|256x16; conv_mma.cu)
  // The kernel the last kc_gemm / kc_attention / kc_conv3d call ran ("wgmma", "mma.sync", "simt"; ""
  // when it launched none), so that callers (the op sweep) know which precision the result carries.
  const char* last_gemm;
  const char* last_attention;
  const char* last_conv;
  cudaEvent_t timer[2];        // kc_timer_start / kc_timer_stop, created on first use
  int lost;                    // the first error that lost the context for good (context_lost.cuh), else 0
  char error[512];
};

// The context's GPU as the mma.sync kernels' tile models see it (mma_gpu.cuh).
static inline KcMmaGpu kc_mma_gpu(const KcContext* ctx) {
  return {ctx->sm_count, ctx->sm_major, ctx->sm_minor, ctx->smem_per_sm, (int)ctx->smem_optin, ctx->smem_reserved,
          ctx->regs_per_sm, ctx->threads_per_sm};
}

// Error plumbing. kc_fail records "where: message" and returns the code; a code that loses the
// context (context_lost.cuh) is also kept in ctx->lost, which kc_context_lost answers.
int kc_fail(KcContext* ctx, int code, const char* where, const char* detail = nullptr);
static inline int kc_check(KcContext* ctx, cudaError_t e, const char* where) {
  return e == cudaSuccess ? 0 : kc_fail(ctx, (int)e, where, cudaGetErrorString(e));
}
// After a kernel launch: reports configuration errors (bad grid, too much shared memory) at once.
static inline int kc_launched(KcContext* ctx, const char* kernel) {
  return kc_check(ctx, cudaGetLastError(), kernel);
}
// Blocks of 256 threads for a grid-stride loop over n items: enough to fill the GPU, no more.
static inline unsigned kc_grid_for(KcContext* ctx, int64_t n) {
  int64_t want = (n + 255) / 256, cap = (int64_t)ctx->sm_count * 16;
  return (unsigned)(want < cap ? (want > 0 ? want : 1) : cap);
}
#define KC_TRY(expr)              \
  do {                            \
    int kc_rc_ = (expr);          \
    if (kc_rc_ != 0) return kc_rc_; \
  } while (0)

// Scratch memory from the caching allocator (context.cu); released to the cache, stream-ordered.
void* kc_scratch(KcContext* ctx, size_t bytes);
void kc_scratch_release(KcContext* ctx, void* p);

// f32 → bf16/f16 conversion of a whole buffer on the context stream (elementwise.cu).
int kc_convert_launch(KcContext* ctx, const void* src, int src_dt, void* dst, int dst_dt, int64_t n);

static inline unsigned kc_blocks(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// A kernel launch, `KC_LAUNCH(kernel, grid, block, smem, stream)(args...)`. The CPU emulator of the
// tensor-core kernels (test/runtime/cuda-emulator) compiles kernel files with KC_EMULATE defined and
// supplies its own KC_LAUNCH, thread indices, barriers and the primitives marked below, so that
// their indexing is tested on machines without a GPU.
#ifndef KC_EMULATE
#define KC_LAUNCH(kernel, grid, block, smem, stream) kernel<<<(grid), (block), (smem), (stream)>>>
#endif

// ---- device helpers ------------------------------------------------------------------------------

// Loads one element of any supported dtype as f32.
__device__ __forceinline__ float kc_ld(const void* p, int dt, int64_t i) {
  if (dt == KC_F32) return ((const float*)p)[i];
  if (dt == KC_BF16) return __bfloat162float(((const __nv_bfloat16*)p)[i]);
  return __half2float(((const __half*)p)[i]);
}
__device__ __forceinline__ void kc_st(void* p, int dt, int64_t i, float v) {
  if (dt == KC_F32) ((float*)p)[i] = v;
  else if (dt == KC_BF16) ((__nv_bfloat16*)p)[i] = __float2bfloat16(v);
  else ((__half*)p)[i] = __float2half(v);
}

// Activations in either storage type (backend.ts: f32, or bf16 between the DiT's tensor-core ops):
// kc_f32 widens exactly, kc_put rounds to nearest even. Overloads, so one kernel template serves both.
__device__ __forceinline__ float kc_f32(float v) { return v; }
__device__ __forceinline__ float kc_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float kc_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ void kc_put(float* p, float v) { *p = v; }
__device__ __forceinline__ void kc_put(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
// Two neighbouring outputs at once (p 8-byte aligned for f32, 4-byte for bf16).
__device__ __forceinline__ void kc_put2(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
__device__ __forceinline__ void kc_put2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// SiLU (the `silu` op, and the conv's fused input: conv.cuh ConvNormSilu).
__device__ __forceinline__ float kc_silu(float v) { return v / (1.f + expf(-v)); }

// scale / max(‖x‖₂, eps) over C values `stride` apart, summed in channel order: the factor of the
// Wan-VAE's channel norm (the `l2NormChannels` op, and the conv's fused input), one code for both so
// that the fused conv reads what the separate ops would have written, bit for bit.
__device__ __forceinline__ float kc_l2_inv(const float* x, int C, int64_t stride, float eps, float scale) {
  float ss = 0.f;
  for (int c = 0; c < C; c++) ss += x[c * stride] * x[c * stride];
  return scale / fmaxf(sqrtf(ss), eps);
}

// GELU, tanh approximation (the `gelu` op and the GEMM epilogue).
__device__ __forceinline__ float kc_gelu_tanh(float v) {
  return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

// A deliberate bug, numbered, that the emulator's tests plant to prove they catch it
// (test/runtime/cuda-emulator: KC_PLANTED(n) is true there only in a run that asks for bug n). In every
// real build it is the constant false, so the code it guards compiles away.
#ifndef KC_PLANTED
#define KC_PLANTED(n) false
#endif

// Warp shuffles are the hardware's (the emulator supplies __shfl_xor_sync with the same lane rules).
__device__ __forceinline__ float kc_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float kc_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum for blockDim.x a multiple of 32 (≤ 1024); every thread gets the result.
__device__ __forceinline__ float kc_block_sum(float v) {
  __shared__ float partial[32];
  __syncthreads();  // partial[] may still be read by a previous call
  v = kc_warp_sum(v);
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < nwarps ? partial[lane] : 0.f;
  return kc_warp_sum(v);
}
// 1 / sqrt(mean(x²) + eps) of a row of `cols` values (f32 or bf16, summed in f32), for the whole
// block (RMSNorm's scale).
template <typename T>
__device__ __forceinline__ float kc_block_inv_rms(const T* x, int cols, float eps) {
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += kc_f32(x[c]) * kc_f32(x[c]);
  return rsqrtf(kc_block_sum(s) / cols + eps);
}
__device__ __forceinline__ float kc_block_max(float v) {
  __shared__ float partial[32];
  __syncthreads();
  v = kc_warp_max(v);
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < nwarps ? partial[lane] : -INFINITY;
  return kc_warp_max(v);
}

// blockIdx.z read afresh: a kernel at its register limit reads it again where it needs it late, rather
// than keep what it derived from it (a quotient, a remainder) alive through its main loop.
#ifdef KC_EMULATE
__device__ __forceinline__ unsigned kc_ctaid_z() { return blockIdx.z; }
#else
__device__ __forceinline__ unsigned kc_ctaid_z() {
  unsigned z;
  asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(z));
  return z;
}
#endif

#ifndef KC_EMULATE  // from here to the mma wrapper: the emulator's own versions replace these
__device__ __forceinline__ uint32_t kc_smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
// The block's dynamic shared memory (the launch's smem bytes), 128-byte aligned.
__device__ __forceinline__ uint8_t* kc_dynamic_smem() {
  extern __shared__ __align__(128) uint8_t kc_smem[];
  return kc_smem;
}

// 16-byte global→shared copy that bypasses L1; src_bytes < 16 zero-fills the rest (0 = all zeros),
// which is how every tiled kernel here handles rows and columns past the end of a matrix.
__device__ __forceinline__ void kc_cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void kc_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void kc_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void kc_ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                               uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void kc_ldmatrix_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                                     uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D(16x8, f32) += A(16x16) · B(16x8) with bf16 or f16 inputs (IS_F16 picks the PTX type).
template <bool IS_F16>
__device__ __forceinline__ void kc_mma_16816(float* d, const uint32_t* a, const uint32_t* b) {
  if constexpr (IS_F16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// 2^x on the special-function unit alone: results below 2^-126 flush to 0 (exp2f adds denormal handling
// around the same instruction). The attention kernels' softmax weights.
__device__ __forceinline__ float kc_exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

#endif  // KC_EMULATE

// Two f32 → one packed pair of bf16 (low half = first element), the A-operand register format.
__device__ __forceinline__ uint32_t kc_pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t kc_pack_f16(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
