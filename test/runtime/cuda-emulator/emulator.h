// A CPU emulator for kino's CUDA kernels, so that their indexing (gathers, bounds, swizzles, fragment
// layouts, the cp.async ring, epilogues) is tested on machines without a GPU. The kernel files are
// compiled as they are, by the host compiler, with KC_EMULATE defined (kernels/cuda/common.cuh then
// leaves out the primitives defined here). Not a model of timing: of what each thread computes.
//
// - A block's threads are fibers on one OS thread (x86-64: a six-register stack switch, announced to
//   AddressSanitizer), switched at every barrier, so blocks run one after another and a kernel's
//   static __shared__ arrays can be plain statics.
// - __syncthreads waits for every live thread of the block; warp collectives (ldmatrix, mma.sync,
//   __shfl_xor_sync) exchange operands through per-thread slots (two sets, by barrier parity) at one
//   warp barrier, with the operand layouts of the PTX ISA (m8n8 .b16 matrices; m16n8k16 A row-major,
//   B column-major, f32 C/D) and the shuffles' lane rules of the CUDA programming guide. A collective
//   needs the whole warp: a full mask and 32 live threads, or the emulator stops with the reason
//   (collectives.h).
// - cp.async copies are performed at the cp.async.wait_group that covers them, the latest moment the
//   hardware allows, so a read of a stage before its wait sees the previous contents; dynamic shared
//   memory starts as 0xFF bytes (a NaN in bf16, f16 and f32), so unfilled data shows in the result.
// - mma.sync multiplies exactly (double) and rounds once to f32: real tensor cores round their sums
//   differently, which the precision promises' f32-accumulation terms cover.
// Built with -fsanitize=address: the "device" buffers are host allocations of their exact size, so
// an access outside one is reported.
// - KC_PLANTED(n) (common.cuh) is true when the environment has KC_EMU_PLANT=n: the tests plant a
//   known bug in a kernel that way and check that their cases catch it.
// A harness may be several translation units (one per kernel file, each with this header first).
#pragma once
#define KC_EMULATE 1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

// Kernel source, seen by the host compiler.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define KC_PLANTED(n) (kc_emu::planted == (n))

// kc_emu_switch(save, load): saves the callee-saved registers on this stack and its pointer in *save,
// then continues on the stack `load` (made by kc_emu_switch, or by start() for a new fiber).
extern "C" void kc_emu_switch(void** save, void* load);
asm(R"(
  .text
  .weak kc_emu_switch
  .type kc_emu_switch, @function
kc_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kc_emu_switch, .-kc_emu_switch
)");

