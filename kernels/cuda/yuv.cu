// RGB ↔ YUV 4:2:0 (I420), BT.601 limited range: the hand-off between decoded frames and the H.264
// encoder, and back for tests.
//
// CPU reference (src/runtime/reference.ts `rgbToYuv420` / `yuv420ToRgb`, kernels/cpu/yuv.c): rgb
// [3, T, H, W] f32 in range [lo, hi], yuv [T, H·W·3/2] u8 (Y plane, then U, then V).
// Forward: exactly the bytes the H.264 encoder makes from the pipelines' RGB24 frames —
//   each sample's 8-bit code as src/models/frames.ts videoToRgb24 makes it:
//     y = (x − lo) · (255 / (hi − lo)) in double; 0 if y ≤ 0 or NaN, 255 if y ≥ 255, else round half up
//   then kernels/h264/colour.c's fixed-point matrix on the codes (chroma from the 2×2 sum):
//     Y = (16829 R + 33039 G + 6416 B + (16 << 16) + 32768) >> 16
//     U = (−9714 r − 19070 g + 28784 b + (128 << 18) + (1 << 17)) >> 18,  r, g, b the 2×2 sums
//     V = (28784 r − 24103 g − 4681 b + (128 << 18) + (1 << 17)) >> 18
//   The double arithmetic uses explicitly rounded operations (no FMA contraction), as JavaScript
//   rounds it, so every code agrees; the rest is integer.
// Inverse: l = (Y − 16)/219, pb = (U − 128)/224, pr = (V − 128)/224
//            (r, g, b) = (l + 1.402 pr, l − 0.344136 pb − 0.714136 pr, l + 1.772 pb), clamped to [0, 1]
//            and mapped to [lo, hi].
#include "common.cuh"

namespace {
// a + b·x and a − b·x, rounded after each operation as JavaScript does.
__device__ __forceinline__ double add_mul(double a, double b, double x) { return __dadd_rn(a, __dmul_rn(b, x)); }
__device__ __forceinline__ double sub_mul(double a, double b, double x) { return __dsub_rn(a, __dmul_rn(b, x)); }

__device__ __forceinline__ int code8(float x, double lo, double scale) {
  double y = __dmul_rn(__dsub_rn((double)x, lo), scale);
  if (!(y > 0.0)) return 0;
  if (y >= 255.0) return 255;
  double f = floor(y);
  return (int)f + (__dsub_rn(y, f) >= 0.5 ? 1 : 0);
}

__device__ __forceinline__ uint8_t clip_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

// One thread per 2×2 block: four Y samples and one U, one V.
__global__ void rgb_to_yuv420_kernel(uint8_t* out, const float* x, int T, int H, int W, double lo, double scale) {
  const int64_t blocks = (int64_t)T * (H / 2) * (W / 2);
  const int64_t plane = (int64_t)H * W;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < blocks; i += (int64_t)gridDim.x * blockDim.x) {
    int bx = (int)(i % (W / 2)), by = (int)((i / (W / 2)) % (H / 2)), t = (int)(i / ((int64_t)(W / 2) * (H / 2)));
    uint8_t* frame = out + (int64_t)t * plane * 3 / 2;
    int sum[3] = {0, 0, 0};
    for (int dy = 0; dy < 2; dy++)
      for (int dx = 0; dx < 2; dx++) {
        int y = 2 * by + dy, xx = 2 * bx + dx;
        int c[3];
        for (int ch = 0; ch < 3; ch++) {
          c[ch] = code8(x[(((int64_t)ch * T + t) * H + y) * W + xx], lo, scale);
          sum[ch] += c[ch];
        }
        frame[(int64_t)y * W + xx] = (uint8_t)((16829 * c[0] + 33039 * c[1] + 6416 * c[2] + (16 << 16) + 32768) >> 16);
      }
    int64_t ci = (int64_t)by * (W / 2) + bx;
    frame[plane + ci] = clip_u8((-9714 * sum[0] - 19070 * sum[1] + 28784 * sum[2] + (128 << 18) + (1 << 17)) >> 18);
    frame[plane + plane / 4 + ci] = clip_u8((28784 * sum[0] - 24103 * sum[1] - 4681 * sum[2] + (128 << 18) + (1 << 17)) >> 18);
  }
}

__global__ void yuv420_to_rgb_kernel(float* out, const uint8_t* yuv, int T, int H, int W, double lo, double span) {
  const int64_t n = (int64_t)T * H * W, plane = (int64_t)H * W;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int xx = (int)(i % W), y = (int)((i / W) % H), t = (int)(i / plane);
    const uint8_t* frame = yuv + (int64_t)t * plane * 3 / 2;
    int64_t ci = (int64_t)(y >> 1) * (W / 2) + (xx >> 1);
    double l = ((double)frame[(int64_t)y * W + xx] - 16) / 219;
    double pb = ((double)frame[plane + ci] - 128) / 224, pr = ((double)frame[plane * 5 / 4 + ci] - 128) / 224;
    double rgb[3] = {add_mul(l, 1.402, pr), sub_mul(sub_mul(l, 0.344136, pb), 0.714136, pr), add_mul(l, 1.772, pb)};
    for (int c = 0; c < 3; c++) {
      double v = rgb[c] < 0 ? 0 : rgb[c] > 1 ? 1 : rgb[c];
      out[(((int64_t)c * T + t) * H + y) * W + xx] = (float)add_mul(lo, span, v);
    }
  }
}

}  // namespace

KC_API int kc_rgb_to_yuv420(KcContext* ctx, uint8_t* out, const float* x, int T, int H, int W, double lo, double hi) {
  int64_t blocks = (int64_t)T * (H / 2) * (W / 2);
  if (blocks <= 0) return 0;
  KC_LAUNCH(rgb_to_yuv420_kernel, kc_grid_for(ctx, blocks), 256, 0, ctx->stream)(out, x, T, H, W, lo, 255.0 / (hi - lo));
  return kc_launched(ctx, "kc_rgb_to_yuv420");
}

KC_API int kc_yuv420_to_rgb(KcContext* ctx, float* out, const uint8_t* yuv, int T, int H, int W, double lo, double hi) {
  int64_t n = (int64_t)T * H * W;
  if (n <= 0) return 0;
  KC_LAUNCH(yuv420_to_rgb_kernel, kc_grid_for(ctx, n), 256, 0, ctx->stream)(out, yuv, T, H, W, lo, hi - lo);
  return kc_launched(ctx, "kc_yuv420_to_rgb");
}
