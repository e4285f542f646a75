/*
 * Normalisations and softmax. All reduce over the contiguous last dim except l2norm_channels, which
 * reduces over dim 1 of [B, C, S] (the Wan-VAE's channel norm on video tensors) and so vectorises
 * across 4 neighbouring positions instead. Rows are split across threads; in place is fine because
 * each row is read fully before it is written. layer_norm_modulate is the DiT's adaLN: the norm and
 * the per-token modulation in one pass over the row instead of a second pass over all activations.
 */
#include "common.h"
#include "kmath.h"
#include "row_stats.h"

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

/*
 * x [B, L, C], scale and shift [B, G, C]: out = (x − mean)·inv·(1 + scale) + shift with the table row
 * of token l being l / (L / G) (per sample, per frame or per token).
 */
void KINO_EXPORT(kino_layer_norm_modulate)(int tid, int nth, float *out, const float *x, const float *scale,
                                           const float *shift, int B, int L, int C, int G, float eps) {
  range_t r = split_range((size_t)B * L, tid, nth);
  const int per = L / G;
  for (size_t row = r.lo; row < r.hi; row++) {
    const float *xr = x + row * C;
    const size_t t = ((row / (size_t)L) * G + (row % (size_t)L) / (size_t)per) * C;
    const float *sc = scale + t, *sh = shift + t;
    float *o = out + row * C;
    const float mean = row_sum(xr, C) / (float)C;
    const float inv = 1.0f / ksqrt(row_sq_dev(xr, C, mean) / (float)C + eps);
    const v4f vm = vsplat(mean), vi = vsplat(inv), one = vsplat(1.0f);
    int c = 0;
    for (; c + 4 <= C; c += 4) vstore(o + c, (vload(xr + c) - vm) * vi * (one + vload(sc + c)) + vload(sh + c));
    for (; c < C; c++) o[c] = (xr[c] - mean) * inv * (1.0f + sc[c]) + sh[c];
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
