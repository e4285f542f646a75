// Hopper synchronization on the CPU emulator (emulator.h includes this): mbarriers, named barriers,
// setmaxnreg — the primitives kernels/cuda/hopper.cuh leaves to the emulator, with the semantics of the
// PTX ISA (mbarrier: "Parallel Synchronization and Communication Instructions"; bar, setmaxnreg).
//
// mbarrier: init sets the arrival count of every phase; an arrival (arrive, arrive.expect_tx) counts
// down the current phase's pending arrivals, expect_tx raises its transaction count and a TMA copy's
// complete_tx lowers it; the phase completes once both are 0, and try_wait.parity p passes once the
// phase of parity p has completed (a fresh barrier is in phase 0, so parity 1 passes at once). A wait
// yields the fiber until then. A TMA copy is performed (its data written, its bytes completed) when a
// thread waits on its barrier, not when it is issued (hopper-tma.h). Misuse stops the emulator with the
// reason: an arrival beyond the count in one phase, more bytes completed than expected, a barrier used
// before mbarrier.init, initialised twice, or completed by TMA without fence.mbarrier_init.
// Named barriers: bar.sync waits until `threads` arrivals (bar.sync or bar.arrive) have come; a block
// must not exit with a barrier half-arrived; a thread that arrives with bar.arrive goes on only after
// the others have had a turn; ids 1..15 (0 is __syncthreads'), counts multiples of 32, and every warp
// arrives whole (bar.sync and bar.arrive are the .aligned forms: all threads of a warp execute the same
// one). setmaxnreg (PTX ISA "setmaxnreg"): counts multiples of 8 in 24..256; .dec never above the
// warp's current count, .inc never below it; the same instruction in every thread of a warpgroup; and
// the block's final counts within the pool it was launched with — .inc takes registers only from what
// .dec released, so asking for more blocks forever. A warp starts with the count ptxas compiled the
// kernel to, which for these kernels (__launch_bounds__(threads, 1) with setmaxnreg) is the register
// file over the block, 65536 / threads (at most 255) rounded down to a multiple of 8 (launch_regs;
// cuda-ptx.test.ts holds ptxas's reports to it).
#pragma once

