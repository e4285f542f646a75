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
//   They write through the generic proxy: wgmma (the async proxy) may read what they wrote only after
//   a fence.proxy.async of the thread that issued them (hopper-tma-store.h, hopper-wgmma.h).
// - mma.sync multiplies exactly (double) and rounds once to f32: real tensor cores round their sums
//   differently, which the precision promises' f32-accumulation terms cover.
// Built with -fsanitize=address: the "device" buffers are host allocations of their exact size, so
// an access outside one is reported. (The whole library built for the emulator, emulated-library.ts,
// is loaded into a test process and has UBSan only.)
// - KC_PLANTED(n) (common.cuh) is true when the environment has KC_EMU_PLANT=n (in the emulated library:
//   after kc_emu_plant(n)): the tests plant a known bug in a kernel that way and check that their cases
//   catch it.
// - Hopper (sm_90a): mbarriers and named barriers (hopper-sync.h), TMA tensor copies (hopper-tma.h), TMA
//   stores with their bulk async-groups and proxy fence (hopper-tma-store.h) and wgmma (hopper-wgmma.h)
//   — each performed at the latest moment the PTX ISA allows, so that a kernel reading data before its
//   barrier or wait, or rewriting it before the wait of what reads it, shows it. With KC_EMU_WGMMA_RUNS
//   set, each block reports which warpgroup issued wgmma when (a ping-pong kernel's turns).
// - Every wait yields its fiber (a spin on an mbarrier cannot hang the one OS thread); a scheduler round
//   in which every live thread waits and nothing changed is a deadlock, reported with what each waits for.
// - A launch with more than 48 KiB of dynamic shared memory runs only after cudaFuncSetAttribute
//   (host-runtime.h) opted the kernel into that much; otherwise it is refused as the device refuses it:
//   the kernel does not run and cudaGetLastError answers cudaErrorInvalidValue. cp.async addresses must
//   be 16-byte aligned (sm80-primitives.h).
// - Shared addresses: dynamic shared memory starts at DYN_BASE (128-byte aligned, not 1024: a kernel that
//   needs a 1024-byte swizzle atom must align it itself, as on the GPU); a static __shared__ object gets
//   an address in a window of its own, good for mbarriers only.
// A harness may be several translation units (one per kernel file, each with this header first).
#pragma once
#define KC_EMULATE 1
#include <cuda.h>
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
#include <string>
#include <unordered_map>
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
#undef __grid_constant__
#define __grid_constant__
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

}  // namespace kc_emu
#include "hopper-state.h"
namespace kc_emu {

struct Thread {
  void* sp = nullptr;  // saved stack pointer while switched out
  char* stack = nullptr;
  uint3 tid;
  int flat;
  bool done = false;
  std::vector<Copy> open;                  // cp.async copies not yet committed
  std::vector<std::vector<Copy>> groups;   // committed groups, oldest first
  uint32_t slot[2][8];  // operands a warp collective exchanges, by the parity of the warp's barrier count
  const char* waiting = nullptr;  // what the thread waits for while switched out at a wait, else null
  HopperThread hopper;
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
  // Warpgroups (4 warps): the wgmma collectives' barrier, as the warps' above.
  int wg_arrived[8] = {}, wg_live[8] = {}, wg_released_live[8] = {};
  unsigned wg_generation[8] = {};
  unsigned long changes = 0;  // bumped by every event that can let a waiting thread go on
  std::vector<uint8_t> smem;
  HopperBlock hopper;
};

// Dynamic shared memory per block (CUDA programming guide, "Technical Specifications per Compute
// Capability", 9.0): 48 KiB without opting in, at most 227 KiB with cudaFuncSetAttribute
// (MaxDynamicSharedMemorySize), static and dynamic together. The emulator cannot see a kernel's static
// __shared__ bytes; every kernel here keeps them (its mbarriers) within STATIC_SMEM_MAX, which
// cuda-ptx.test.ts holds ptxas's reports to, so an opt-in up to SMEM_OPTIN - STATIC_SMEM_MAX fits.
constexpr int SMEM_DEFAULT = 48 * 1024, SMEM_OPTIN = 227 * 1024, STATIC_SMEM_MAX = 256;
// What cudaFuncSetAttribute (host-runtime.h) opted each kernel into, by its address.
inline std::unordered_map<const void*, int> smem_opted_in;
// The error of the last launch the device would refuse, until cudaGetLastError (host-runtime.h) reads it.
inline cudaError_t launch_error = cudaSuccess;

inline Block* block = nullptr;
// The planted bug switched on: KC_EMU_PLANT's, or the last kc_emu_plant's in the emulated library
// (library-runtime.cpp: a test process loads it once and plants one bug at a time).
inline int planted = getenv("KC_EMU_PLANT") ? atoi(getenv("KC_EMU_PLANT")) : 0;
inline uint3 block_idx, block_dim, grid_dim;
inline std::function<void()> body;
constexpr size_t STACK_BYTES = 128 * 1024;
// The shared address of dynamic shared memory's first byte, and the window of static __shared__ objects.
constexpr uint32_t DYN_BASE = 384, STATIC_BASE = 0x80000000u;
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

// A thread that cannot go on until another does something: `what` names it for a deadlock report.
inline void wait_yield(const char* what) {
  me().waiting = what;
  yield();
  me().waiting = nullptr;
}

// `bytes` of dynamic shared memory at shared address `addr`, or the emulator stops: `what` is outside.
inline uint8_t* smem_at(uint32_t addr, size_t bytes, const char* what) {
  if (addr < DYN_BASE || addr - DYN_BASE > block->smem.size() || bytes > block->smem.size() - (addr - DYN_BASE)) {
    fprintf(stderr, "emulator: %s outside dynamic shared memory (shared address %u, %zu bytes; dynamic: %u .. %zu)\n", what, addr,
            bytes, DYN_BASE, DYN_BASE + block->smem.size());
    abort();
  }
  return block->smem.data() + (addr - DYN_BASE);
}

inline void perform(const Copy& c) {
  if (c.dst % 16) fail("cp.async destination not 16-byte aligned");
  uint8_t* d = smem_at(c.dst, 16, "cp.async destination");
  if (c.bytes) memcpy(d, c.src, (size_t)c.bytes);
  memset(d + c.bytes, 0, (size_t)(16 - c.bytes));
  cp_async_landed(c.dst);
}

inline void barrier() {
  const unsigned g = block->generation;
  block->changes++;
  if (++block->arrived == block->live) {
    block->arrived = 0;
    block->generation++;
  } else {
    while (block->generation == g) wait_yield("__syncthreads");
  }
}

inline void warp_barrier() {
  const int w = me().flat / 32;
  const unsigned g = block->warp_generation[w];
  block->changes++;
  if (++block->warp_arrived[w] == block->warp_live[w]) {
    block->warp_arrived[w] = 0;
    block->warp_released_live[w] = block->warp_live[w];
    block->warp_generation[w]++;
  } else {
    while (block->warp_generation[w] == g) wait_yield("a warp collective");
  }
}

// The barrier of a warpgroup's collectives (wgmma.wait_group): the last thread to arrive lets every
// other thread of the block run once more (the asynchronous work completes as late as it may: a
// producer that refills an operand too early does it before the work reads it), then runs `on_release`
// for the whole warpgroup while the others are parked, and lets them go. Every one of the 128 threads
// must arrive: a warpgroup with exited threads stops the emulator.
template <typename F>
inline void warpgroup_barrier(const char* what, F&& on_release) {
  const int g = me().flat / 128;
  const unsigned gen = block->wg_generation[g];
  block->changes++;
  if (++block->wg_arrived[g] == block->wg_live[g]) {
    if (block->wg_live[g] != 128) {
      fprintf(stderr, "emulator: %s in a warpgroup of %d live threads: all 128 must take part\n", what, block->wg_live[g]);
      abort();
    }
    wait_yield(what);  // one scheduler round (a change was counted above: not a deadlock)
    on_release();
    block->wg_arrived[g] = 0;
    block->wg_generation[g]++;
  } else {
    while (block->wg_generation[g] == gen) wait_yield(what);
  }
}

[[noreturn]] inline void thread_main() {
  after_switch(nullptr, &main_bottom, &main_size);
  body();
  Thread& t = me();
  for (auto& g : t.groups) for (auto& c : g) perform(c);
  for (auto& c : t.open) perform(c);
  hopper_thread_exit(t);
  t.done = true;
  block->live--;
  block->changes++;
  const int w = t.flat / 32;
  block->warp_live[w]--;
  block->wg_live[w / 4]--;
  // A thread that exits no longer holds up a barrier the others wait at.
  if (block->arrived && block->arrived == block->live) block->arrived = 0, block->generation++;
  if (block->warp_arrived[w] && block->warp_arrived[w] == block->warp_live[w])
    block->warp_arrived[w] = 0, block->warp_released_live[w] = block->warp_live[w], block->warp_generation[w]++;
  if (block->wg_arrived[w / 4] && block->wg_arrived[w / 4] == block->wg_live[w / 4])
    fail("a wgmma collective in a warpgroup where some threads have exited: all 128 must take part");
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

[[noreturn]] inline void deadlock(Block& b) {
  std::string why;
  int shown = 0;
  for (size_t i = 0; i < b.threads.size() && shown < 6; i++) {
    const Thread& t = b.threads[i];
    if (t.done || (i > 0 && !b.threads[i - 1].done && b.threads[i - 1].waiting == t.waiting)) continue;
    size_t j = i;
    while (j + 1 < b.threads.size() && !b.threads[j + 1].done && b.threads[j + 1].waiting == t.waiting) j++;
    why += "; thread" + (j > i ? "s " + std::to_string(i) + ".." + std::to_string(j) : " " + std::to_string(i)) + ": " + t.waiting;
    shown++;
  }
  fprintf(stderr, "emulator: deadlock in block %u,%u,%u: every live thread waits and none can go on%s\n", block_idx.x, block_idx.y,
          block_idx.z, why.c_str());
  abort();
}

inline void run_block(dim3 dim, size_t smem_bytes) {
  Block b;
  block = &b;
  const int n = (int)(dim.x * dim.y * dim.z);
  if (n % 32) fail("block size not a multiple of 32");
  b.smem.assign(smem_bytes, 0xFF);
  b.threads.resize(n);
  b.live = n;
  if (n > 1024) fail("more than 1024 threads in a block");
  for (int w = 0; w < n / 32; w++) b.warp_live[w] = 32, b.wg_live[w / 4] += 32;
  for (int i = 0; i < n; i++) {
    Thread& t = b.threads[i];
    t.flat = i;
    t.tid = make_uint3(i % dim.x, (i / dim.x) % dim.y, i / (dim.x * dim.y));
    while ((int)stacks.size() <= i) stacks.emplace_back(new char[STACK_BYTES]);
    t.stack = stacks[i].get();
    t.sp = start(t);
  }
  while (b.live > 0) {
    bool progressed = false, all_waiting = true;
    const unsigned long changes = b.changes;
    for (int i = 0; i < n; i++) {
      if (b.threads[i].done) continue;
      b.current = i;
      void* fake = nullptr;
      before_switch(&fake, b.threads[i].stack, STACK_BYTES);
      kc_emu_switch(&b.scheduler_sp, b.threads[i].sp);
      after_switch(fake, nullptr, nullptr);
      progressed = true;
      if (!b.threads[i].waiting) all_waiting = false;
    }
    if (!progressed) fail("no thread can run");
    // Every thread looked at what it waits for in this round, and nothing changed: none ever will go on.
    if (all_waiting && b.changes == changes) deadlock(b);
  }
  hopper_block_exit(b);
  block = nullptr;
}

// Where a launch on `stream` goes instead of running now, or null: the emulated library's stream
// capture (library-graphs.h) records it, with its arguments, as a node of the graph (`kind`: the
// kernel), and answers true; false: not captured, run it now.
inline bool (*recorder)(cudaStream_t stream, const void* kind, const std::function<void()>& run) = nullptr;

// Each launch prints a line (grid, threads, dynamic shared memory) for the harnesses' callers; the
// emulated library, loaded into a test process, is built with KC_EMU_LOG_LAUNCHES=0.
#ifndef KC_EMU_LOG_LAUNCHES
#define KC_EMU_LOG_LAUNCHES 1
#endif

// KC_LAUNCH(kernel, grid, block, smem, stream)(args...): every block of the grid in turn, now (or at
// each launch of the graph that recorded it).
template <typename Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, threads;
  size_t smem;
  cudaStream_t stream;
  template <typename... Args>
  void operator()(Args... args) {
    if (KC_EMU_LOG_LAUNCHES)
      printf("launch grid %u,%u,%u threads %u smem %zu\n", grid.x, grid.y, grid.z, threads.x * threads.y * threads.z, smem);
    if (smem > (size_t)SMEM_DEFAULT) {
      auto it = smem_opted_in.find((const void*)kernel);
      if (it == smem_opted_in.end() || (size_t)it->second < smem) {
        fprintf(stderr, "emulator: a launch with %zu bytes of dynamic shared memory, more than the 48 KiB default and the %d the "
                "kernel opted into with cudaFuncSetAttribute: the device refuses it (cudaErrorInvalidValue)\n",
                smem, it == smem_opted_in.end() ? 0 : it->second);
        launch_error = cudaErrorInvalidValue;
        return;
      }
    }
    const std::function<void()> run = [kernel = kernel, grid = grid, threads = threads, smem = smem, args...] {
      grid_dim = make_uint3(grid.x, grid.y, grid.z);
      block_dim = make_uint3(threads.x, threads.y, threads.z);
      body = [&] { kernel(args...); };
      for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
          for (unsigned x = 0; x < grid.x; x++) {
            block_idx = make_uint3(x, y, z);
            run_block(threads, smem);
          }
    };
    if (!recorder || !recorder(stream, (const void*)kernel, run)) run();
  }
};
template <typename Kernel>
Launch<Kernel> launch(Kernel k, dim3 grid, dim3 threads, size_t smem, cudaStream_t stream) {
  return Launch<Kernel>{k, grid, threads, smem, stream};
}

}  // namespace kc_emu

