// The emulator's (emulator.h) state of the Hopper primitives: what a thread has issued to the tensor
// cores or the TMA and not yet waited for, and a block's mbarriers, named barriers and TMA copies in
// flight. The operations themselves: hopper-sync.h, hopper-tma.h, hopper-tma-store.h, hopper-wgmma.h.
#pragma once

namespace kc_emu {

struct Thread;
struct Block;

// A tensor map as the emulated cuTensorMapEncodeTiled (host-runtime.h) stores it inside the 128 opaque
// bytes of a CUtensorMap: what the TMA copies (hopper-tma.h) need to find and lay out a box.
struct TensorMap {
  static constexpr uint32_t MAGIC = 0x4b434d50;  // written by the encoder: a map nobody encoded is refused
  uint32_t magic;
  uint8_t rank, elem_bytes, swizzle_bytes;  // swizzle_bytes 0: none, or 128
  uint8_t pad;
  uint64_t base;            // global address of element 0
  uint32_t dims_minus1[5];  // dimension sizes less one (a size may be 2^32), innermost first
  uint16_t box[5];          // box elements per dimension
  uint64_t strides[4];      // byte strides of dimensions 1 .. rank-1
};

// A TMA tensor copy: a load (global → shared, hopper-tma.h) or a store (shared → global,
// hopper-tma-store.h).
struct TmaCopy {
  uint32_t dst;  // shared address of the box (a store's source)
  TensorMap map;
  int32_t coords[5];
};

// An mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"): the
// current phase completes once its pending arrivals reach 0 and its transaction count is 0.
struct MBarrier {
  uint32_t count = 0;     // arrivals per phase (mbarrier.init)
  int64_t pending = 0;    // arrivals the current phase still waits for
  int64_t tx = 0;         // transaction bytes the current phase still waits for (negative: completed early)
  uint32_t phase = 0;     // phases completed so far; try_wait.parity p passes once phase & 1 != p
  int initializer = -1;   // the thread that initialised it
  bool fenced = false;    // a fence.mbarrier_init by the initialiser made it visible to TMA
  std::vector<TmaCopy> copies;  // TMA copies completing on it, not yet performed
};

// A named barrier (bar.sync / bar.arrive with an explicit thread count).
struct NamedBarrier {
  int arrived = 0, count = 0;
  unsigned generation = 0;
  int warp_arrived[32] = {};  // arrivals per warp in the current generation (each a whole warp: 0, 32, ...)
};

// One wgmma.mma_async as a thread issued it: d[64×N] (+)= A(64×16) · B(16×N).
struct WgmmaOp {
  bool a_in_registers, f16, trans_b, accumulate;
  int n;
  uint64_t desc_a, desc_b;
  float* d;            // this thread's accumulators (N/2), read and written when the group retires
  const uint32_t* a;   // this thread's A fragment (4 registers) when a_in_registers, read then too
};

struct HopperThread {
  std::vector<WgmmaOp> wgmma_open;                 // issued, not yet committed
  std::vector<std::vector<WgmmaOp>> wgmma_groups;  // committed groups not yet retired, oldest first
  bool wgmma_fenced = false;  // a wgmma.fence since the kernel began or the thread's last wait_group
  int wait_n = 0;             // the N of the wgmma.wait_group it is in
  std::vector<int> maxnreg;   // every setmaxnreg the thread executed (+count: .inc, -count: .dec)
  int regs = 0;               // its per-thread register count: the launch's (hopper-sync.h), then setmaxnreg's
  std::vector<TmaCopy> bulk_open;                 // TMA stores issued, not yet committed
  std::vector<std::vector<TmaCopy>> bulk_groups;  // committed bulk async-groups not yet waited for, oldest first
  std::vector<uint32_t> unfenced;  // 16-byte chunks of shared memory it wrote with st.shared since its last fence.proxy.async
  char waiting[96];           // what it waits for, for a deadlock report
};

// Consecutive wgmma.mma_async issued by one warpgroup (as its first thread issued them): the order in
// which a block's warpgroups took the tensor cores.
struct WgmmaRun {
  int warpgroup, issued;
};

struct HopperBlock {
  std::unordered_map<uint32_t, MBarrier> mbarriers;  // by shared address
  NamedBarrier named[16];
  std::vector<WgmmaRun> wgmma_runs;
  // Per 16-byte chunk of dynamic shared memory (sized at first use, hopper-tma-store.h): the thread
  // whose st.shared or cp.async wrote it and has not executed fence.proxy.async since (-1: none), and
  // how many TMA stores in flight still read it.
  std::vector<int> unfenced_writer, store_readers;
};

inline void hopper_thread_exit(Thread& t);
inline void hopper_block_exit(Block& b);
inline int64_t perform_tma(const TmaCopy& c);  // writes the box, returns its bytes
inline void tma_store_thread_exit(const Thread& t);
inline void cp_async_landed(uint32_t dst);  // a cp.async copy wrote 16 bytes there (generic proxy, hopper-tma-store.h)  // stops the emulator if t has TMA stores in flight
inline void report_wgmma_runs(const Block& b);  // prints them (KC_EMU_WGMMA_RUNS)

// fail() with a printf message.
template <typename... Args>
[[noreturn]] inline void failf(const char* format, Args... args) {
  fprintf(stderr, "emulator: ");
  fprintf(stderr, format, args...);
  fputc('\n', stderr);
  abort();
}

}  // namespace kc_emu