namespace kc_emu {

[[noreturn]] inline void fail(const char* what) {
  fprintf(stderr, "emulator: %s\n", what);
  abort();
}

struct Copy {
  uint32_t dst;
  const void* src;
  int bytes;
};

struct Thread {
  void* sp = nullptr;  // saved stack pointer while switched out
  char* stack = nullptr;
  uint3 tid;
  int flat;
  bool done = false;
  std::vector<Copy> open;                  // cp.async copies not yet committed
  std::vector<std::vector<Copy>> groups;   // committed groups, oldest first
  uint32_t slot[2][8];  // operands a warp collective exchanges, by the parity of the warp's barrier count
};

struct Block {
  std::vector<Thread> threads;
  void* scheduler_sp = nullptr;
  int current = 0, live = 0;
  int arrived = 0;
  unsigned generation = 0;
  int warp_arrived[32] = {}, warp_live[32] = {};
  int warp_released_live[32] = {};  // the warp's live threads when its barrier last let it through
  unsigned warp_generation[32] = {};
  std::vector<uint8_t> smem;
};

inline Block* block = nullptr;
inline const int planted = getenv("KC_EMU_PLANT") ? atoi(getenv("KC_EMU_PLANT")) : 0;
inline uint3 block_idx, block_dim, grid_dim;
inline std::function<void()> body;
constexpr size_t STACK_BYTES = 128 * 1024;
// Fiber stacks, kept from block to block (allocating them per block costs more than running it).
inline std::vector<std::unique_ptr<char[]>> stacks;

inline Thread& me() { return block->threads[block->current]; }

// The scheduler's stack, as AddressSanitizer reports it when a fiber first starts.
inline const void* main_bottom = nullptr;
inline size_t main_size = 0;
#if defined(__SANITIZE_ADDRESS__)
inline void before_switch(void** fake, const void* bottom, size_t size) { __sanitizer_start_switch_fiber(fake, bottom, size); }
inline void after_switch(void* fake, const void** bottom, size_t* size) { __sanitizer_finish_switch_fiber(fake, bottom, size); }
#else
inline void before_switch(void**, const void*, size_t) {}
inline void after_switch(void*, const void**, size_t*) {}
#endif

// Fiber → scheduler (a fiber that finished passes finished = true: its fake stack goes).
inline void yield(bool finished = false) {
  void* fake = nullptr;
  before_switch(finished ? nullptr : &fake, main_bottom, main_size);
  kc_emu_switch(&me().sp, block->scheduler_sp);
  after_switch(fake, nullptr, nullptr);
}

inline void perform(const Copy& c) {
  if (c.dst % 16 || c.dst + 16 > block->smem.size()) fail("cp.async destination outside dynamic shared memory");
  uint8_t* d = block->smem.data() + c.dst;
  if (c.bytes) memcpy(d, c.src, (size_t)c.bytes);
  memset(d + c.bytes, 0, (size_t)(16 - c.bytes));
}

inline void barrier() {
  const unsigned g = block->generation;
  if (++block->arrived == block->live) {
    block->arrived = 0;
    block->generation++;
  } else {
    while (block->generation == g) yield();
  }
}

inline void warp_barrier() {
  const int w = me().flat / 32;
  const unsigned g = block->warp_generation[w];
  if (++block->warp_arrived[w] == block->warp_live[w]) {
    block->warp_arrived[w] = 0;
    block->warp_released_live[w] = block->warp_live[w];
    block->warp_generation[w]++;
  } else {
    while (block->warp_generation[w] == g) yield();
  }
}

[[noreturn]] inline void thread_main() {
  after_switch(nullptr, &main_bottom, &main_size);
  body();
  Thread& t = me();
  for (auto& g : t.groups) for (auto& c : g) perform(c);
  for (auto& c : t.open) perform(c);
  t.done = true;
  block->live--;
  const int w = t.flat / 32;
  block->warp_live[w]--;
  // A thread that exits no longer holds up a barrier the others wait at.
  if (block->arrived && block->arrived == block->live) block->arrived = 0, block->generation++;
  if (block->warp_arrived[w] && block->warp_arrived[w] == block->warp_live[w])
    block->warp_arrived[w] = 0, block->warp_released_live[w] = block->warp_live[w], block->warp_generation[w]++;
  yield(true);
  fail("a finished fiber was resumed");
}

// A fresh fiber's stack: six zero registers for kc_emu_switch to pop, then thread_main as the return
// address, placed so that thread_main starts with the stack alignment of a called function.
inline void* start(Thread& t) {
  uintptr_t top = ((uintptr_t)t.stack + STACK_BYTES) & ~(uintptr_t)15;
  void** sp = (void**)(top - 64);
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  sp[6] = (void*)&thread_main;
  return sp;
}

inline void run_block(dim3 dim, size_t smem_bytes) {
  Block b;
  block = &b;
  const int n = (int)(dim.x * dim.y * dim.z);
  if (n % 32) fail("block size not a multiple of 32");
  b.smem.assign(smem_bytes, 0xFF);
  b.threads.resize(n);
  b.live = n;
  for (int w = 0; w < n / 32; w++) b.warp_live[w] = 32;
  for (int i = 0; i < n; i++) {
    Thread& t = b.threads[i];
    t.flat = i;
    t.tid = make_uint3(i % dim.x, (i / dim.x) % dim.y, i / (dim.x * dim.y));
    while ((int)stacks.size() <= i) stacks.emplace_back(new char[STACK_BYTES]);
    t.stack = stacks[i].get();
    t.sp = start(t);
  }
  while (b.live > 0) {
    bool progressed = false;
    for (int i = 0; i < n; i++) {
      if (b.threads[i].done) continue;
      b.current = i;
      void* fake = nullptr;
      before_switch(&fake, b.threads[i].stack, STACK_BYTES);
      kc_emu_switch(&b.scheduler_sp, b.threads[i].sp);
      after_switch(fake, nullptr, nullptr);
      progressed = true;
    }
    if (!progressed) fail("no thread can run");
  }
  block = nullptr;
}

// KC_LAUNCH(kernel, grid, block, smem, stream)(args...): every block of the grid in turn.
template <typename Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, threads;
  size_t smem;
  template <typename... Args>
  void operator()(Args... args) {
    grid_dim = make_uint3(grid.x, grid.y, grid.z);
    block_dim = make_uint3(threads.x, threads.y, threads.z);
    body = [&] { kernel(args...); };
    printf("launch grid %u,%u,%u threads %u smem %zu\n", grid.x, grid.y, grid.z, threads.x * threads.y * threads.z, smem);
    for (unsigned z = 0; z < grid.z; z++)
      for (unsigned y = 0; y < grid.y; y++)
        for (unsigned x = 0; x < grid.x; x++) {
          block_idx = make_uint3(x, y, z);
          run_block(threads, smem);
        }
  }
};
template <typename Kernel>
Launch<Kernel> launch(Kernel k, dim3 grid, dim3 threads, size_t smem) {
  return Launch<Kernel>{k, grid, threads, smem};
}

}  // namespace kc_emu