#include "collectives.h"

#define threadIdx (kc_emu::me().tid)
#define blockIdx (kc_emu::block_idx)
#define blockDim (kc_emu::block_dim)
#define gridDim (kc_emu::grid_dim)
#define __syncthreads() kc_emu::barrier()
#define KC_LAUNCH(kernel, grid, threads, smem, stream) kc_emu::launch(kernel, dim3(grid), dim3(threads), (smem), (stream))

// cuda_runtime.h's typed overload is for nvcc only; kernel files call it with kernel pointers.
template <typename T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute((const void*)kernel, attr, value);
}

// CUDA device functions the host library lacks.
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
// Φ(x), the standard normal CDF, in double and rounded once (CUDA's normcdff is within 5 ulp of it).
inline float normcdff(float x) { return (float)(0.5 * erfc(-(double)x * M_SQRT1_2)); }
// The correctly rounded double operations of the CUDA math API: on the host (x86-64 without -mfma,
// so nothing is contracted) the plain operators round the same way.
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
// A load through the read-only data cache: a plain load here.
template <typename T>
inline T __ldg(const T* p) { return *p; }

#include "../../../kernels/cuda/common.cuh"

#include "sm80-primitives.h"
#include "hopper-sync.h"
#include "hopper-tma.h"
#include "hopper-tma-store.h"
#include "hopper-wgmma.h"
