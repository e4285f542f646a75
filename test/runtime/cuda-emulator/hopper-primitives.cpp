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
// TMA stores, into [20, 72] 16-bit tensors B and C first filled with 0xBEEF (OUT: their images, each
// 2880 bytes, in the order given):
//   store         the box above loaded, then stored from shared memory to B at (row 10, column 16) and
//                 to C at (row -3, column -8): rows and columns past either edge are not written; OUT: B, C
//   store-swizzle 32 threads write element (y, j) of a 16 × 64 box as y·64 + j + 1 with st.shared where the
//                 programming guide's 128-byte swizzle puts it, fence, and thread 0 stores it to B at (0, 0)
//   store-plain   the same rows unswizzled, through a map without a swizzle
//   store-groups  two boxes (y·64 + j + 1 and + 0x4000) stored to B and C in two bulk async-groups;
//                 OUT: B, C after wait_group.read 2 and 1, then B, C after wait_group 0
//   store-late    the box staged, stored to B and committed, then overwritten (plain C++ writes, which
//                 the checks do not see) before the wait: B gets what shared memory holds at the wait
//   wgmma-cp-async-fenced  128 threads fill the wgmma operand tile with cp.async, wait for it, fence the
//                 async proxy, sync, and multiply it: runs
//   MISUSE  (must stop the emulator) arrivals, tx, uninit, deadlock, unfenced, wgmma-fence, wgmma-exit,
//           wgmma-exited, descriptor, named, maxnreg, wgmma-cp-async (the same without the fence); store-unfenced (no fence.proxy.async after the
//           st.shared), store-fenced-elsewhere (thread 0 fences, thread 5 wrote), store-reuse (st.shared
//           into the source before the wait), store-exit (no wait before exit), store-misaligned;
//           named-warp (half of each warp at a named barrier), maxnreg-range (setmaxnreg 20),
//           maxnreg-raise (.dec above the launch's 248), maxnreg-lower (.inc below it), maxnreg-pool (384
//           threads ending with 32 + 2 × 240 registers a thread, over the 168 × 384 they started with),
//           cp-async-misaligned (a source 8 bytes off); and launches the device refuses, which must fail
//           the launch: smem-default (64 KiB of dynamic shared memory without opting in), smem-optin
//           (opting into 227 KiB, which leaves nothing for static shared memory)
//   maxnreg-fits  384 threads ending with 24 + 2 × 240 a thread (the attention kernel's split): runs
//   smem-opted-in 64 KiB after opting into it: runs
#include "host-runtime.h"
#include "../../../kernels/cuda/hopper.cuh"
#include <string>

