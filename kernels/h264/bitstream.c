/* NAL unit packaging (H.264 clause 7.3.1 / 7.4.1). */
#include "bitstream.h"
#include "simd.h"

void bw_words_big_endian(u8 *start, u8 *end) {
#if defined(__wasm__)
  u8 *p = start;
#if H264_SIMD
  for (; p + 16 <= end; p += 16) v_store(p, V_SHUFFLE8(v_load(p), 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12));
#endif
  for (; p < end; p += 4) { /* end - start is a multiple of 4 */
    u32 w;
    memcpy(&w, p, 4);
    w = __builtin_bswap32(w);
    memcpy(p, &w, 4);
  }
#else
  (void)start, (void)end;
#endif
}

/* One RBSP byte, preceded by an emulation-prevention 0x03 after two zero bytes when it is <= 3. */
static inline int put_escaped(u8 *dst, int n, u8 b, int *zeros) {
  if (*zeros >= 2 && b <= 3) {
    dst[n++] = 3;
    *zeros = 0;
  }
  dst[n++] = b;
  *zeros = b == 0 ? *zeros + 1 : 0;
  return n;
}

/*
 * Writes the NAL header byte and the payload with emulation_prevention_three_byte inserted: inside a
 * NAL, 00 00 followed by a byte <= 03 would look like a start code (or be reserved), so an 03 goes
 * between. Returns the NAL size; dst needs room for rbsp_size * 3 / 2 + 2 bytes. dst may overlap
 * rbsp when it starts at least rbsp_size / 2 + 2 bytes before it (the output never catches up).
 */
int nal_wrap(u8 *dst, int header, const u8 *rbsp, int rbsp_size) {
  int n = 0, zeros = 0, i = 0;
  dst[n++] = (u8)header;
#if H264_SIMD
  /* Most of a slice has no zero bytes at all: 16 of them without one (and fewer than two zeros
   * before them) copy straight through. The load comes before the store, and the output stays
   * behind the input, so the overlap is harmless. */
  for (; i + 16 <= rbsp_size; i += 16) {
    vec chunk = v_load(rbsp + i);
    if (zeros >= 2 || v_mask8(v_eq8(chunk, v_zero()))) {
      for (int end = i + 16; i < end; i++) {
        n = put_escaped(dst, n, rbsp[i], &zeros);
      }
      i -= 16;
      continue;
    }
    v_store(dst + n, chunk);
    n += 16;
    zeros = 0;
  }
#endif
  for (; i < rbsp_size; i++) {
    n = put_escaped(dst, n, rbsp[i], &zeros);
  }
  return n;
}
