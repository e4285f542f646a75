/*
 * resize — bicubic resampling of the last two dims of [..., H, W] f32 to [..., Ho, Wo], antialiased
 * when shrinking (the filter widens with the scale, as PIL's resize does).
 *
 * CPU reference (src/runtime/reference.ts `resize`), per axis of input size n and output size m:
 *   s = n / m, f = max(s, 1); output pixel o covers centre c = (o + 0.5)·s; its taps are the input
 *   pixels i with |i + 0.5 − c| < 2f, weighted k((i + 0.5 − c) / f), k Keys' cubic with a = −0.5, and
 *   normalized to sum 1 (taps outside [0, n) are left out, which clamps the image at its border).
 *   out[p, y, x] = Σ_i Σ_j wy(y, i) · wx(x, j) · in[p, i, j]
 * One thread takes a share of the output rows; each row computes its vertical weights once and the
 * horizontal weights per pixel (4 multiply-adds of the cubic per tap, against 4·f taps per axis).
 */
#include "common.h"

static inline float keys_cubic(float t) {
  const float a = -0.5f;
  t = t < 0 ? -t : t;
  if (t < 1.0f) return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
  if (t < 2.0f) return (((t - 5.0f) * t + 8.0f) * t - 4.0f) * a;
  return 0.0f;
}

/* The taps of output pixel o on an axis of n inputs scaled by s: first index and count; w gets the
 * normalized weights. 64 taps cover shrinking by up to 16×. */
enum { MAX_TAPS = 64 };
static int taps_of(int o, int n, float s, int *first, float *w) {
  const float f = s > 1.0f ? s : 1.0f, c = ((float)o + 0.5f) * s, support = 2.0f * f;
  int lo = (int)(c - support + 0.5f), hi = (int)(c + support + 0.5f);
  if (lo < 0) lo = 0;
  if (hi > n) hi = n;
  if (hi - lo > MAX_TAPS) hi = lo + MAX_TAPS;
  float sum = 0.0f;
  for (int i = lo; i < hi; i++) sum += (w[i - lo] = keys_cubic(((float)i + 0.5f - c) / f));
  for (int i = lo; i < hi; i++) w[i - lo] /= sum;
  *first = lo;
  return hi - lo;
}

void KINO_EXPORT(kino_resize)(int tid, int nth, float *out, const float *x, int planes, int H, int W, int Ho, int Wo) {
  const float sy = (float)H / (float)Ho, sx = (float)W / (float)Wo;
  range_t r = split_range((size_t)planes * (size_t)Ho, tid, nth);
  float wy[MAX_TAPS], wx[MAX_TAPS];
  for (size_t row = r.lo; row < r.hi; row++) {
    const int p = (int)(row / (size_t)Ho), y = (int)(row % (size_t)Ho);
    int y0, x0;
    const int ny = taps_of(y, H, sy, &y0, wy);
    const float *plane = x + (size_t)p * H * W;
    float *dst = out + row * (size_t)Wo;
    for (int ox = 0; ox < Wo; ox++) {
      const int nx = taps_of(ox, W, sx, &x0, wx);
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
