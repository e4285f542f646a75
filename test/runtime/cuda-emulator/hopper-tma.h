// TMA tensor copies on the CPU emulator (emulator.h includes this): cp.async.bulk.tensor.{2,4}d global →
// shared, completing on an mbarrier — kc_tma_load_2d / _4d of kernels/cuda/hopper.cuh. (The stores,
// shared → global, lay their box out the same way: hopper-tma-store.h.)
//
// A copy reads a box of the tensor its map describes (TensorMap, written by the emulated
// cuTensorMapEncodeTiled of host-runtime.h) from the coordinates given, innermost first; elements
// outside the tensor's dimensions arrive as zeros and count toward the bytes like the others. The box
// lands in shared memory row after row (a row: box[0] elements), and with the 128-byte swizzle (the only
// one emulated besides none) the 16-byte chunks of each 128-byte row are permuted by the shared address
// itself: Swizzle<3, 4, 3>, chunk bits 4..6 XOR row bits 7..9 (the CUDA programming guide's TMA
// swizzle: chunk x of row y of a buffer at p lands at chunk ((y + p/128) % 8) ^ x). The destination must
// be 128-byte aligned, and with the swizzle the global address too (the guide's requirements).
//
// When the copy happens: the destination turns to 0xFF bytes (NaN in bf16 and f16) at issue — the
// async proxy may write it any time from then on — and the data arrives, with its complete_tx, only when
// a thread waits on the mbarrier (hopper-sync.h): the latest moment. So a kernel that reads a stage
// before its "full" barrier sees NaN, and one that refills a stage still being read (the "empty"
// barrier skipped) destroys what the readers — wgmma, performed at its own wait — see.
#pragma once

namespace kc_emu {

// A shared byte address under the 128-byte swizzle (span 128; 0: none): Swizzle<3, 4, 3>, the 16-byte
// chunk bits 4..6 XOR the bits 7..9. The same function serves TMA and the wgmma descriptors.
inline uint32_t swizzle_addr(uint32_t addr, int span) {
  return span ? addr ^ (((addr >> 7) & 7) << 4) : addr;
}

inline int64_t box_bytes(const TensorMap& m) {
  int64_t n = m.elem_bytes;
  for (int d = 0; d < m.rank; d++) n *= m.box[d];
  return n;
}

// Visits a copy's box 16 bytes at a time, row after row: f(shared address of the chunk as the swizzle
// places it, global addresses of its 16 / elem_bytes elements, each null where it lies outside the
// tensor). Loads (below) and stores (hopper-tma-store.h) lay the box out alike.
template <typename F>
inline void walk_box(const TmaCopy& c, F&& f) {
  const TensorMap& m = c.map;
  const int row_bytes = m.box[0] * m.elem_bytes, per_chunk = 16 / m.elem_bytes;
  int64_t rows = 1;
  for (int d = 1; d < m.rank; d++) rows *= m.box[d];
  uint8_t* elems[16];
  for (int64_t r = 0; r < rows; r++) {
    // The row's coordinates in dimensions 1.., and whether the row lies inside the tensor.
    int64_t at = 0, rest = r;
    bool inside = true;
    for (int d = 1; d < m.rank; d++) {
      const int64_t g = (int64_t)c.coords[d] + rest % m.box[d];
      rest /= m.box[d];
      if (g < 0 || g > (int64_t)m.dims_minus1[d]) inside = false;
      at += g * (int64_t)m.strides[d - 1];
    }
    for (int chunk = 0; chunk < row_bytes / 16; chunk++) {
      for (int e = 0; e < per_chunk; e++) {
        const int64_t g0 = (int64_t)c.coords[0] + chunk * per_chunk + e;
        elems[e] = inside && g0 >= 0 && g0 <= (int64_t)m.dims_minus1[0] ? (uint8_t*)(uintptr_t)m.base + at + g0 * m.elem_bytes : nullptr;
      }
      f(swizzle_addr(c.dst + (uint32_t)(r * row_bytes) + 16 * chunk, m.swizzle_bytes), (uint8_t* const*)elems, per_chunk);
    }
  }
}

inline int64_t perform_tma(const TmaCopy& c) {
  const int elem = c.map.elem_bytes;
  walk_box(c, [&](uint32_t shared, uint8_t* const* global, int n) {
    uint8_t bytes[16] = {};
    for (int e = 0; e < n; e++)
      if (global[e]) memcpy(bytes + e * elem, global[e], elem);
    memcpy(smem_at(shared, 16, "cp.async.bulk.tensor destination"), bytes, 16);
  });
  return box_bytes(c.map);
}

// A copy of `rank` dimensions between the box at shared address `shared` and the tensor `map`
// describes, checked: a map the encoder wrote, of that rank, a 128-byte aligned shared box inside
// dynamic shared memory, and with a swizzle a 128-byte aligned global tensor.
inline TmaCopy tma_copy(uint32_t shared, const CUtensorMap* map, int rank, const int32_t* coords, const char* what) {
  TmaCopy c;
  memcpy(&c.map, map, sizeof c.map);
  const TensorMap& m = c.map;
  if (m.magic != TensorMap::MAGIC) failf("%s with a tensor map that cuTensorMapEncodeTiled did not encode", what);
  if (m.rank != rank) failf("%s of %d dimensions with a tensor map of rank %d", what, rank, m.rank);
  if (shared % 128) failf("%s at shared address %#x: not 128-byte aligned", what, shared);
  // The CUDA programming guide's TMA swizzle requirements: "Global memory must be aligned to 128 bytes".
  if (m.swizzle_bytes && m.base % 128)
    failf("%s with a %d-byte swizzle and global address %#llx: not 128-byte aligned", what, m.swizzle_bytes, (unsigned long long)m.base);
  smem_at(shared, (size_t)box_bytes(m), what);
  c.dst = shared;
  for (int i = 0; i < 5; i++) c.coords[i] = i < rank ? coords[i] : 0;
  return c;
}

inline void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int rank, const int32_t* coords) {
  const TmaCopy c = tma_copy(dst, map, rank, coords, "cp.async.bulk.tensor load");
  MBarrier& b = mbarrier(bar, "cp.async.bulk.tensor's complete_tx");
  if (!b.fenced)
    failf("cp.async.bulk.tensor completing on mbarrier %#x, whose mbarrier.init no fence.mbarrier_init made visible to TMA", bar);
  memset(smem_at(dst, (size_t)box_bytes(c.map), "cp.async.bulk.tensor destination"), 0xFF, (size_t)box_bytes(c.map));
  b.copies.push_back(c);
  block->changes++;
}

}  // namespace kc_emu

inline void kc_tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  const int32_t c[2] = {c0, c1};
  kc_emu::tma_load(dst, map, bar, 2, c);
}
inline void kc_tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2, int c3) {
  const int32_t c[4] = {c0, c1, c2, c3};
  kc_emu::tma_load(dst, map, bar, 4, c);
}
