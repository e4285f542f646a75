// The mma.sync convolution's tile model (kernels/cuda/conv_mma_tiles.cuh) on a GPU given by its figures,
// for test/runtime/cuda-conv-mma-tiles.test.ts and cuda-emulated.test.ts: what kc_conv3d would pick
// there, without that GPU.
//
//   conv-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM M COUT [M COUT ...]
// Prints, per call of M output voxels and COUT channels, "conv M COUT", one line per tile ("tile 128x192
// blocks 1 waves 6 cycles 3264": blocks per SM, waves, the model's time) and then "pick 128x192".
//   conv-tiles registers
// Prints the registers the model assumes, one line per tile ("registers 128x192 sm_80 247 sm_90a 255").
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../kernels/cuda/conv_mma_tiles.cuh"

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "registers") == 0) {
    for (int i = 0; i < KC_CONV_MMA_TILE_COUNT; i++)
      printf("registers %dx%d sm_80 %d sm_90a %d\n", KC_CONV_MMA_TILES[i].bm(), KC_CONV_MMA_TILES[i].bn(),
             KC_CONV_MMA_REGISTERS[i].sm80, KC_CONV_MMA_REGISTERS[i].sm90a);
    return 0;
  }
  if (argc < 11 || (argc - 9) % 2) {
    fprintf(stderr, "usage: conv-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM M COUT [M COUT ...] | conv-tiles registers\n");
    return 2;
  }
  int v[8];
  for (int i = 0; i < 8; i++) v[i] = atoi(argv[1 + i]);
  const KcMmaGpu gpu{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  for (int i = 9; i < argc; i += 2) {
    const long long M = atoll(argv[i]);
    const int cout = atoi(argv[i + 1]);
    printf("conv %lld %d\n", M, cout);
    for (int t = 0; t < KC_CONV_MMA_TILE_COUNT; t++) {
      const KcConvMmaTile& s = KC_CONV_MMA_TILES[t];
      const int b = kc_conv_mma_blocks_per_sm(gpu, t);
      const long long tiles = (M + s.bm() - 1) / s.bm() * ((cout + s.bn() - 1) / s.bn());
      const long long waves = b ? (tiles + (long long)gpu.sms * b - 1) / ((long long)gpu.sms * b) : 0;
      printf("tile %dx%d blocks %d waves %lld cycles %lld\n", s.bm(), s.bn(), b, waves, (long long)kc_conv_mma_tile_cycles(gpu, t, M, cout));
    }
    const KcConvMmaTile& pick = KC_CONV_MMA_TILES[kc_conv_mma_pick_tile(gpu, M, cout)];
    printf("pick %dx%d\n", pick.bm(), pick.bn());
  }
  return 0;
}
