// Row normalisations (LayerNorm, RMSNorm, softmax over the last dim) and the channel L2 norm of the
// Wan VAE. All accumulate in f32; in place allowed (every thread reads its elements before writing).
// LayerNorm (and its modulated form) reads f32 x — the residual stream — and stores f32 or bf16 (the
// DiT's input of the next GEMM); RMSNorm reads and stores f32, or bf16 (the cross-attention's q and
// k), its statistics in f32 either way.
//
// CPU reference (src/runtime/reference.ts), per row x of `cols` values:
//   layer_norm   y = (x − mean) / sqrt(var + eps) · weight + bias        (var: biased, 1/cols)
//                and, fused when scale/shift are given (layerNormModulate: Wan's adaLN, LongLive's
//                fused kernel): y = y · (1 + scale[r]) + shift[r], x [B, L, cols], tables [B, G, cols],
//                r = b·G + floor(l / (L/G))
//   rms_norm     y = x / sqrt(mean(x²) + eps) · weight
//   softmax      y = e^(x − max) / Σ e^(x − max)
//   l2_norm_channels  over dim 1 of [B, C, S]: y = x / max(‖x‖₂, eps) · scale · gamma[c]
//
// One block per row: rows are 16…10 240 wide here (head dims, 1536, 4096 hidden), so a block of up to
// 256 threads strides the row and reduces through shared memory; the row is re-read from L1/L2 for
// each pass instead of being held in registers, which keeps one kernel for every width. LayerNorm uses
// two passes (mean, then squared deviations) because one-pass E[x²] − mean² cancels badly for
// activations with a large mean.
#include "common.cuh"

namespace {
int threads_for(int cols) {
  int t = (cols + 31) / 32 * 32;
  return t < 256 ? (t > 32 ? t : 32) : 256;
}

template <typename TO>
__global__ void layer_norm_kernel(TO* out, const float* x, int cols, float eps, const float* weight,
                                  const float* bias, const float* scale, const float* shift, int L, int G) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  TO* yr = out + row * cols;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const float mean = kc_block_sum(s) / cols;
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = xr[c] - mean;
    v += d * d;
  }
  const float inv = rsqrtf(kc_block_sum(v) / cols + eps);
  const float* sc = nullptr;
  const float* sh = nullptr;
  if (scale) {
    int64_t b = row / L, l = row % L;
    int64_t t = (b * G + l / (L / G)) * cols;
    sc = scale + t;
    sh = shift + t;
  }
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float y = (xr[c] - mean) * inv;
    if (weight) y *= weight[c];
    if (bias) y += bias[c];
    if (sc) y = y * (1.f + sc[c]) + sh[c];
    kc_put(yr + c, y);
  }
}

template <typename T>
__global__ void rms_norm_kernel(T* out, const T* x, int cols, float eps, const float* weight) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = out + row * cols;
  const float inv = kc_block_inv_rms(xr, cols, eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) kc_put(yr + c, kc_f32(xr[c]) * inv * (weight ? weight[c] : 1.f));
}

__global__ void softmax_kernel(float* out, const float* x, int cols) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = out + row * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = kc_block_max(m);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  const float inv = 1.f / kc_block_sum(s);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}

// One thread per (b, s) position; channels are S apart, so a warp reads 32 consecutive positions of
// one channel at a time (coalesced).
__global__ void l2_norm_channels_kernel(float* out, const float* x, int B, int C, int64_t S, float eps, float scale,
                                        const float* gamma) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (int64_t)B * S) return;
  int64_t b = idx / S, s = idx % S;
  const float* xp = x + b * C * S + s;
  float* yp = out + b * C * S + s;
  const float inv = kc_l2_inv(xp, C, S, eps, scale);
  for (int c = 0; c < C; c++) yp[c * S] = xp[c * S] * inv * (gamma ? gamma[c] : 1.f);
}
}  // namespace

// scale/shift (both or neither): [B, G, cols] modulation tables, rows = B·L. out_dt: f32 or bf16.
KC_API int kc_layer_norm(KcContext* ctx, void* out, const float* x, int64_t rows, int cols, float eps,
                         const float* weight, const float* bias, const float* scale, const float* shift, int L, int G,
                         int out_dt) {
  if (out_dt != KC_F32 && out_dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_layer_norm", "out must be f32 or bf16");
  if (rows <= 0 || cols <= 0) return 0;
  if ((scale != nullptr) != (shift != nullptr) || (scale && (L <= 0 || G <= 0 || L % G)))
    return kc_fail(ctx, KC_E_ARG, "kc_layer_norm", "modulation needs scale and shift with G dividing L");
  if (out_dt == KC_BF16)
    KC_LAUNCH(layer_norm_kernel<__nv_bfloat16>, (unsigned)rows, threads_for(cols), 0, ctx->stream)(
        (__nv_bfloat16*)out, x, cols, eps, weight, bias, scale, shift, L, G);
  else
    KC_LAUNCH(layer_norm_kernel<float>, (unsigned)rows, threads_for(cols), 0, ctx->stream)(
        (float*)out, x, cols, eps, weight, bias, scale, shift, L, G);
  return kc_launched(ctx, "kc_layer_norm");
}

// x and out of dtype dt: f32 or bf16.
KC_API int kc_rms_norm(KcContext* ctx, void* out, const void* x, int64_t rows, int cols, float eps, const float* weight,
                       int dt) {
  if (dt != KC_F32 && dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_rms_norm", "x and out must be f32 or bf16");
  if (rows <= 0 || cols <= 0) return 0;
  if (dt == KC_BF16)
    KC_LAUNCH(rms_norm_kernel<__nv_bfloat16>, (unsigned)rows, threads_for(cols), 0, ctx->stream)(
        (__nv_bfloat16*)out, (const __nv_bfloat16*)x, cols, eps, weight);
  else
    KC_LAUNCH(rms_norm_kernel<float>, (unsigned)rows, threads_for(cols), 0, ctx->stream)((float*)out, (const float*)x, cols, eps, weight);
  return kc_launched(ctx, "kc_rms_norm");
}

KC_API int kc_softmax(KcContext* ctx, float* out, const float* x, int64_t rows, int cols) {
  if (rows <= 0 || cols <= 0) return 0;
  KC_LAUNCH(softmax_kernel, (unsigned)rows, threads_for(cols), 0, ctx->stream)(out, x, cols);
  return kc_launched(ctx, "kc_softmax");
}

KC_API int kc_l2_norm_channels(KcContext* ctx, float* out, const float* x, int B, int C, int64_t S, float eps,
                               float scale, const float* gamma) {
  int64_t n = (int64_t)B * S;
  if (n <= 0 || C <= 0) return 0;
  KC_LAUNCH(l2_norm_channels_kernel, kc_blocks(n, 256), 256, 0, ctx->stream)(out, x, B, C, S, eps, scale, gamma);
  return kc_launched(ctx, "kc_l2_norm_channels");
}