namespace kc_emu {

constexpr int64_t MBAR_MAX = (1 << 20) - 1;  // the ISA's limit on arrival counts and transaction bytes

inline MBarrier& mbarrier(uint32_t addr, const char* what) {
  auto it = block->hopper.mbarriers.find(addr);
  if (it == block->hopper.mbarriers.end())
    failf("%s on shared address %#x, where no mbarrier.init of this block initialised an mbarrier", what, addr);
  return it->second;
}

// Completes the current phase if nothing is pending any more.
inline void mbar_try_complete(MBarrier& b, uint32_t addr) {
  if (b.pending > 0 || b.tx > 0) return;
  if (b.tx < 0)
    failf("mbarrier %#x: phase %u received %lld transaction bytes more than its expect_tx announced", addr, b.phase,
          (long long)-b.tx);
  b.phase++;
  b.pending = b.count;
  block->changes++;
}

inline void mbar_arrive(uint32_t addr, uint32_t tx_bytes, const char* what) {
  MBarrier& b = mbarrier(addr, what);
  if (b.pending == 0)
    failf("%s on mbarrier %#x: more arrivals than its count (%u) in phase %u (the phase still waits for %lld bytes)", what,
          addr, b.count, b.phase, (long long)b.tx);
  b.tx += tx_bytes;
  if (b.tx > MBAR_MAX) failf("%s on mbarrier %#x: %lld transaction bytes pending, over the limit of 2^20 - 1", what, addr, (long long)b.tx);
  b.pending--;
  block->changes++;
  mbar_try_complete(b, addr);
}

inline void mbar_wait(uint32_t addr, uint32_t parity) {
  MBarrier& b = mbarrier(addr, "mbarrier.try_wait");
  while ((b.phase & 1) == (parity & 1)) {
    if (!b.copies.empty()) {  // the latest moment: a thread needs the data now
      std::vector<TmaCopy> copies;
      copies.swap(b.copies);
      for (const TmaCopy& c : copies) b.tx -= perform_tma(c);
      block->changes++;
      mbar_try_complete(b, addr);
      continue;
    }
    Thread& t = me();
    snprintf(t.hopper.waiting, sizeof t.hopper.waiting, "mbarrier %#x parity %u (in phase %u)", addr, parity & 1, b.phase);
    wait_yield(t.hopper.waiting);
  }
}

inline void named_barrier(int id, int threads, bool wait) {
  const char* what = wait ? "bar.sync" : "bar.arrive";
  if (id < 1 || id > 15) failf("%s %d: named barriers are 1..15 (0 is __syncthreads')", what, id);
  if (threads <= 0 || threads % 32 || threads > (int)block->threads.size())
    failf("%s %d with %d threads: a multiple of 32, at most the block's %zu", what, id, threads, block->threads.size());
  NamedBarrier& nb = block->hopper.named[id];
  if (nb.arrived && nb.count != threads)
    failf("%s %d with %d threads while %d arrivals of a count of %d are in", what, id, threads, nb.arrived, nb.count);
  nb.count = threads;
  const unsigned generation = nb.generation;
  block->changes++;
  nb.warp_arrived[me().flat / 32]++;
  const bool released = ++nb.arrived == threads;
  if (released) {
    for (int w = 0; w < 32; w++)
      if (nb.warp_arrived[w] % 32)
        failf("%s %d released with %d arrivals from warp %d: bar.sync and bar.arrive are .aligned, every thread of a warp "
              "must execute the same one", what, id, nb.warp_arrived[w], w);
    for (int& n : nb.warp_arrived) n = 0;
    nb.arrived = 0, nb.generation++;
  }
  if (!wait) {
    // bar.arrive does not hold the thread, but it may be slow to go on: the threads it releases run
    // first, so a kernel whose order needs what follows the arrival to happen before them shows it.
    yield();
    return;
  }
  if (released) return;
  Thread& t = me();
  snprintf(t.hopper.waiting, sizeof t.hopper.waiting, "bar.sync %d (%d of %d arrived)", id, nb.arrived, threads);
  while (nb.generation == generation) wait_yield(t.hopper.waiting);
}

// The per-thread register count a block of `threads` starts with (the header's rule); times `threads`,
// the pool its warpgroups' setmaxnreg redistribute.
inline int launch_regs(size_t threads) {
  const int most = (int)(65536 / threads);
  return (most < 255 ? most : 255) & ~7;
}

inline void setmaxnreg(int regs, bool inc) {
  const char* what = inc ? "setmaxnreg.inc" : "setmaxnreg.dec";
  if (regs < 24 || regs > 256 || regs % 8) failf("%s %d: the count must be a multiple of 8 in 24..256", what, regs);
  HopperThread& h = me().hopper;
  if (!h.regs) h.regs = launch_regs(block->threads.size());
  if (inc ? regs < h.regs : regs > h.regs)
    failf("%s %d in a warp that holds %d registers per thread: .%s must not %s the count", what, regs, h.regs, inc ? "inc" : "dec",
          inc ? "lower" : "raise");
  h.regs = regs;
  h.maxnreg.push_back(inc ? regs : -regs);
}

// At the block's end: no named barrier half-arrived, no TMA copy in flight into its shared memory, and
// setmaxnreg the same in all threads of each warpgroup, the final counts within the register file.
inline void hopper_block_exit(Block& b) {
  report_wgmma_runs(b);
  for (int id = 0; id < 16; id++)
    if (b.hopper.named[id].arrived)
      failf("the block exits with named barrier %d half-arrived (%d of %d)", id, b.hopper.named[id].arrived, b.hopper.named[id].count);
  for (auto& [addr, bar] : b.hopper.mbarriers)
    if (!bar.copies.empty()) failf("the block exits with a TMA copy completing on mbarrier %#x still in flight (nobody waited)", addr);
  const int entry = launch_regs(b.threads.size());
  int64_t total = 0;
  bool any = false;
  for (size_t w = 0; w * 128 < b.threads.size(); w++) {
    const std::vector<int>& first = b.threads[w * 128].hopper.maxnreg;
    for (size_t i = w * 128; i < b.threads.size() && i < w * 128 + 128; i++)
      if (b.threads[i].hopper.maxnreg != first)
        failf("setmaxnreg not executed alike by every thread of warpgroup %zu (thread %zu differs from thread %zu)", w, i, w * 128);
    any = any || !first.empty();
    total += 128 * (int64_t)(first.empty() ? entry : abs(first.back()));
  }
  if (!any) return;
  if (b.threads.size() % 128) failf("setmaxnreg in a block of %zu threads: not whole warpgroups", b.threads.size());
  const int64_t pool = (int64_t)entry * (int64_t)b.threads.size();
  if (total > pool)
    failf("setmaxnreg: the warpgroups end with %lld registers, more than the %lld (%d per thread × %zu threads) the block was "
          "launched with: a setmaxnreg.inc waits forever for registers no .dec released",
          (long long)total, (long long)pool, entry, b.threads.size());
}

}  // namespace kc_emu

inline void kc_mbar_init(uint32_t bar, uint32_t count) {
  using namespace kc_emu;
  if (bar % 8) failf("mbarrier.init at shared address %#x: not 8-byte aligned", bar);
  if (count == 0 || count > MBAR_MAX) failf("mbarrier.init with count %u: must be 1 .. 2^20 - 1", count);
  if (!block->hopper.mbarriers.emplace(bar, MBarrier{}).second) failf("mbarrier.init of mbarrier %#x, initialised before", bar);
  MBarrier& b = block->hopper.mbarriers[bar];
  b.count = count;
  b.pending = count;
  b.initializer = me().flat;
  block->changes++;
}
inline void kc_fence_mbar_init() {
  for (auto& [addr, b] : kc_emu::block->hopper.mbarriers)
    if (b.initializer == kc_emu::me().flat) b.fenced = true;
}
inline void kc_mbar_wait(uint32_t bar, uint32_t parity) { kc_emu::mbar_wait(bar, parity); }
inline void kc_mbar_arrive(uint32_t bar) { kc_emu::mbar_arrive(bar, 0, "mbarrier.arrive"); }
inline void kc_mbar_expect_tx(uint32_t bar, uint32_t bytes) { kc_emu::mbar_arrive(bar, bytes, "mbarrier.arrive.expect_tx"); }
inline void kc_bar_sync(int id, int threads) { kc_emu::named_barrier(id, threads, true); }
inline void kc_bar_arrive(int id, int threads) { kc_emu::named_barrier(id, threads, false); }
template <int REGS>
inline void kc_setmaxnreg_dec() {
  kc_emu::setmaxnreg(REGS, false);
}
template <int REGS>
inline void kc_setmaxnreg_inc() {
  kc_emu::setmaxnreg(REGS, true);
}
