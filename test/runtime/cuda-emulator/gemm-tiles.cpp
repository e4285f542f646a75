// The mma.sync GEMM's tile model (kernels/cuda/gemm_mma_tiles.cuh) on a GPU given by its figures, for
// test/runtime/cuda-gemm-mma-tiles.test.ts: what kc_gemm would pick there, without that GPU.
//
//   gemm-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM M N [M N ...]
// Prints, per M N, one line per tile ("tile 128x192 blocks 1 waves 3 cycles 2304") and then "pick 128x192".
#include <stdio.h>
#include <stdlib.h>
#include "../../../kernels/cuda/gemm_mma_tiles.cuh"

int main(int argc, char** argv) {
  if (argc < 11 || (argc - 9) % 2) {
    fprintf(stderr, "usage: gemm-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM M N [M N ...]\n");
    return 2;
  }
  int v[8];
  for (int i = 0; i < 8; i++) v[i] = atoi(argv[1 + i]);
  const KcMmaGpu gpu{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  for (int i = 9; i < argc; i += 2) {
    const int M = atoi(argv[i]), N = atoi(argv[i + 1]);
    printf("gemm %d %d\n", M, N);
    for (const KcMmaTile& t : KC_MMA_TILES) {
      const int b = kc_mma_blocks_per_sm(gpu, t);
      const long long tiles = (long long)((M + t.bm() - 1) / t.bm()) * ((N + t.bn() - 1) / t.bn());
      const long long waves = b ? (tiles + (long long)gpu.sms * b - 1) / ((long long)gpu.sms * b) : 0;
      printf("tile %dx%d blocks %d waves %lld cycles %lld\n", t.bm(), t.bn(), b, waves, (long long)kc_mma_tile_cycles(gpu, t, M, N));
    }
    const KcMmaTile pick = KC_MMA_TILES[kc_mma_pick_tile(gpu, M, N)];
    printf("pick %dx%d\n", pick.bm(), pick.bn());
  }
  return 0;
}
