// kc_rgb_to_yuv420 (kernels/cuda/yuv.cu, the file itself) on the CPU emulator, for
// test/media/i420-frames.test.ts: the CUDA kernel's bytes against the H.264 encoder's own conversion.
//
//   yuv IN OUT
//   IN:  int32 T, H, W; f64 lo, hi; then f32 x [3, T, H, W]
//   OUT: u8 yuv [T, H·W·3/2]
// Prints one line per kernel launch; exits 1 with the library's message when the launch fails.
#include "host-runtime.h"

#include "../../../kernels/cuda/yuv.cu"

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: yuv IN OUT");
  FILE* f = fopen(argv[1], "rb");
  if (!f) kc_emu::fail("cannot open the input");
  int32_t dims[3];
  double range[2];
  if (fread(dims, sizeof dims, 1, f) != 1 || fread(range, sizeof range, 1, f) != 1) kc_emu::fail("input file too short");
  const int T = dims[0], H = dims[1], W = dims[2];
  const size_t n = (size_t)3 * T * H * W, out_n = (size_t)T * H * W * 3 / 2;
  // exact-size allocations, so that the sanitizer sees an access past either end
  float* x = (float*)malloc(sizeof(float) * (n ? n : 1));
  if (fread(x, sizeof(float), n, f) != n) kc_emu::fail("input file too short");
  fclose(f);
  uint8_t* out = (uint8_t*)malloc(out_n ? out_n : 1);
  memset(out, 0xA5, out_n);  // a byte the kernel does not write shows
  KcContext ctx{};
  ctx.sm_count = 2;  // a few blocks: the grid-stride loop takes several turns
  const int rc = kc_rgb_to_yuv420(&ctx, out, x, T, H, W, range[0], range[1]);
  if (rc) {
    fprintf(stderr, "kc_rgb_to_yuv420: %s (%d)\n", ctx.error, rc);
    return 1;
  }
  f = fopen(argv[2], "wb");
  if (!f || fwrite(out, 1, out_n, f) != out_n) kc_emu::fail("cannot write the output");
  fclose(f);
  return 0;
}
