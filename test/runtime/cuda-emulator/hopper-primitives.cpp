// The emulator's Hopper primitives on their own (hopper-sync.h, hopper-tma.h, hopper-wgmma.h), for
// test/runtime/cuda-emulator.test.ts: what a TMA copy writes, when it writes it, and the misuses the
// emulator must refuse with the reason instead of computing something.
//
//   hopper-primitives MODE OUT
//   tma     a 16 × 64 box of a [20, 72] 16-bit tensor from (row 10, column 16) — rows 20.. and columns
//           72.. lie outside — with the 128-byte swizzle, to a shared address 384 past a 1024-byte
//           boundary; OUT: the 2048 bytes of shared memory as written (element (r, c) of the tensor is
//           r · 256 + c)
//   plain   the same box without a swizzle
//   early   the box read before and after the wait on its barrier; OUT: both 2048-byte images
//   MISUSE  (must stop the emulator) arrivals, tx, uninit, deadlock, unfenced, wgmma-fence, wgmma-exit,
//           wgmma-exited, descriptor, named, maxnreg
#include "host-runtime.h"
#include "../../../kernels/cuda/hopper.cuh"
#include <string>

namespace {
constexpr int ROWS = 20, COLS = 72, BOX_R = 16, BOX_C = 64, BOX_BYTES = BOX_R * BOX_C * 2;
std::string mode;
CUtensorMap map;

uint32_t aligned_base() { return (kc_smem_addr(kc_dynamic_smem()) + 1023) & ~1023u; }
uint8_t* at(uint32_t addr) { return kc_dynamic_smem() + (addr - kc_smem_addr(kc_dynamic_smem())); }

__global__ void copy_kernel(uint8_t* out) {
  __shared__ __align__(8) uint64_t bar;
  const uint32_t b = kc_smem_addr(&bar), dst = aligned_base() + 384;
  if (threadIdx.x == 0) {
    kc_mbar_init(b, 1);
    kc_fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  kc_mbar_expect_tx(b, mode == "tx" ? BOX_BYTES / 2 : BOX_BYTES);
  kc_tma_load_2d(dst, &map, b, 16, 10);
  if (mode == "early") memcpy(out + BOX_BYTES, at(dst), BOX_BYTES);
  kc_mbar_wait(b, 0);
  memcpy(out, at(dst), BOX_BYTES);
}

__global__ void barrier_kernel(uint8_t*) {
  __shared__ __align__(8) uint64_t bar;
  const uint32_t b = kc_smem_addr(&bar);
  if (mode == "uninit") kc_mbar_wait(b + 8, 0);
  if (threadIdx.x == 0) {
    kc_mbar_init(b, mode == "deadlock" ? 2 : 1);
    if (mode != "unfenced") kc_fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (mode == "arrivals") {
    kc_mbar_expect_tx(b, 64);
    kc_mbar_arrive(b);
  } else if (mode == "unfenced") {
    kc_mbar_expect_tx(b, BOX_BYTES);
    kc_tma_load_2d(aligned_base(), &map, b, 0, 0);
  } else if (mode == "deadlock") {
    kc_mbar_arrive(b);
    kc_mbar_wait(b, 0);
  }
}

// 128 threads: one warpgroup.
__global__ void warpgroup_kernel(uint8_t*) {
  float d[8] = {};
  const uint64_t desc = kc_desc_kmajor_sw128(aligned_base() + (mode == "descriptor" ? 256 : 0));
  if (mode == "named") {
    if (threadIdx.x < 64) kc_bar_arrive(1, 128);
    return;
  }
  if (mode == "maxnreg") {
    if (threadIdx.x < 32) kc_setmaxnreg_dec<40>();
    return;
  }
  if (mode == "wgmma-exited" && threadIdx.x >= 96) return;
  if (mode != "wgmma-fence") kc_wgmma_fence();
  kc_wgmma_ss<16>(d, desc, desc, 0);
  if (mode == "wgmma-exit") return;
  kc_wgmma_commit();
  kc_wgmma_wait<0>();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: hopper-primitives MODE OUT");
  mode = argv[1];
  uint16_t* tensor = (uint16_t*)kc_emu::device_alloc(ROWS * COLS * 2);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) tensor[r * COLS + c] = (uint16_t)(r * 256 + c);
  const cuuint64_t dims[2] = {COLS, ROWS}, strides[1] = {COLS * 2};
  const cuuint32_t box[2] = {BOX_C, BOX_R}, ones[2] = {1, 1};
  if (kc_emu_encode_tiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, tensor, dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          mode == "plain" ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    kc_emu::fail("encoding the tensor map failed");
  std::vector<uint8_t> out(2 * BOX_BYTES, 0);
  const size_t smem = 4096;
  if (mode == "tma" || mode == "plain" || mode == "early" || mode == "tx") KC_LAUNCH(copy_kernel, 1, 32, smem, 0)(out.data());
  else if (mode == "arrivals" || mode == "uninit" || mode == "deadlock" || mode == "unfenced") KC_LAUNCH(barrier_kernel, 1, 64, smem, 0)(out.data());
  else KC_LAUNCH(warpgroup_kernel, 1, 128, 16384, 0)(out.data());
  kc_emu::write_file(argv[2], out.data(), mode == "early" ? 2 * BOX_BYTES : BOX_BYTES);
  return 0;
}
