/*
 * resize — bicubic resampling of the last two dims of [..., H, W] f32 to [..., Ho, Wo], with one of two
 * filters (Backend.resize's ResizeOptions).
 *
 * CPU reference (src/runtime/reference.ts `resize`), per axis of input size n and output size m:
 *   antialiased (torch = 0): s = n / m, f = max(s, 1); output pixel o covers centre c = (o + 0.5)·s;
 *     its taps are the input pixels i with |i + 0.5 − c| < 2f, weighted k((i + 0.5 − c) / f), k Keys'
 *     cubic with a = −0.5, and normalized to sum 1 (taps outside [0, n) are left out, which clamps the
 *     image at its border).
 *   torch (torch = 1, PyTorch's F.interpolate bicubic, align_corners=False): c = (o + 0.5)·s − 0.5,
 *     i0 = floor(c), t = c − i0; taps i0 − 1 … i0 + 2 weighted k(t + 1), k(t), k(1 − t), k(2 − t), k
 *     the cubic with a = −0.75; an index outside [0, n) reads the border pixel (its weight is added
 *     to the border tap's). No normalization, no widening: a shrink aliases, as in PyTorch.
 *   out[p, y, x] = Σ_i Σ_j wy(y, i) · wx(x, j) · in[p, i, j]
 * One thread takes a share of the output rows; each row computes its vertical weights once and the
 * horizontal weights per pixel (4 multiply-adds of the cubic per tap, against 4·f taps per axis).
 */
#include "common.h"

static inline float cubic(float t, float a) {
  t = t < 0 ? -t : t;
  if (t < 1.0f) return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
  if (t < 2.0f) return (((t - 5.0f) * t + 8.0f) * t - 4.0f) * a;
  return 0.0f;
}

/* The taps of output pixel o on an axis of n inputs scaled by s: first index and count; w gets the
 * normalized weights. 64 taps cover shrinking by up to 16×. */
enum { MAX_TAPS = 64 };
static int taps_of(int o, int n, float s, int torch, int *first, float *w) {
  if (torch) {
    const float c = ((float)o + 0.5f) * s - 0.5f;
    const float fl = __builtin_floorf(c);
    const int i0 = (int)fl;
    const float t = c - fl;
    const int lo = i0 - 1 < 0 ? 0 : i0 - 1, hi = i0 + 2 > n - 1 ? n - 1 : i0 + 2;
    for (int i = 0; i <= hi - lo; i++) w[i] = 0.0f;
    for (int k = 0; k < 4; k++) {
      int i = i0 - 1 + k;
      i = i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
      w[i - lo] += cubic(t + 1.0f - (float)k, -0.75f);
    }
    *first = lo;
    return hi - lo + 1;
  }
  const float f = s > 1.0f ? s : 1.0f, c = ((float)o + 0.5f) * s, support = 2.0f * f;
  int lo = (int)(c - support + 0.5f), hi = (int)(c + support + 0.5f);
  if (lo < 0) lo = 0;
  if (hi > n) hi = n;
  if (hi - lo > MAX_TAPS) hi = lo + MAX_TAPS;
  float sum = 0.0f;
  for (int i = lo; i < hi; i++) sum += (w[i - lo] = cubic(((float)i + 0.5f - c) / f, -0.5f));
  for (int i = lo; i < hi; i++) w[i - lo] /= sum;
  *first = lo;
  return hi - lo;
}

void KINO_EXPORT(kino_resize)(int tid, int nth, float *out, const float *x, int planes, int H, int W, int Ho, int Wo, int torch) {
  const float sy = (float)H / (float)Ho, sx = (float)W / (float)Wo;
  range_t r = split_range((size_t)planes * (size_t)Ho, tid, nth);
  float wy[MAX_TAPS], wx[MAX_TAPS];
  for (size_t row = r.lo; row < r.hi; row++) {
    const int p = (int)(row / (size_t)Ho), y = (int)(row % (size_t)Ho);
    int y0, x0;
    const int ny = taps_of(y, H, sy, torch, &y0, wy);
    const float *plane = x + (size_t)p * H * W;
    float *dst = out + row * (size_t)Wo;
    for (int ox = 0; ox < Wo; ox++) {
      const int nx = taps_of(ox, W, sx, torch, &x0, wx);
      float acc = 0.0f;
      for (int i = 0; i < ny; i++) {
        const float *src = plane + (size_t)(y0 + i) * W + x0;
        float line = 0.0f;
        for (int j = 0; j < nx; j++) line += wx[j] * src[j];
        acc += wy[i] * line;
      }
      dst[ox] = acc;
    }
  }
}
