// Elementwise ops on f32 activations, and dtype conversion. All are memory-bound: one grid-stride
// pass, one read per input and one write, in place allowed (each element reads before it writes).
//
// CPU reference (src/runtime/reference.ts), for every element i:
//   gelu      out = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
//   geluExact out = x·Φ(x)   (Φ the standard normal CDF: normcdff)
//   silu      out = x / (1 + e^(−x))
//   mul       out = a·b
//   axpby     out = α·a + β·b   (a, b, out all f32, or all bf16: f32 arithmetic, rounded once)
//   fill      out = value
//   convert   out = x widened or rounded (f32 → bf16/f16 round-to-nearest-even; u8 → f32 values)
#include "common.cuh"

namespace {
constexpr int THREADS = 256;

#define KC_GRID_STRIDE(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

enum Unary { GELU = 0, SILU = 1, GELU_EXACT = 2 };

__global__ void unary_kernel(float* out, const float* x, int64_t n, int op) {
  KC_GRID_STRIDE(i, n) {
    float v = x[i];
    if (op == GELU) out[i] = kc_gelu_tanh(v);
    else if (op == GELU_EXACT) out[i] = v * normcdff(v);
    else out[i] = kc_silu(v);
  }
}

__global__ void mul_kernel(float* out, const float* a, const float* b, int64_t n) {
  KC_GRID_STRIDE(i, n) out[i] = a[i] * b[i];
}

template <typename T>
__global__ void axpby_kernel(T* out, const T* a, const T* b, float alpha, float beta, int64_t n) {
  KC_GRID_STRIDE(i, n) kc_put(out + i, alpha * kc_f32(a[i]) + beta * kc_f32(b[i]));
}

__global__ void fill_kernel(float* out, float value, int64_t n) {
  KC_GRID_STRIDE(i, n) out[i] = value;
}

// Conversion: f32 → bf16 is the hot case (every GEMM and attention call rounds its f32 operand), so
// it moves 4 elements per thread when both buffers allow 16/8-byte accesses.
__global__ void f32_to_bf16_x4_kernel(__nv_bfloat16* out, const float* x, int64_t n4) {
  KC_GRID_STRIDE(i, n4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    uint2 packed = make_uint2(kc_pack_bf16(v.x, v.y), kc_pack_bf16(v.z, v.w));
    reinterpret_cast<uint2*>(out)[i] = packed;
  }
}

__device__ __forceinline__ float load_any(const void* p, int dt, int64_t i) {
  if (dt == 3) return (float)((const uint8_t*)p)[i];  // u8 (frames), only ever read
  return kc_ld(p, dt, i);
}

__global__ void convert_kernel(void* out, int out_dt, const void* x, int x_dt, int64_t n) {
  KC_GRID_STRIDE(i, n) kc_st(out, out_dt, i, load_any(x, x_dt, i));
}
}  // namespace

int kc_convert_launch(KcContext* ctx, const void* src, int src_dt, void* dst, int dst_dt, int64_t n) {
  if (n <= 0) return 0;
  if (src_dt == dst_dt) return kc_check(ctx, cudaMemcpyAsync(dst, src, (size_t)n * (src_dt == KC_F32 ? 4 : 2),
                                                             cudaMemcpyDeviceToDevice, ctx->stream), "kc_convert");
  if (src_dt == KC_F32 && dst_dt == KC_BF16 && n % 4 == 0 && ((uintptr_t)src & 15) == 0 && ((uintptr_t)dst & 7) == 0) {
    KC_LAUNCH(f32_to_bf16_x4_kernel, kc_grid_for(ctx, n / 4), THREADS, 0, ctx->stream)(
        (__nv_bfloat16*)dst, (const float*)src, n / 4);
    return kc_launched(ctx, "f32_to_bf16_x4_kernel");
  }
  KC_LAUNCH(convert_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(dst, dst_dt, src, src_dt, n);
  return kc_launched(ctx, "convert_kernel");
}

// src_dt: 0 f32, 1 bf16, 2 f16, 3 u8; dst_dt: 0 f32, 1 bf16, 2 f16.
KC_API int kc_convert(KcContext* ctx, void* dst, int dst_dt, const void* src, int src_dt, int64_t n) {
  if (dst_dt < 0 || dst_dt > 2 || src_dt < 0 || src_dt > 3)
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_convert", "unsupported dtype");
  return kc_convert_launch(ctx, src, src_dt, dst, dst_dt, n);
}

KC_API int kc_gelu(KcContext* ctx, float* out, const float* x, int64_t n) {
  if (n <= 0) return 0;
  KC_LAUNCH(unary_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, x, n, GELU);
  return kc_launched(ctx, "kc_gelu");
}
KC_API int kc_gelu_exact(KcContext* ctx, float* out, const float* x, int64_t n) {
  if (n <= 0) return 0;
  KC_LAUNCH(unary_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, x, n, GELU_EXACT);
  return kc_launched(ctx, "kc_gelu_exact");
}
KC_API int kc_silu(KcContext* ctx, float* out, const float* x, int64_t n) {
  if (n <= 0) return 0;
  KC_LAUNCH(unary_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, x, n, SILU);
  return kc_launched(ctx, "kc_silu");
}
KC_API int kc_mul(KcContext* ctx, float* out, const float* a, const float* b, int64_t n) {
  if (n <= 0) return 0;
  KC_LAUNCH(mul_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, a, b, n);
  return kc_launched(ctx, "kc_mul");
}
KC_API int kc_axpby(KcContext* ctx, void* out, const void* a, const void* b, float alpha, float beta, int64_t n, int dt) {
  if (dt != KC_F32 && dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_axpby", "a, b and out must be f32 or bf16");
  if (n <= 0) return 0;
  if (dt == KC_BF16)
    KC_LAUNCH(axpby_kernel<__nv_bfloat16>, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(
        (__nv_bfloat16*)out, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, alpha, beta, n);
  else
    KC_LAUNCH(axpby_kernel<float>, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(
        (float*)out, (const float*)a, (const float*)b, alpha, beta, n);
  return kc_launched(ctx, "kc_axpby");
}
KC_API int kc_fill(KcContext* ctx, float* out, float value, int64_t n) {
  if (n <= 0) return 0;
  KC_LAUNCH(fill_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, value, n);
  return kc_launched(ctx, "kc_fill");
}
