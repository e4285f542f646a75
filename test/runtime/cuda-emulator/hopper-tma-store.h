// TMA stores on the CPU emulator (emulator.h includes this): cp.async.bulk.tensor.{2,3}d.global.shared::cta
// .bulk_group (shared → global through a tensor map), cp.async.bulk.commit_group,
// cp.async.bulk.wait_group{.read} N, fence.proxy.async.shared::cta, and the st.shared stores a kernel
// stages a tile with — kc_tma_store_2d / _3d, kc_bulk_commit, kc_bulk_wait(_read), kc_fence_proxy_async
// and kc_st_shared_* of kernels/cuda/hopper.cuh — with the semantics of the PTX ISA (cp.async.bulk.tensor,
// cp.async.bulk.commit_group, cp.async.bulk.wait_group; membar/fence, proxy fences).
//
// - A store reads a box from shared memory, laid out as a TMA load writes it (hopper-tma.h: rows of box[0]
//   elements; with the 128-byte swizzle, 16-byte chunks permuted by the shared address), and writes it
//   to the tensor at the coordinates given, innermost first. Elements outside the tensor's dimensions,
//   on either side (coordinates may be negative), are not written: a store never writes out of bounds.
// - Stores belong to the thread that issued them: commit_group closes the stores it issued since its
//   last commit into a bulk async-group (none: an empty group); wait_group N and wait_group.read N return
//   once at most the N newest of its groups are pending (.read: their sources read; the emulator
//   completes the groups either way).
// - When: a store reads shared memory and writes global memory when a wait_group retires its group —
//   the latest moment — after the waiting thread let every other thread run once. So a kernel that
//   rewrites a staging buffer before the wait that retires the store reading it stores the new contents.
// - st.shared (kc_st_shared_*) and cp.async (emulator.h) write through the generic proxy, which the async
//   proxy (TMA, wgmma: hopper-wgmma.h) does not see in order without fence.proxy.async.shared::cta by the
//   writing thread after the write (for cp.async: after the wait_group that saw it land).
// Misuse stops the emulator with the reason: a store whose source holds a thread's st.shared writes with
// no fence.proxy.async of that thread since; st.shared into shared memory that a store in flight still
// reads (before the wait_group.read that retires it); a thread that exits with stores it never waited for
// (the block's shared memory could go to the next block while the TMA still reads it); a source not
// 128-byte aligned or outside dynamic shared memory; a swizzled tensor not 128-byte aligned.
// The checks see shared-memory writes made through kc_st_shared_* only, not through C++ pointers: a
// kernel stages its tiles with those (the late read above still shows any other overwrite).
#pragma once

