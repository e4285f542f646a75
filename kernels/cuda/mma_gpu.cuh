// A GPU as the mma.sync kernels' host-side models see it (gemm_mma_tiles.cuh picks the GEMM's block tile,
// conv_mma_tiles.cuh the convolution's, attention_mma_tiles.cuh the attention's query tiling): its
// figures, the tensor cores' rate, how many blocks of a kernel one SM holds, and the time of a grid in
// waves. Plain C++ without CUDA, so that the tests run the models on the figures of GPUs their machine
// does not have.
#pragma once
#include <stdint.h>

// What the models know of a GPU (KcContext's fields, read in kc_create from cudaDeviceProp).
struct KcMmaGpu {
  int sms;                 // multiprocessors
  int sm_major, sm_minor;  // compute capability: the tensor cores' rate
  int smem_per_sm;         // bytes of shared memory an SM shares among its blocks
  int smem_per_block;      // the most one block may opt into
  int smem_reserved;       // bytes the runtime keeps for itself per block
  int regs_per_sm;         // 32-bit registers
  int threads_per_sm;      // resident threads
};

// Shared memory moves 128 bytes a cycle per SM (32 banks of 4 bytes) on every part from sm_80 on.
constexpr int KC_MMA_SMEM_BYTES_PER_CYCLE = 128;

// SM cycles per m16n8k16 with f32 accumulation: 2 on A100 (1024 FMA a cycle), 1 on H100/H200 (mma.sync
// at the tensor cores' full rate), 4 or more on every other part (A10, L40S: 4; the GeForce parts halve
// f32 accumulation: 8). From 1.5 on every GEMM tile is bound by the tensor cores rather than shared
// memory, and so is each attention tiling from 2.5, so any such rate picks the same tiles and 4 stands
// for all of them.
static inline int kc_mma_tensor_cycles(int sm_major, int sm_minor) {
  if (sm_major == 9) return 1;
  return sm_major == 8 && sm_minor == 0 ? 2 : 4;
}

// Blocks of a kernel one SM holds: the fewest its shared memory (the block's dynamic shared memory plus
// the runtime's reserve, 0 over the per-block opt-in limit), registers (allocated per warp in units of
// 256) and thread slots allow.
static inline int kc_mma_sm_blocks(const KcMmaGpu& g, int smem, int regs_per_thread, int threads) {
  if (smem > g.smem_per_block) return 0;
  const int by_smem = g.smem_per_sm / (smem + g.smem_reserved);
  const int warp_regs = (regs_per_thread * 32 + 255) / 256 * 256;
  const int by_regs = g.regs_per_sm / (warp_regs * (threads / 32));
  const int by_threads = g.threads_per_sm / threads;
  const int b = by_smem < by_regs ? by_smem : by_regs;
  return b < by_threads ? b : by_threads;
}

// A grid of `tiles` blocks, `b` to an SM, each block taking `mmas` m16n8k16 and moving `smem_bytes` of
// shared memory (ldmatrix reads and cp.async writes) per K step: its time in SM cycles per K step, as
// waves · b · the greater of the tensor cores' and shared memory's cycles — the two overlap, the slower
// one sets the pace, and the b blocks of a wave share both. INT64_MAX where no block fits (b = 0).
static inline int64_t kc_mma_wave_cycles(const KcMmaGpu& g, int b, int64_t tiles, int mmas, int smem_bytes) {
  if (b == 0 || g.sms <= 0) return INT64_MAX;
  const int64_t slots = (int64_t)g.sms * b, waves = (tiles + slots - 1) / slots;
  const int64_t tensor = (int64_t)mmas * kc_mma_tensor_cycles(g.sm_major, g.sm_minor);
  const int64_t smem = (smem_bytes + KC_MMA_SMEM_BYTES_PER_CYCLE - 1) / KC_MMA_SMEM_BYTES_PER_CYCLE;
  return waves * b * (tensor > smem ? tensor : smem);
}
