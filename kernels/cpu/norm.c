/*
 * Normalisations and softmax. All reduce over the contiguous last dim except l2norm_channels, which
 * reduces over dim 1 of [B, C, S] (the Wan-VAE's channel norm on video tensors) and so vectorises
 * across 4 neighbouring positions instead. Rows are split across threads; in place is fine because
 * each row is read fully before it is written.
 */
#include "common.h"
#include "kmath.h"

static float row_sum(const float *x, int n) {
  v4f acc0 = {0}, acc1 = {0};
  int i = 0;
  for (; i + 8 <= n; i += 8) acc0 += vload(x + i), acc1 += vload(x + i + 4);
  float s = vsum(acc0 + acc1);
  for (; i < n; i++) s += x[i];
  return s;
}

/* Σ (x − c)²: two passes (mean first) keep the variance accurate when |mean| ≫ std. */
static float row_sq_dev(const float *x, int n, float c) {
  v4f acc0 = {0}, acc1 = {0}, vc = vsplat(c);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v4f a = vload(x + i) - vc, b = vload(x + i + 4) - vc;
    acc0 += a * a, acc1 += b * b;
  }
  float s = vsum(acc0 + acc1);
  for (; i < n; i++) s += (x[i] - c) * (x[i] - c);
  return s;
}

/* out = (x − mean)·inv·weight + bias, weight/bias optional. */
static void scale_row(float *out, const float *x, int n, float mean, float inv, const float *w, const float *b) {
  for (int i = 0; i < n; i++) {
    float y = (x[i] - mean) * inv;
    out[i] = (w ? y * w[i] : y) + (b ? b[i] : 0.0f);
  }
}

void KINO_EXPORT(kino_layer_norm)(int tid, int nth, float *out, const float *x, const float *w, const float *b, int rows,
                                  int cols, float eps) {
  range_t r = split_range((size_t)rows, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) {
    const float *xr = x + i * cols;
    float mean = row_sum(xr, cols) / (float)cols;
    float inv = 1.0f / ksqrt(row_sq_dev(xr, cols, mean) / (float)cols + eps);
    scale_row(out + i * cols, xr, cols, mean, inv, w, b);
  }
}

void KINO_EXPORT(kino_rms_norm)(int tid, int nth, float *out, const float *x, const float *w, int rows, int cols,
                                float eps) {
  range_t r = split_range((size_t)rows, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) {
    const float *xr = x + i * cols;
    float inv = 1.0f / ksqrt(row_sq_dev(xr, cols, 0.0f) / (float)cols + eps);
    scale_row(out + i * cols, xr, cols, 0.0f, inv, w, 0);
  }
}

void KINO_EXPORT(kino_softmax)(int tid, int nth, float *out, const float *x, int rows, int cols) {
  range_t r = split_range((size_t)rows, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) {
    const float *xr = x + i * cols;
    float *o = out + i * cols;
    float mx = -__builtin_inff();
    for (int c = 0; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
    float sum = 0.0f;
    int c = 0;
    for (; c + 4 <= cols; c += 4) {
      v4f e = vexp(vload(xr + c) - vsplat(mx));
      vstore(o + c, e);
      sum += vsum(e);
    }
    for (; c < cols; c++) sum += o[c] = kexp(xr[c] - mx);
    float inv = 1.0f / sum;
    for (c = 0; c < cols; c++) o[c] *= inv;
  }
}

/* x [B, C, S]: out = x / max(‖x[b, :, s]‖₂, eps) · scale · gamma[c]. Work items: (b, 4 positions). */
void KINO_EXPORT(kino_l2norm_channels)(int tid, int nth, float *out, const float *x, const float *gamma, int B, int C,
                                       int S, float eps, float scale) {
  const size_t groups = (size_t)(S + 3) / 4;
  range_t r = split_range((size_t)B * groups, tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    size_t b = u / groups;
    int s0 = (int)(u % groups) * 4, n = imin(4, S - s0);
    const float *xb = x + b * C * S + s0;
    float *ob = out + b * C * S + s0;
    if (n == 4) {
      v4f ss = {0};
      for (int c = 0; c < C; c++) {
        v4f v = vload(xb + (size_t)c * S);
        ss += v * v;
      }
      v4f norm = vmax((v4f){ksqrt(ss[0]), ksqrt(ss[1]), ksqrt(ss[2]), ksqrt(ss[3])}, vsplat(eps));
      v4f k = vsplat(scale) / norm;
      for (int c = 0; c < C; c++) vstore(ob + (size_t)c * S, vload(xb + (size_t)c * S) * k * vsplat(gamma ? gamma[c] : 1.0f));
    } else {
      for (int j = 0; j < n; j++) {
        float ss = 0.0f;
        for (int c = 0; c < C; c++) ss += xb[(size_t)c * S + j] * xb[(size_t)c * S + j];
        float nrm = ksqrt(ss), k = scale / (nrm > eps ? nrm : eps);
        for (int c = 0; c < C; c++) ob[(size_t)c * S + j] = xb[(size_t)c * S + j] * k * (gamma ? gamma[c] : 1.0f);
      }
    }
  }
}
