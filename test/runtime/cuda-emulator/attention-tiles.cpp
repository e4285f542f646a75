// The mma.sync attention's tiling model (kernels/cuda/attention_mma_tiles.cuh) on a GPU given by its
// figures, for test/runtime/cuda-attention-mma-tiles.test.ts and cuda-emulated-tensor-cores.test.ts:
// which query rows per block kc_attention would take there, without that GPU.
//
//   attention-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM
//                   B LQ H D KV_LEN BLOCK_SIZE Q_OFFSET [B LQ H D KV_LEN BLOCK_SIZE Q_OFFSET ...]
// Prints, per call, one line per tiling ("rows 128 per_sm 2 step 2048 blocks 444 key_tiles 74-74 cycles
// 909312 in_order 909312": blocks per SM, cycles per key tile of a block, blocks, the fewest and most key
// tiles of a block, the model's time with the kernel's last-first order and with query tiles in index
// order) and then "pick 128 parts 4 waves 7 tiles 19": the tiling, and on it the parts each block's keys
// are split into, the waves of blocks that makes and the key tiles of the largest part.
//   attention-tiles registers
// Prints the registers the model assumes, one line per tiling and head size ("registers D 128 rows 128
// sm_80 255 sm_90a 255").
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../kernels/cuda/attention_mma_tiles.cuh"

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "registers") == 0) {
    for (const KcAttentionMmaRegisters& r : KC_ATTENTION_MMA_REGISTERS)
      printf("registers D %d rows %d sm_80 %d sm_90a %d\n", r.D, kc_attention_mma_rows_of(r.mi), r.sm80, r.sm90a);
    return 0;
  }
  if (argc < 16 || (argc - 9) % 7) {
    fprintf(stderr, "usage: attention-tiles SMS MAJOR MINOR SMEM_PER_SM SMEM_PER_BLOCK SMEM_RESERVED REGS_PER_SM THREADS_PER_SM "
                    "B LQ H D KV_LEN BLOCK_SIZE Q_OFFSET [...] | attention-tiles registers\n");
    return 2;
  }
  int v[8];
  for (int i = 0; i < 8; i++) v[i] = atoi(argv[1 + i]);
  const KcMmaGpu gpu{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  for (int i = 9; i < argc; i += 7) {
    int a[7];
    for (int j = 0; j < 7; j++) a[j] = atoi(argv[i + j]);
    const KcAttentionCall c{a[0], a[1], a[2], a[3], a[4], a[5], a[6]};
    printf("attention %d %d %d %d %d %d %d\n", c.B, c.Lq, c.H, c.D, c.kv_len, c.block_size, c.q_offset);
    for (int mi = 2; mi >= 1; mi--) {
      const int rows = kc_attention_mma_rows_of(mi), tiles_q = (c.Lq + rows - 1) / rows;
      printf("rows %d per_sm %d step %lld blocks %lld key_tiles %d-%d cycles %lld in_order %lld\n", rows,
             kc_attention_mma_blocks_per_sm(gpu, c.D, mi), (long long)kc_attention_mma_step(gpu, c.D, mi),
             (long long)tiles_q * c.H * c.B, kc_attention_mma_key_tiles(c, mi, 0), kc_attention_mma_key_tiles(c, mi, tiles_q - 1),
             (long long)kc_attention_mma_cycles(gpu, c, mi), (long long)kc_attention_mma_cycles(gpu, c, mi, false));
    }
    const int pick = kc_attention_mma_pick_rows(gpu, c);
    const KcAttentionMmaParts parts = kc_attention_mma_parts(gpu, c, pick == 64 ? 1 : 2);
    printf("pick %d parts %d waves %lld tiles %lld\n", pick, parts.parts, (long long)parts.waves, (long long)parts.tiles);
  }
  return 0;
}