namespace kc_emu {

// Per 16-byte chunk of dynamic shared memory: the block's bookkeeping, sized at first use.
inline size_t smem_chunk(uint32_t addr) {
  HopperBlock& h = block->hopper;
  if (h.unfenced_writer.empty()) {
    h.unfenced_writer.assign(block->smem.size() / 16 + 1, -1);
    h.store_readers.assign(block->smem.size() / 16 + 1, 0);
  }
  return (addr - DYN_BASE) / 16;
}

// Counts a store in (+1) or out (-1) of the readers of every chunk of its source.
inline void count_readers(const TmaCopy& c, int delta) {
  const uint32_t end = c.dst + (uint32_t)box_bytes(c.map);
  for (uint32_t a = c.dst; a < end; a += 16) block->hopper.store_readers[smem_chunk(a)] += delta;
}

// The thread whose store in flight reads shared address `addr` (for a message), or -1.
inline int store_reader(uint32_t addr) {
  for (const Thread& t : block->threads) {
    auto reads = [&](const TmaCopy& c) { return addr >= c.dst && addr < c.dst + box_bytes(c.map); };
    for (const TmaCopy& c : t.hopper.bulk_open)
      if (reads(c)) return t.flat;
    for (const auto& g : t.hopper.bulk_groups)
      for (const TmaCopy& c : g)
        if (reads(c)) return t.flat;
  }
  return -1;
}

inline void perform_tma_store(const TmaCopy& c) {
  const int elem = c.map.elem_bytes;
  walk_box(c, [&](uint32_t shared, uint8_t* const* global, int n) {
    const uint8_t* bytes = smem_at(shared, 16, "cp.async.bulk.tensor store source");
    for (int e = 0; e < n; e++)
      if (global[e]) memcpy(global[e], bytes + e * elem, elem);
  });
}

inline void tma_store(uint32_t src, const CUtensorMap* map, int rank, const int32_t* coords) {
  const TmaCopy c = tma_copy(src, map, rank, coords, "cp.async.bulk.tensor store");
  const uint32_t end = src + (uint32_t)box_bytes(c.map);
  for (uint32_t a = src; a < end; a += 16) {
    const int writer = block->hopper.unfenced_writer[smem_chunk(a)];
    if (writer >= 0)
      failf("cp.async.bulk.tensor store from shared address %#x reads %#x, which thread %d wrote with st.shared and no "
            "fence.proxy.async.shared::cta of that thread followed: the async proxy need not see the write",
            src, a, writer);
  }
  me().hopper.bulk_open.push_back(c);
  count_readers(c, +1);
  block->changes++;
}

inline void bulk_commit() {
  HopperThread& h = me().hopper;
  h.bulk_groups.push_back(std::move(h.bulk_open));
  h.bulk_open.clear();
}

inline void bulk_wait(int n) {
  if (me().hopper.bulk_groups.size() <= (size_t)n) return;
  yield();  // the latest moment: what the other threads do before this wait lands first
  std::vector<std::vector<TmaCopy>>& groups = me().hopper.bulk_groups;
  while (groups.size() > (size_t)n) {
    for (const TmaCopy& c : groups.front()) {
      perform_tma_store(c);
      count_readers(c, -1);
    }
    groups.erase(groups.begin());
  }
  block->changes++;
}

// Notes a generic-proxy write of the chunk at `addr` by the running thread, until its next fence.proxy.async.
inline void generic_write(uint32_t addr) {
  int& writer = block->hopper.unfenced_writer[smem_chunk(addr)];
  if (writer != me().flat) {
    writer = me().flat;
    me().hopper.unfenced.push_back((uint32_t)smem_chunk(addr));
  }
}

inline void cp_async_landed(uint32_t dst) { generic_write(dst); }

inline void st_shared(uint32_t addr, const void* value, int bytes) {
  if (addr % bytes) failf("st.shared of %d bytes at shared address %#x: not aligned to its size", bytes, addr);
  uint8_t* p = smem_at(addr, bytes, "st.shared");
  const size_t chunk = smem_chunk(addr);
  if (block->hopper.store_readers[chunk])
    failf("st.shared to shared address %#x, which a cp.async.bulk.tensor store of thread %d still reads: no "
          "cp.async.bulk.wait_group.read of that thread retired it yet",
          addr, store_reader(addr));
  memcpy(p, value, bytes);
  generic_write(addr);
}

inline void fence_proxy_async() {
  Thread& t = me();
  for (uint32_t chunk : t.hopper.unfenced)
    if (block->hopper.unfenced_writer[chunk] == t.flat) block->hopper.unfenced_writer[chunk] = -1;
  t.hopper.unfenced.clear();
}

inline void tma_store_thread_exit(const Thread& t) {
  if (!t.hopper.bulk_open.empty() || !t.hopper.bulk_groups.empty())
    failf("thread %d exits with TMA stores it never waited for (%zu uncommitted, %zu bulk async-groups): the block's shared "
          "memory may be reused while the TMA still reads it",
          t.flat, t.hopper.bulk_open.size(), t.hopper.bulk_groups.size());
}

}  // namespace kc_emu

inline void kc_tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  const int32_t c[2] = {c0, c1};
  kc_emu::tma_store(src, map, 2, c);
}
inline void kc_tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2) {
  const int32_t c[3] = {c0, c1, c2};
  kc_emu::tma_store(src, map, 3, c);
}
inline void kc_bulk_commit() { kc_emu::bulk_commit(); }
template <int N>
inline void kc_bulk_wait_read() {
  kc_emu::bulk_wait(N);
}
template <int N>
inline void kc_bulk_wait() {
  kc_emu::bulk_wait(N);
}
inline void kc_fence_proxy_async() { kc_emu::fence_proxy_async(); }
inline void kc_st_shared_v2_f32(uint32_t addr, float a, float b) {
  const float v[2] = {a, b};
  kc_emu::st_shared(addr, v, 8);
}
inline void kc_st_shared_b32(uint32_t addr, uint32_t v) { kc_emu::st_shared(addr, &v, 4); }
