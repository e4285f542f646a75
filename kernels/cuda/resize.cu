// resize — bicubic resampling of the last two dims of [..., H, W] f32 to [..., Ho, Wo], antialiased
// when shrinking (the filter widens with the scale, as PIL's resize does).
//
// CPU reference (src/runtime/reference.ts `resize`), per axis of input size n and output size m:
//   s = n / m, f = max(s, 1); output pixel o covers centre c = (o + 0.5)·s; its taps are the input
//   pixels i with |i + 0.5 − c| < 2f, weighted k((i + 0.5 − c) / f), k Keys' cubic with a = −0.5, and
//   normalized to sum 1 (taps outside [0, n) are left out, which clamps the image at its border).
//   out[p, y, x] = Σ_i Σ_j wy(y, i) · wx(x, j) · in[p, i, j]
// One thread per output pixel, weights recomputed from the formula (no tables to upload): the op runs
// once per decoded chunk, on frames that are small next to the DiT's work.
#include "common.cuh"

namespace {
constexpr int MAX_TAPS = 64;  // shrinking by up to 16×

__device__ __forceinline__ float keys_cubic(float t) {
  const float a = -0.5f;
  t = fabsf(t);
  if (t < 1.0f) return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
  if (t < 2.0f) return (((t - 5.0f) * t + 8.0f) * t - 4.0f) * a;
  return 0.0f;
}

struct Taps {
  int lo, count;
  float centre, f, norm;
  __device__ float weight(int i) const { return keys_cubic(((float)(lo + i) + 0.5f - centre) / f) * norm; }
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
  for (int i = lo; i < hi; i++) sum += keys_cubic(((float)i + 0.5f - t.centre) / t.f);
  t.norm = 1.0f / sum;
  return t;
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

KC_API int kc_resize(KcContext* ctx, float* out, const float* x, int64_t planes, int H, int W, int Ho, int Wo) {
  const int64_t total = planes * Ho * Wo;
  if (total <= 0) return 0;
  resize_kernel<<<kc_grid_for(ctx, total), 256, 0, ctx->stream>>>(out, x, planes, H, W, Ho, Wo);
  return kc_launched(ctx, "kc_resize");
}
