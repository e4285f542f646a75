/*
 * Frames ↔ I420 for the H.264 encoder and for video inputs. BT.601 limited range, the matrix the
 * encoder's SPS declares.
 *
 * Float → I420 gives exactly the bytes the encoder makes from the RGB24 frames the pipelines used to
 * hand it: each sample becomes the 8-bit code of src/models/frames.ts videoToRgb24,
 *   y = (x − lo) · (255 / (hi − lo)) in double;  code = 0 if y ≤ 0 (or NaN), 255 if y ≥ 255,
 *   else round half up (JavaScript's Math.round),
 * and the codes go through kernels/h264/colour.c's fixed-point matrix (16-bit weights, chroma from
 * the sum of the 2×2 block). For the VAE's [−1, 1], y is videoToRgb24's (x + 1) · 127.5 to the bit.
 *
 * I420 → float is the exact inverse of the real-valued matrix (no 8-bit step). Float frames are planar
 * [3, T, H, W] in [lo, hi]; I420 frames are [T, H·W·3/2] bytes: Y plane, U plane, V plane.
 */
#include "common.h"

/* A fused multiply-add would round y − floor(y) differently from JavaScript's y, then the
 * subtraction; clang keeps statements apart and wasm has no fma, gcc (the native build) needs telling. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

static inline int code8(float x, double lo, double scale) {
  double y = ((double)x - lo) * scale;
  if (!(y > 0.0)) return 0;
  if (y >= 255.0) return 255;
  double f = __builtin_floor(y);
  return (int)f + (y - f >= 0.5);
}

/* kernels/h264/colour.c's weights: coefficient · 65536 / 255, rounded. */
enum { YR = 16829, YG = 33039, YB = 6416, UR = -9714, UG = -19070, UB = 28784, VR = 28784, VG = -24103, VB = -4681 };

static inline uint8_t clip_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* Work item: (frame, pair of rows) → two Y rows and one U and V row. */
void KINO_EXPORT(kino_rgb_to_yuv420)(int tid, int nth, uint8_t *out, const float *x, int T, int H, int W, double lo,
                                     double hi) {
  const size_t plane = (size_t)H * W, frame = plane * 3 / 2;
  const double scale = 255.0 / (hi - lo);
  range_t r = split_range((size_t)T * (H / 2), tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    const size_t t = u / (size_t)(H / 2), y2 = u % (size_t)(H / 2);
    const float *R = x + t * plane, *G = R + (size_t)T * plane, *B = G + (size_t)T * plane;
    uint8_t *Y = out + t * frame, *U = Y + plane, *V = U + plane / 4;
    const size_t row0 = 2 * y2 * (size_t)W, row1 = row0 + (size_t)W;
    for (int i = 0; i < W / 2; i++) {
      int rs = 0, gs = 0, bs = 0;
      for (int k = 0; k < 4; k++) {
        const size_t p = (k < 2 ? row0 : row1) + 2 * (size_t)i + (k & 1);
        const int rc = code8(R[p], lo, scale), gc = code8(G[p], lo, scale), bc = code8(B[p], lo, scale);
        Y[p] = (uint8_t)((YR * rc + YG * gc + YB * bc + (16 << 16) + 32768) >> 16);
        rs += rc, gs += gc, bs += bc;
      }
      U[y2 * (W / 2) + i] = clip_u8((UR * rs + UG * gs + UB * bs + (128 << 18) + (1 << 17)) >> 18);
      V[y2 * (W / 2) + i] = clip_u8((VR * rs + VG * gs + VB * bs + (128 << 18) + (1 << 17)) >> 18);
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
