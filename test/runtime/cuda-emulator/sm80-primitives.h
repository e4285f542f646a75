// The primitives kernels/cuda/common.cuh leaves to the CPU emulator (emulator.h includes this): shared
// addresses (dynamic shared memory from DYN_BASE, static __shared__ objects in a window of their own),
// cp.async with its groups (each copy performed at the wait_group that covers it), ldmatrix and
// mma.sync (collectives.h), and ex2.approx.ftz.
#pragma once

namespace kc_emu {
// A static __shared__ object (a plain static here) as a shared address: its offset from the first one
// seen (less a margin), in a window above dynamic shared memory. Objects of the harness's image lie
// within a few MiB of each other, so the addresses stay distinct and keep the objects' inner offsets.
inline uint32_t static_shared_addr(const void* p) {
  static const uintptr_t anchor = (uintptr_t)p - (1u << 26);
  const uintptr_t off = (uintptr_t)p - anchor;
  if (off >= (1u << 30)) fail("a static __shared__ object too far from the others for the emulator's address window");
  return STATIC_BASE + (uint32_t)off;
}
}  // namespace kc_emu
inline uint32_t kc_smem_addr(const void* p) {
  const uint8_t *q = (const uint8_t*)p, *s = kc_emu::block->smem.data();
  if (q >= s && q <= s + kc_emu::block->smem.size()) return kc_emu::DYN_BASE + (uint32_t)(q - s);
  return kc_emu::static_shared_addr(p);
}
inline uint8_t* kc_dynamic_smem() { return kc_emu::block->smem.data(); }
inline void kc_cp_async16(uint32_t dst, const void* src, int src_bytes) {
  if (src_bytes < 0 || src_bytes > 16) kc_emu::fail("cp.async source size outside 0..16");
  // PTX ISA cp.async: both addresses aligned to the copy size (16), whatever src-size says.
  if ((uintptr_t)src % 16) kc_emu::failf("cp.async of 16 bytes from global address %p: not 16-byte aligned", src);
  if (dst % 16) kc_emu::failf("cp.async of 16 bytes to shared address %#x: not 16-byte aligned", dst);
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
// ex2.approx.ftz.f32: a subnormal input counts as 0, a subnormal result flushes to 0. (The hardware's
// approximation has a relative error ~2^-22; this is exact, which the precision promises cover.)
inline float kc_exp2_ftz(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL) x = 0.f;
  const float y = exp2f(x);
  return std::fpclassify(y) == FP_SUBNORMAL ? 0.f : y;
}
template <bool IS_F16>
inline void kc_mma_16816(float* d, const uint32_t* a, const uint32_t* b) {
  kc_emu::mma_16816(d, a, b, IS_F16);
}
