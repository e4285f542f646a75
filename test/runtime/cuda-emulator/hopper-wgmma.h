// wgmma on the CPU emulator (emulator.h includes this): wgmma.mma_async m64nNk16 with f32 accumulators
// and bf16 or f16 inputs — A and B from shared memory (kc_wgmma_ss), or A from registers with an N-major
// B (kc_wgmma_rs_tb) — and wgmma.fence, commit_group and wait_group, per the PTX ISA ("Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions").
//
// - Shared-memory operands are read through their matrix descriptors, decoded as the ISA defines them
//   ("Matrix Descriptor Format"): start address, leading and stride byte offsets (each encoded >> 4),
//   base offset, swizzle mode; the element addresses follow the canonical layouts ("Canonical Layouts",
//   T = 8 16-bit elements per 16 bytes) of the 128-byte swizzle (the only mode emulated), K-major
//   ((8,m),(T,2k)) and MN-major ((T,8,m),(8,k)), then Swizzle<3, 4, 3> on the address (hopper-tma.h).
// - Register fragments ("Matrix Fragments for wgmma.mma_async.m64nNk16"): warp w of the warpgroup holds
//   rows 16w .. 16w+15; with g = lane / 4, q = lane % 4, accumulator d[i] is row 16w + g + 8·(i/2 % 2),
//   column 8·(i/4) + 2q + i%2; A register j holds row 16w + g + 8·(j % 2), columns 2q + 8·(j / 2) and +1
//   (low half first).
// - Each operation is performed when the wgmma.wait_group that retires its group runs (the latest
//   moment): only then are its shared-memory operands, its A registers and its accumulators read, and
//   its accumulators written. A kernel that reads accumulators, rewrites A registers or refills an
//   operand's stage before that wait sees (or causes) the difference. wait_group is a collective of all
//   128 threads of the warpgroup; the last to arrive performs the group for all of them, once they have
//   issued and committed the same instructions with the same descriptors.
// - Products are exact (double) and the sum rounds once to f32, as the mma.sync emulation does.
// - An operand that a thread wrote through the generic proxy (cp.async, st.shared) with no
//   fence.proxy.async of that thread since stops the emulator: wgmma reads through the async proxy.
// - A thread must execute wgmma.fence before its first wgmma.mma_async and again after each wait_group
//   before the next (stricter than the ISA, which asks for the fence only where registers the wgmma uses
//   were touched in between — which is what a kernel does after a wait).
// kc_fence_regs (no instruction) lives here too, the other Hopper kernel helper hopper.cuh leaves to
// the emulator.
#pragma once

