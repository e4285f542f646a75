// The warp collectives of the CPU emulator (emulator.h, which includes this after its fibers and
// barriers): ldmatrix, mma.sync m16n8k16 and __shfl_xor_sync. Each thread of the warp puts its operands
// in its slot (one of two sets, by the parity of the warp's barrier count, so a fast thread's next
// collective cannot overwrite what a slow one still reads), the warp meets at its barrier, and each
// thread then reads what it receives from the others' slots, in the operand layouts of the PTX ISA.
#pragma once

namespace kc_emu {

// A warp collective needs the whole warp (the kernels here always name every lane; a thread that left
// the kernel cannot answer a shuffle): the mask is checked on entry, and the warp's live threads as
// the collective's barrier let it through — a thread that exits instead of arriving releases the
// barrier, and only then is it known that the warp was not whole (a thread that exits after the
// release, before the others resume, is not counted against it).
inline void whole_warp(unsigned mask, const char* what) {
  if (mask != 0xffffffffu) { fprintf(stderr, "emulator: %s with mask %08x: only full-warp masks are emulated\n", what, mask); abort(); }
}
inline void collective_barrier(const char* what) {
  warp_barrier();
  if (block->warp_released_live[me().flat / 32] != 32) { fprintf(stderr, "emulator: %s in a warp where some threads have exited\n", what); abort(); }
}

__attribute__((no_sanitize("address", "undefined"), always_inline)) inline float half_bits_to_float(uint16_t h, bool f16) {
  if (f16) {
    __half_raw r;
    r.x = h;
    return __half2float(__half(r));
  }
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

inline uint16_t smem_u16(uint32_t addr) {
  uint16_t v;
  memcpy(&v, smem_at(addr, 2, "ldmatrix"), 2);
  return v;
}

// ldmatrix .m8n8 .x4 .b16: lanes 8j..8j+7 give the row addresses of matrix j; lane t receives, in
// register j, row t/4 columns 2(t%4), +1 of matrix j (of its transpose with .trans).
inline void ldmatrix_x4(uint32_t addr, uint32_t* r, bool trans) {
  if (addr % 16) fail("ldmatrix row address not 16-byte aligned");
  Thread& t = me();
  const int lane = t.flat % 32, base = t.flat - lane, p = block->warp_generation[t.flat / 32] & 1;
  t.slot[p][0] = addr;
  collective_barrier("ldmatrix");
  for (int j = 0; j < 4; j++) {
    r[j] = 0;
    for (int e = 0; e < 2; e++) {
      const int row = trans ? 2 * (lane % 4) + e : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + e;
      r[j] |= (uint32_t)smem_u16(block->threads[base + 8 * j + row].slot[p][0] + 2 * col) << (16 * e);
    }
  }
}

// mma.sync m16n8k16 .row.col, f32 accumulators: lane = 4·group + t. A: a[0] (row g, k 2t, 2t+1),
// a[1] (row g+8), a[2] (row g, k + 8), a[3] (row g+8, k + 8); B: b[0] (k 2t, 2t+1, column g),
// b[1] (k + 8); C/D: (row g, columns 2t, 2t+1), then row g+8. Each thread decodes the two rows of A and
// the two columns of B its outputs need once, then sums each output in k order in double. It reads only
// the emulator's own slots, so the sanitizers, which would check each of its thousand-odd operations,
// leave it out: it is most of an emulated GEMM's time.
__attribute__((no_sanitize("address", "undefined"))) inline void mma_16816(float* d, const uint32_t* a, const uint32_t* b, bool f16) {
  Thread& t = me();
  const int lane = t.flat % 32, base = t.flat - lane, p = block->warp_generation[t.flat / 32] & 1;
  for (int i = 0; i < 4; i++) t.slot[p][i] = a[i];
  t.slot[p][4] = b[0], t.slot[p][5] = b[1];
  collective_barrier("mma.sync");
  const int g = lane / 4, c0 = 2 * (lane % 4);
  // the A registers of lanes 4g … 4g + 3, and the B registers of lanes 4·c0 … 4·c0 + 7
  const Thread* warp = block->threads.data() + base;
  uint32_t ra[4][4], rb[8][2];
  for (int j = 0; j < 4; j++)
    for (int reg = 0; reg < 4; reg++) ra[j][reg] = warp[g * 4 + j].slot[p][reg];
  for (int j = 0; j < 8; j++)
    for (int reg = 0; reg < 2; reg++) rb[j][reg] = warp[c0 * 4 + j].slot[p][4 + reg];
  double A[2][16], B[2][16];  // rows g, g + 8 of A; columns c0, c0 + 1 of B
  for (int k = 0; k < 16; k++) {
    for (int r = 0; r < 2; r++) A[r][k] = half_bits_to_float((uint16_t)(ra[(k % 8) / 2][r + 2 * (k >= 8)] >> (16 * (k % 2))), f16);
    for (int c = 0; c < 2; c++) B[c][k] = half_bits_to_float((uint16_t)(rb[c * 4 + (k % 8) / 2][k >= 8] >> (16 * (k % 2))), f16);
  }
  for (int i = 0; i < 4; i++) {
    double s = d[i];
    for (int k = 0; k < 16; k++) s += A[i / 2][k] * B[i % 2][k];
    d[i] = (float)s;
  }
}

// __shfl_xor_sync(mask, v, lane_mask, width): lane l reads v of lane l ^ lane_mask; with width < 32
// the warp is cut into groups of `width` lanes, and a source lane in a later group than l's gives l
// its own v back, one in an earlier group is read (the CUDA programming guide's rule).
template <typename T>
inline T shfl_xor(unsigned mask, T v, int lane_mask, int width) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  if (width <= 0 || width > 32 || (width & (width - 1))) fail("__shfl_xor_sync width not a power of two in 1..32");
  whole_warp(mask, "__shfl_xor_sync");
  Thread& t = me();
  const int lane = t.flat % 32, base = t.flat - lane, p = block->warp_generation[t.flat / 32] & 1;
  memcpy(&t.slot[p][0], &v, 4);
  collective_barrier("__shfl_xor_sync");
  const int src = lane ^ (lane_mask & 31);
  if (src / width > lane / width) return v;
  T out;
  memcpy(&out, &block->threads[base + src].slot[p][0], 4);
  return out;
}

}  // namespace kc_emu

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return kc_emu::shfl_xor(mask, v, lane_mask, width);
}
