// RGB ↔ YUV 4:2:0 (I420), BT.601 limited range: the hand-off between decoded frames and the H.264
// encoder, and back for tests.
//
// CPU reference (src/runtime/reference.ts `rgbToYuv420` / `yuv420ToRgb`): rgb [3, T, H, W] f32 in
// range [lo, hi], yuv [T, H·W·3/2] u8 (Y plane, then U, then V; chroma from the 2×2 average).
//   p = clamp((x − lo) / (hi − lo), 0, 1);  u8(v) = clamp(floor(v + 0.5), 0, 255)
//   Y = u8(16 + 65.481 r + 128.553 g + 24.966 b)
//   U = u8(128 − 37.797 r̄ − 74.203 ḡ + 112 b̄),  V = u8(128 + 112 r̄ − 93.786 ḡ − 18.214 b̄)
//   inverse: l = (Y − 16)/219, pb = (U − 128)/224, pr = (V − 128)/224
//            (r, g, b) = (l + 1.402 pr, l − 0.344136 pb − 0.714136 pr, l + 1.772 pb), clamped to [0, 1]
//            and mapped to [lo, hi].
// The arithmetic is done in double with explicitly rounded operations (no FMA contraction), in the
// reference's order, so the rounding to u8 agrees exactly; the ops are memory-bound, so this costs
// nothing measurable.
#include "common.cuh"

namespace {
__device__ __forceinline__ uint8_t to_u8(double v) {
  double r = floor(v + 0.5);
  return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}
__device__ __forceinline__ double unit(const float* p, double lo, double span) {
  double v = __ddiv_rn(__dsub_rn((double)*p, lo), span);
  return v < 0 ? 0 : v > 1 ? 1 : v;
}
// a + b·x and a − b·x, rounded after each operation as JavaScript does.
__device__ __forceinline__ double add_mul(double a, double b, double x) { return __dadd_rn(a, __dmul_rn(b, x)); }
__device__ __forceinline__ double sub_mul(double a, double b, double x) { return __dsub_rn(a, __dmul_rn(b, x)); }

// One thread per 2×2 block: four Y samples and one U, one V.
__global__ void rgb_to_yuv420_kernel(uint8_t* out, const float* x, int T, int H, int W, double lo, double span) {
  const int64_t blocks = (int64_t)T * (H / 2) * (W / 2);
  const int64_t plane = (int64_t)H * W;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < blocks; i += (int64_t)gridDim.x * blockDim.x) {
    int bx = (int)(i % (W / 2)), by = (int)((i / (W / 2)) % (H / 2)), t = (int)(i / ((int64_t)(W / 2) * (H / 2)));
    uint8_t* frame = out + (int64_t)t * plane * 3 / 2;
    double sum[3] = {0, 0, 0};
    for (int dy = 0; dy < 2; dy++)
      for (int dx = 0; dx < 2; dx++) {
        int y = 2 * by + dy, xx = 2 * bx + dx;
        double c[3];
        for (int ch = 0; ch < 3; ch++) {
          c[ch] = unit(x + (((int64_t)ch * T + t) * H + y) * W + xx, lo, span);
          sum[ch] = __dadd_rn(sum[ch], c[ch]);
        }
        frame[(int64_t)y * W + xx] = to_u8(add_mul(add_mul(add_mul(16, 65.481, c[0]), 128.553, c[1]), 24.966, c[2]));
      }
    double r = sum[0] / 4, g = sum[1] / 4, b = sum[2] / 4;
    int64_t ci = (int64_t)by * (W / 2) + bx;
    frame[plane + ci] = to_u8(add_mul(sub_mul(sub_mul(128, 37.797, r), 74.203, g), 112.0, b));
    frame[plane + plane / 4 + ci] = to_u8(sub_mul(sub_mul(add_mul(128, 112.0, r), 93.786, g), 18.214, b));
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
  rgb_to_yuv420_kernel<<<kc_grid_for(ctx, blocks), 256, 0, ctx->stream>>>(out, x, T, H, W, lo, hi - lo);
  return kc_launched(ctx, "kc_rgb_to_yuv420");
}

KC_API int kc_yuv420_to_rgb(KcContext* ctx, float* out, const uint8_t* yuv, int T, int H, int W, double lo, double hi) {
  int64_t n = (int64_t)T * H * W;
  if (n <= 0) return 0;
  yuv420_to_rgb_kernel<<<kc_grid_for(ctx, n), 256, 0, ctx->stream>>>(out, yuv, T, H, W, lo, hi - lo);
  return kc_launched(ctx, "kc_yuv420_to_rgb");
}