namespace kc_emu {

// A decoded descriptor. Only the 128-byte swizzle (mode 1, what the kernels use) is emulated.
struct SmemMatrix {
  uint32_t start, lbo, sbo;
};
constexpr int SPAN = 128;

inline SmemMatrix decode_descriptor(uint64_t desc, const char* which) {
  SmemMatrix m;
  m.start = (uint32_t)(desc & 0x3FFF) << 4;
  m.lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4;
  m.sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
  const int base_offset = (int)((desc >> 49) & 7), mode = (int)(desc >> 62);
  if (mode != 1) failf("wgmma %s descriptor with swizzle mode %d: only the 128-byte swizzle (1) is emulated", which, mode);
  if (base_offset) failf("wgmma %s descriptor with base offset %d: only 0 is emulated", which, base_offset);
  // Base offset 0 says the swizzle pattern (8 rows of 128 bytes) starts at a multiple of 1024 bytes;
  // the matrix may start inside its first row (a K step), not in a later row.
  if (m.start % (8 * SPAN) >= (uint32_t)SPAN)
    failf("wgmma %s descriptor: start %#x lies in row %u of a 128-byte swizzle pattern, but the base offset is 0", which, m.start,
          m.start % (8 * SPAN) / SPAN);
  return m;
}

// Shared address of element (row, k) of a K-major operand (rows of M or N, 16 k): ((8,m),(T,2k)) :
// ((8T,SBO),(1,T)) — 8-row groups SBO apart, rows 128 bytes apart, k contiguous.
inline uint32_t kmajor_addr(const SmemMatrix& m, int row, int k) {
  return swizzle_addr(m.start + (row % 8) * SPAN + (row / 8) * m.sbo + 2 * k, SPAN);
}
// Shared address of element (k, n) of an MN-major operand: ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO)) —
// 64 n contiguous, blocks of 64 n LBO apart; k rows 128 bytes apart, 8-k groups SBO apart.
inline uint32_t mnmajor_addr(const SmemMatrix& m, int n, int k) {
  return swizzle_addr(m.start + 2 * (n % 64) + (n / 64) * m.lbo + (k % 8) * SPAN + (k / 8) * m.sbo, SPAN);
}

inline double operand(uint32_t addr, bool f16) {
  uint16_t h;
  memcpy(&h, smem_at(addr, 2, "wgmma operand"), 2);
  const int writer = block->hopper.unfenced_writer[smem_chunk(addr)];
  if (writer >= 0)
    failf("wgmma reads shared address %#x, which thread %d wrote (cp.async or st.shared) with no "
          "fence.proxy.async.shared::cta of that thread after it: the async proxy need not see the write", addr, writer);
  return half_bits_to_float(h, f16);
}

inline bool same_instruction(const WgmmaOp& a, const WgmmaOp& b) {
  return a.a_in_registers == b.a_in_registers && a.f16 == b.f16 && a.trans_b == b.trans_b && a.accumulate == b.accumulate &&
         a.n == b.n && a.desc_a == b.desc_a && a.desc_b == b.desc_b;
}

// Operation j of the oldest group of the warpgroup's threads t[0..127].
inline void perform_wgmma(Thread* t, size_t j) {
  const WgmmaOp& o = t[0].hopper.wgmma_groups.front()[j];
  static double A[64][16], B[256][16];
  if (o.a_in_registers) {
    for (int m = 0; m < 64; m++)
      for (int k = 0; k < 16; k++) {
        const Thread& src = t[(m / 16) * 32 + 4 * (m % 8) + (k % 8) / 2];
        const uint32_t reg = src.hopper.wgmma_groups.front()[j].a[(m % 16) / 8 + 2 * (k / 8)];
        A[m][k] = half_bits_to_float((uint16_t)(reg >> (16 * (k % 2))), o.f16);
      }
  } else {
    const SmemMatrix a = decode_descriptor(o.desc_a, "A");
    for (int m = 0; m < 64; m++)
      for (int k = 0; k < 16; k++) A[m][k] = operand(kmajor_addr(a, m, k), o.f16);
  }
  const SmemMatrix b = decode_descriptor(o.desc_b, "B");
  for (int n = 0; n < o.n; n++)
    for (int k = 0; k < 16; k++) B[n][k] = operand(o.trans_b ? mnmajor_addr(b, n, k) : kmajor_addr(b, n, k), o.f16);
  for (int i = 0; i < 128; i++) {
    const int w = i / 32, lane = i % 32;
    float* d = t[i].hopper.wgmma_groups.front()[j].d;
    for (int r = 0; r < o.n / 2; r++) {
      const int row = 16 * w + lane / 4 + 8 * ((r / 2) % 2), col = 8 * (r / 4) + 2 * (lane % 4) + r % 2;
      double s = o.accumulate ? d[r] : 0.0;
      for (int k = 0; k < 16; k++) s += A[row][k] * B[col][k];
      d[r] = (float)s;
    }
  }
}

// wgmma.wait_group n for the warpgroup of threads t[0..127]: every group but the newest n retires.
inline void retire_wgmma(Thread* t, int n) {
  const size_t groups = t[0].hopper.wgmma_groups.size();
  for (int i = 1; i < 128; i++)
    if (t[i].hopper.wgmma_groups.size() != groups)
      failf("wgmma.wait_group: thread %d has %zu committed groups in flight, thread %d %zu: the warpgroup must issue alike", t[i].flat,
            t[i].hopper.wgmma_groups.size(), t[0].flat, groups);
  for (size_t g = groups; g > (size_t)n; g--) {
    const std::vector<WgmmaOp>& first = t[0].hopper.wgmma_groups.front();
    for (int i = 1; i < 128; i++) {
      const std::vector<WgmmaOp>& mine = t[i].hopper.wgmma_groups.front();
      bool same = mine.size() == first.size();
      for (size_t j = 0; same && j < first.size(); j++) same = same_instruction(mine[j], first[j]);
      if (!same) failf("wgmma: thread %d issued other wgmma instructions (or descriptors) than thread %d in the same group", t[i].flat, t[0].flat);
    }
    for (size_t j = 0; j < first.size(); j++) perform_wgmma(t, j);
    for (int i = 0; i < 128; i++) t[i].hopper.wgmma_groups.erase(t[i].hopper.wgmma_groups.begin());
  }
}

inline void wgmma_issue(const WgmmaOp& op) {
  HopperThread& h = me().hopper;
  if (!h.wgmma_fenced)
    fail("wgmma.mma_async without a wgmma.fence before it (since the kernel began or the thread's last wgmma.wait_group)");
  h.wgmma_open.push_back(op);
  if (me().flat % 128 == 0) {  // the warpgroup's first thread stands for it (wait_group checks that all issue alike)
    std::vector<WgmmaRun>& runs = block->hopper.wgmma_runs;
    const int wg = me().flat / 128;
    if (runs.empty() || runs.back().warpgroup != wg) runs.push_back({wg, 0});
    runs.back().issued++;
  }
}

// With KC_EMU_WGMMA_RUNS set, one line per block that issued wgmma: "wgmma runs block X: W×n …", the
// warpgroups in the order they issued, n instructions each time, so a test can see which warpgroup had
// the tensor cores when (a ping-pong kernel's turns).
inline void report_wgmma_runs(const Block& b) {
  static const bool on = getenv("KC_EMU_WGMMA_RUNS") != nullptr;
  if (!on || b.hopper.wgmma_runs.empty()) return;
  std::string line = "wgmma runs block " + std::to_string(block_idx.x) + ":";
  for (const WgmmaRun& r : b.hopper.wgmma_runs) line += " " + std::to_string(r.warpgroup) + "x" + std::to_string(r.issued);
  printf("%s\n", line.c_str());
}

inline void hopper_thread_exit(Thread& t) {
  if (!t.hopper.wgmma_open.empty() || !t.hopper.wgmma_groups.empty())
    failf("thread %d exits with wgmma operations it never waited for (%zu uncommitted, %zu groups)", t.flat, t.hopper.wgmma_open.size(),
          t.hopper.wgmma_groups.size());
  tma_store_thread_exit(t);
}

}  // namespace kc_emu

