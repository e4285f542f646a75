// The emulator's warp shuffle on its own, for test/runtime/cuda-emulator.test.ts: what every lane
// gets from __shfl_xor_sync for each lane mask and width, and the misuses the emulator must refuse.
//
//   primitives xor OUT        OUT: int32 [6 widths (1, 2, 4, …, 32)][32 lane masks][32 lanes], the
//                             source lane each lane received (every lane shuffles its own index)
//   primitives exited OUT     lanes 16..31 return, then lanes 0..15 shuffle: must stop the emulator
//   primitives mask OUT       a shuffle naming half the warp: must stop the emulator
#include "host-runtime.h"
#include <string>

__global__ void xor_kernel(int32_t* out) {
  const int lane = threadIdx.x % 32;
  for (int w = 0; w < 6; w++)
    for (int m = 0; m < 32; m++) out[(w * 32 + m) * 32 + lane] = __shfl_xor_sync(0xffffffffu, lane, m, 1 << w);
}

__global__ void exited_kernel(int32_t* out) {
  const int lane = threadIdx.x % 32;
  if (lane >= 16) return;
  out[lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
}

__global__ void mask_kernel(int32_t* out) {
  const int lane = threadIdx.x % 32;
  out[lane] = __shfl_xor_sync(0x0000ffffu, lane, 1);
}

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: primitives xor|exited|mask OUT");
  const size_t n = 6 * 32 * 32;
  int32_t* out = (int32_t*)malloc(sizeof(int32_t) * n);
  memset(out, 0xFF, sizeof(int32_t) * n);
  const std::string mode = argv[1];
  if (mode == "xor") KC_LAUNCH(xor_kernel, 1, 32, 0, 0)(out);
  else if (mode == "exited") KC_LAUNCH(exited_kernel, 1, 32, 0, 0)(out);
  else if (mode == "mask") KC_LAUNCH(mask_kernel, 1, 32, 0, 0)(out);
  else kc_emu::fail("unknown mode");
  kc_emu::write_file(argv[2], out, sizeof(int32_t) * n);
  return 0;
}
