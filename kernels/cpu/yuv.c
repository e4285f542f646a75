/*
 * Frames ↔ I420 for the H.264 encoder and for video inputs. BT.601 limited range, the matrix the
 * encoder's SPS declares (kernels/h264/colour.c does the same conversion from RGB24):
 *   Y  =  16 + 65.481 R + 128.553 G +  24.966 B        (R, G, B in [0, 1])
 *   Cb = 128 − 37.797 R −  74.203 G + 112.0   B        (from the 2×2 average of R, G, B)
 *   Cr = 128 + 112.0  R −  93.786 G −  18.214 B
 * and the exact inverse. Float frames are planar [3, T, H, W] in [lo, hi] (the VAE's [-1, 1]);
 * I420 frames are [T, H·W·3/2] bytes: Y plane, U plane, V plane.
 */
#include "common.h"

static inline uint8_t to_u8(float v) { return (uint8_t)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)(v + 0.5f)); }

static inline float unit(float v, float lo, float inv_span) {
  float u = (v - lo) * inv_span;
  return u < 0.0f ? 0.0f : u > 1.0f ? 1.0f : u;
}

/* Work item: (frame, pair of rows) → two Y rows and one U and V row. */
void KINO_EXPORT(kino_rgb_to_yuv420)(int tid, int nth, uint8_t *out, const float *x, int T, int H, int W, float lo,
                                     float hi) {
  const size_t plane = (size_t)H * W, frame = plane * 3 / 2;
  const float inv = 1.0f / (hi - lo);
  range_t r = split_range((size_t)T * (H / 2), tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    const size_t t = u / (size_t)(H / 2), y2 = u % (size_t)(H / 2);
    const float *R = x + t * plane, *G = R + (size_t)T * plane, *B = G + (size_t)T * plane;
    uint8_t *Y = out + t * frame, *U = Y + plane, *V = U + plane / 4;
    for (int dy = 0; dy < 2; dy++) {
      size_t row = (2 * y2 + dy) * (size_t)W;
      for (int i = 0; i < W; i++)
        Y[row + i] = to_u8(16.0f + 65.481f * unit(R[row + i], lo, inv) + 128.553f * unit(G[row + i], lo, inv) +
                           24.966f * unit(B[row + i], lo, inv));
    }
    for (int i = 0; i < W / 2; i++) {
      size_t a = 2 * y2 * W + 2 * i, b = a + W;
      float rr = (unit(R[a], lo, inv) + unit(R[a + 1], lo, inv) + unit(R[b], lo, inv) + unit(R[b + 1], lo, inv)) * 0.25f;
      float gg = (unit(G[a], lo, inv) + unit(G[a + 1], lo, inv) + unit(G[b], lo, inv) + unit(G[b + 1], lo, inv)) * 0.25f;
      float bb = (unit(B[a], lo, inv) + unit(B[a + 1], lo, inv) + unit(B[b], lo, inv) + unit(B[b + 1], lo, inv)) * 0.25f;
      U[y2 * (W / 2) + i] = to_u8(128.0f - 37.797f * rr - 74.203f * gg + 112.0f * bb);
      V[y2 * (W / 2) + i] = to_u8(128.0f + 112.0f * rr - 93.786f * gg - 18.214f * bb);
    }
  }
}

/* Work item: (frame, row). Each chroma sample serves its 2×2 block. */
void KINO_EXPORT(kino_yuv420_to_rgb)(int tid, int nth, float *out, const uint8_t *x, int T, int H, int W, float lo,
                                     float hi) {
  const size_t plane = (size_t)H * W, frame = plane * 3 / 2;
  const float span = hi - lo;
  range_t r = split_range((size_t)T * H, tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    const size_t t = u / (size_t)H, y = u % (size_t)H;
    const uint8_t *Y = x + t * frame + y * W, *U = x + t * frame + plane + (y / 2) * (W / 2), *V = U + plane / 4;
    float *R = out + t * plane + y * W, *G = R + (size_t)T * plane, *B = G + (size_t)T * plane;
    for (int i = 0; i < W; i++) {
      float l = ((float)Y[i] - 16.0f) / 219.0f, pb = ((float)U[i / 2] - 128.0f) / 224.0f,
            pr = ((float)V[i / 2] - 128.0f) / 224.0f;
      float rgb[3] = {l + 1.402f * pr, l - 0.344136f * pb - 0.714136f * pr, l + 1.772f * pb};
      for (int c = 0; c < 3; c++) rgb[c] = lo + span * (rgb[c] < 0.0f ? 0.0f : rgb[c] > 1.0f ? 1.0f : rgb[c]);
      R[i] = rgb[0], G[i] = rgb[1], B[i] = rgb[2];
    }
  }
}