inline void kc_wgmma_fence() { kc_emu::me().hopper.wgmma_fenced = true; }
inline void kc_wgmma_commit() {
  kc_emu::HopperThread& h = kc_emu::me().hopper;
  h.wgmma_groups.push_back(std::move(h.wgmma_open));
  h.wgmma_open.clear();
}
template <int N>
inline void kc_wgmma_wait() {
  kc_emu::Thread& t = kc_emu::me();
  t.hopper.wait_n = N;  // what each thread asks for, compared at the release
  kc_emu::warpgroup_barrier("wgmma.wait_group", [&] {
    kc_emu::Thread* wg = &kc_emu::block->threads[t.flat / 128 * 128];
    for (int i = 0; i < 128; i++)
      if (wg[i].hopper.wait_n != N) kc_emu::failf("wgmma.wait_group %d in thread %d, %d in thread %d", N, t.flat, wg[i].hopper.wait_n, wg[i].flat);
    kc_emu::retire_wgmma(wg, N);
  });
  t.hopper.wgmma_fenced = false;
}
template <int N, bool F16 = false>
inline void kc_wgmma_ss(float* d, uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "m64nNk16: N a multiple of 8 in 8 .. 256");
  kc_emu::wgmma_issue({false, F16, false, accumulate != 0, N, desc_a, desc_b, d, nullptr});
}
template <int N>
inline void kc_wgmma_rs_tb(float* d, const uint32_t* a, uint64_t desc_b) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "m64nNk16: N a multiple of 8 in 8 .. 256");
  kc_emu::wgmma_issue({true, false, true, true, N, 0, desc_b, d, a});
}
template <int N>
inline void kc_fence_regs(float (&)[N]) {}