namespace {
constexpr int ROWS = 20, COLS = 72, BOX_R = 16, BOX_C = 64, BOX_BYTES = BOX_R * BOX_C * 2, TENSOR_BYTES = ROWS * COLS * 2;
std::string mode;
CUtensorMap map, map_b, map_c;
uint16_t *tensor_b, *tensor_c;

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

// Stages element (y, j) of a box at `dst` as y·64 + j + 1 + add with st.shared, 32 threads taking rows
// in turn: where the 128-byte swizzle puts it (chunk j/8 of row y at ((y + dst/128) % 8) ^ (j/8)), or
// row after row for the unswizzled map.
void stage(uint32_t dst, uint16_t add) {
  const bool swizzled = mode != "store-plain";
  for (int y = (int)threadIdx.x / 8; y < BOX_R; y += 4)
    for (int j = 2 * (threadIdx.x % 8); j < BOX_C; j += 16) {
      const uint32_t chunk = swizzled ? ((y + dst / 128) % 8) ^ (j / 8) : j / 8;
      const uint32_t v = (uint32_t)(y * 64 + j + 1 + add) | (uint32_t)(y * 64 + j + 2 + add) << 16;
      kc_st_shared_b32(dst + y * 128 + chunk * 16 + (j % 8) * 2, v);
    }
}

__global__ void store_kernel(uint8_t* out) {
  __shared__ __align__(8) uint64_t bar;
  const uint32_t b = kc_smem_addr(&bar), dst = aligned_base() + 384;
  if (mode == "store") {
    if (threadIdx.x == 0) {
      kc_mbar_init(b, 1);
      kc_fence_mbar_init();
      kc_mbar_expect_tx(b, BOX_BYTES);
      kc_tma_load_2d(dst, &map, b, 16, 10);
      kc_mbar_wait(b, 0);
      kc_tma_store_2d(&map_b, dst, 16, 10);
      kc_tma_store_2d(&map_c, dst, -8, -3);
      kc_bulk_commit();
      kc_bulk_wait_read<0>();
    }
    return;
  }
  if (mode == "store-fenced-elsewhere") {
    if (threadIdx.x == 5) kc_st_shared_b32(dst, 7);
    if (threadIdx.x == 0) kc_fence_proxy_async();
    __syncthreads();
    if (threadIdx.x == 0) kc_tma_store_2d(&map_b, dst, 0, 0);
    return;
  }
  stage(dst, 0);
  if (mode == "store-groups") stage(dst + BOX_BYTES, 0x4000);
  if (mode != "store-unfenced") kc_fence_proxy_async();
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (mode == "store-misaligned") kc_tma_store_2d(&map_b, dst + 64, 0, 0);
  kc_tma_store_2d(&map_b, dst, 0, 0);
  kc_bulk_commit();
  if (mode == "store-groups") {
    kc_tma_store_2d(&map_c, dst + BOX_BYTES, 0, 0);
    kc_bulk_commit();
    kc_bulk_wait_read<2>();  // both groups may stay pending
    kc_bulk_wait_read<1>();  // the older group (B's store) retires
    memcpy(out, tensor_b, TENSOR_BYTES), memcpy(out + TENSOR_BYTES, tensor_c, TENSOR_BYTES);
    kc_bulk_wait<0>();
    memcpy(out + 2 * TENSOR_BYTES, tensor_b, TENSOR_BYTES), memcpy(out + 3 * TENSOR_BYTES, tensor_c, TENSOR_BYTES);
    return;
  }
  if (mode == "store-reuse") kc_st_shared_b32(dst + 256, 0);
  if (mode == "store-late") memset(at(dst), 0x11, BOX_BYTES);
  if (mode != "store-exit") kc_bulk_wait_read<0>();
}

// 128 threads: one warpgroup.
__global__ void warpgroup_kernel(uint8_t*) {
  float d[8] = {};
  const uint64_t desc = kc_desc_kmajor_sw128(aligned_base() + (mode == "descriptor" ? 256 : 0));
  if (mode == "named") {
    if (threadIdx.x < 64) kc_bar_arrive(1, 128);
    return;
  }
  if (mode == "named-warp") {
    if (threadIdx.x % 32 < 16) kc_bar_sync(1, 64);
    return;
  }
  if (mode == "maxnreg") {
    if (threadIdx.x < 32) kc_setmaxnreg_dec<40>();
    return;
  }
  if (mode == "maxnreg-range") kc_setmaxnreg_dec<20>();
  if (mode == "maxnreg-raise") kc_setmaxnreg_dec<256>();
  if (mode == "maxnreg-lower") kc_setmaxnreg_inc<200>();
  if (mode.rfind("maxnreg", 0) == 0) return;
  if (mode == "wgmma-exited" && threadIdx.x >= 96) return;
  if (mode.rfind("wgmma-cp-async", 0) == 0 || mode == "cp-async-misaligned") {  // the A and B tile's first 16 rows, one 16-byte chunk a thread
    kc_cp_async16(aligned_base() + 16 * threadIdx.x, tensor_b + 8 * threadIdx.x + (mode == "cp-async-misaligned" ? 4 : 0), 16);
    kc_cp_async_commit();
    kc_cp_async_wait<0>();
    if (mode == "wgmma-cp-async-fenced") kc_fence_proxy_async();
    __syncthreads();
  }
  if (mode != "wgmma-fence") kc_wgmma_fence();
  kc_wgmma_ss<16>(d, desc, desc, 0);
  if (mode == "wgmma-exit") return;
  kc_wgmma_commit();
  kc_wgmma_wait<0>();
}
// 384 threads, three warpgroups: the producer gives registers away, the two consumers take them.
__global__ void regs_kernel(uint8_t*) {
  if (threadIdx.x < 128) {
    if (mode == "maxnreg-pool") kc_setmaxnreg_dec<32>();
    else kc_setmaxnreg_dec<24>();
  } else {
    kc_setmaxnreg_inc<240>();
  }
}

__global__ void empty_kernel(uint8_t*) {}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: hopper-primitives MODE OUT");
  mode = argv[1];
  uint16_t* tensor = (uint16_t*)kc_emu::device_alloc(TENSOR_BYTES);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) tensor[r * COLS + c] = (uint16_t)(r * 256 + c);
  tensor_b = (uint16_t*)kc_emu::device_alloc(TENSOR_BYTES), tensor_c = (uint16_t*)kc_emu::device_alloc(TENSOR_BYTES);
  for (int i = 0; i < ROWS * COLS; i++) tensor_b[i] = tensor_c[i] = 0xBEEF;
  const cuuint64_t dims[2] = {COLS, ROWS}, strides[1] = {COLS * 2};
  const cuuint32_t box[2] = {BOX_C, BOX_R}, ones[2] = {1, 1};
  const bool plain = mode == "plain" || mode == "store-plain";
  for (auto [m, t] : {std::pair{&map, tensor}, std::pair{&map_b, tensor_b}, std::pair{&map_c, tensor_c}})
    if (kc_emu_encode_tiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, t, dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            plain ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      kc_emu::fail("encoding the tensor map failed");
  std::vector<uint8_t> out(4 * TENSOR_BYTES, 0);
  size_t out_bytes = mode == "early" ? 2 * BOX_BYTES : BOX_BYTES;
  const size_t smem = 8192;
  if (mode == "tma" || mode == "plain" || mode == "early" || mode == "tx") KC_LAUNCH(copy_kernel, 1, 32, smem, 0)(out.data());
  else if (mode == "arrivals" || mode == "uninit" || mode == "deadlock" || mode == "unfenced") KC_LAUNCH(barrier_kernel, 1, 64, smem, 0)(out.data());
  else if (mode == "maxnreg-pool" || mode == "maxnreg-fits") KC_LAUNCH(regs_kernel, 1, 384, 0, 0)(out.data());
  else if (mode.rfind("smem-", 0) == 0) {
    if (mode != "smem-default" && cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       mode == "smem-optin" ? 227 * 1024 : 64 * 1024) != cudaSuccess)
      kc_emu::fail("cudaFuncSetAttribute refused the opt-in");
    KC_LAUNCH(empty_kernel, 1, 32, 64 * 1024, 0)(out.data());
    if (cudaGetLastError() != cudaSuccess) kc_emu::fail("the launch was refused");
  } else if (mode.rfind("store", 0) == 0) {
    KC_LAUNCH(store_kernel, 1, 32, smem, 0)(out.data());
    if (mode != "store-groups") {
      memcpy(out.data(), tensor_b, TENSOR_BYTES), memcpy(out.data() + TENSOR_BYTES, tensor_c, TENSOR_BYTES);
      out_bytes = mode == "store" ? 2 * TENSOR_BYTES : TENSOR_BYTES;
    } else {
      out_bytes = 4 * TENSOR_BYTES;
    }
  } else KC_LAUNCH(warpgroup_kernel, 1, 128, 16384, 0)(out.data());
  kc_emu::write_file(argv[2], out.data(), out_bytes);
  return 0;
}
