// resize — bicubic resampling of the last two dims of [..., H, W] f32 to [..., Ho, Wo], with one of two
// filters (Backend.resize's ResizeOptions).
//
// CPU reference (src/runtime/reference.ts `resize`), per axis of input size n and output size m:
//   antialiased (torch = 0): s = n / m, f = max(s, 1); output pixel o covers centre c = (o + 0.5)·s;
//     its taps are the input pixels i with |i + 0.5 − c| < 2f, weighted k((i + 0.5 − c) / f), k Keys'
//     cubic with a = −0.5, and normalized to sum 1 (taps outside [0, n) are left out, which clamps the
//     image at its border).
//   torch (torch = 1, PyTorch's F.interpolate bicubic, align_corners=False): c = (o + 0.5)·s − 0.5,
//     i0 = floor(c), t = c − i0; taps i0 − 1 … i0 + 2 weighted k(t + 1), k(t), k(1 − t), k(2 − t), k the
//     cubic with a = −0.75; an index outside [0, n) reads the border pixel. No normalization.
//   out[p, y, x] = Σ_i Σ_j wy(y, i) · wx(x, j) · in[p, i, j]
// One thread per output pixel, weights recomputed from the formula (no tables to upload): the op runs
// once per decoded chunk, on frames that are small next to the DiT's work.
#include "common.cuh"

namespace {
constexpr int MAX_TAPS = 64;  // shrinking by up to 16×

__device__ __forceinline__ float cubic(float t, float a) {
  t = fabsf(t);
  if (t < 1.0f) return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
  if (t < 2.0f) return (((t - 5.0f) * t + 8.0f) * t - 4.0f) * a;
  return 0.0f;
}

struct Taps {
  int lo, count;
  float centre, f, norm;
  __device__ float weight(int i) const { return cubic(((float)(lo + i) + 0.5f - centre) / f, -0.5f) * norm; }
};

__device__ Taps taps_of(int o, int n, float s) {
  Taps t;
  t.f = s > 1.0f ? s : 1.0f;
  t.centre = ((float)o + 0.5f) * s;
  const float support = 2.0f * t.f;
  int lo = (int)(t.centre - support + 0.5f), hi = (int)(t.centre + support + 0.5f);
  lo = lo < 0 ? 0 : lo;
  hi = hi > n ? n : hi;
  if (hi - lo > MAX_TAPS) hi = lo + MAX_TAPS;
  t.lo = lo;
  t.count = hi - lo;
  float sum = 0.0f;
  for (int i = lo; i < hi; i++) sum += cubic(((float)i + 0.5f - t.centre) / t.f, -0.5f);
  t.norm = 1.0f / sum;
  return t;
}

// PyTorch's bicubic: the 4 clamped taps of output pixel o and their weights.
struct TorchTaps {
  int idx[4];
  float w[4];
};

__device__ TorchTaps torch_taps_of(int o, int n, float s) {
  TorchTaps t;
  const float c = ((float)o + 0.5f) * s - 0.5f, fl = floorf(c), f = c - fl;
  const int i0 = (int)fl;
  for (int k = 0; k < 4; k++) {
    const int i = i0 - 1 + k;
    t.idx[k] = i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
    t.w[k] = cubic(f + 1.0f - (float)k, -0.75f);
  }
  return t;
}

__global__ void resize_torch_kernel(float* out, const float* x, int64_t planes, int H, int W, int Ho, int Wo) {
  const float sy = (float)H / (float)Ho, sx = (float)W / (float)Wo;
  const int64_t total = planes * Ho * Wo;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int ox = (int)(i % Wo), oy = (int)((i / Wo) % Ho);
    const int64_t p = i / ((int64_t)Wo * Ho);
    const TorchTaps ty = torch_taps_of(oy, H, sy), tx = torch_taps_of(ox, W, sx);
    const float* plane = x + p * H * W;
    float acc = 0.0f;
    for (int a = 0; a < 4; a++) {
      const float* src = plane + (int64_t)ty.idx[a] * W;
      float line = 0.0f;
      for (int b = 0; b < 4; b++) line += tx.w[b] * src[tx.idx[b]];
      acc += ty.w[a] * line;
    }
    out[i] = acc;
  }
}

__global__ void resize_kernel(float* out, const float* x, int64_t planes, int H, int W, int Ho, int Wo) {
  const float sy = (float)H / (float)Ho, sx = (float)W / (float)Wo;
  const int64_t total = planes * Ho * Wo;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int ox = (int)(i % Wo), oy = (int)((i / Wo) % Ho);
    const int64_t p = i / ((int64_t)Wo * Ho);
    const Taps ty = taps_of(oy, H, sy), tx = taps_of(ox, W, sx);
    const float* plane = x + p * H * W;
    float acc = 0.0f;
    for (int a = 0; a < ty.count; a++) {
      const float* src = plane + (int64_t)(ty.lo + a) * W + tx.lo;
      float line = 0.0f;
      for (int b = 0; b < tx.count; b++) line += tx.weight(b) * src[b];
      acc += ty.weight(a) * line;
    }
    out[i] = acc;
  }
}
}  // namespace

KC_API int kc_resize(KcContext* ctx, float* out, const float* x, int64_t planes, int H, int W, int Ho, int Wo, int torch) {
  const int64_t total = planes * Ho * Wo;
  if (total <= 0) return 0;
  if (torch) KC_LAUNCH(resize_torch_kernel, kc_grid_for(ctx, total), 256, 0, ctx->stream)(out, x, planes, H, W, Ho, Wo);
  else KC_LAUNCH(resize_kernel, kc_grid_for(ctx, total), 256, 0, ctx->stream)(out, x, planes, H, W, Ho, Wo);
  return kc_launched(ctx, "kc_resize");
}