#include "collectives.h"

#define threadIdx (kc_emu::me().tid)
#define blockIdx (kc_emu::block_idx)
#define blockDim (kc_emu::block_dim)
#define gridDim (kc_emu::grid_dim)
#define __syncthreads() kc_emu::barrier()
#define KC_LAUNCH(kernel, grid, threads, smem, stream) kc_emu::launch(kernel, dim3(grid), dim3(threads), (smem))

// cuda_runtime.h's typed overload is for nvcc only; kernel files call it with kernel pointers.
template <typename T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute((const void*)kernel, attr, value);
}

// CUDA device functions the host library lacks.
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

#include "../../../kernels/cuda/common.cuh"

// The primitives common.cuh leaves to the emulator.
inline uint32_t kc_smem_addr(const void* p) { return (uint32_t)((const uint8_t*)p - kc_emu::block->smem.data()); }
inline uint8_t* kc_dynamic_smem() { return kc_emu::block->smem.data(); }
inline void kc_cp_async16(uint32_t dst, const void* src, int src_bytes) {
  if (src_bytes < 0 || src_bytes > 16) kc_emu::fail("cp.async source size outside 0..16");
  kc_emu::me().open.push_back({dst, src, src_bytes});
}
inline void kc_cp_async_commit() {
  auto& t = kc_emu::me();
  t.groups.push_back(std::move(t.open));
  t.open.clear();
}
template <int N>
inline void kc_cp_async_wait() {
  auto& t = kc_emu::me();
  while ((int)t.groups.size() > N) {
    for (auto& c : t.groups.front()) kc_emu::perform(c);
    t.groups.erase(t.groups.begin());
  }
}
inline void kc_ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  uint32_t r[4];
  kc_emu::ldmatrix_x4(addr, r, false);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
inline void kc_ldmatrix_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  uint32_t r[4];
  kc_emu::ldmatrix_x4(addr, r, true);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
template <bool IS_F16>
inline void kc_mma_16816(float* d, const uint32_t* a, const uint32_t* b) {
  kc_emu::mma_16816(d, a, b, IS_F16);
}
