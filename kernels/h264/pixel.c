/*
 * Block distortion metrics for mode decision and motion search: SAD for integer-sample search,
 * SATD (sum of absolute 4x4 Hadamard coefficients of the difference, halved) where the cost
 * should track the bits the residual will take after the transform.
 *
 * Each metric has a scalar reference (*_ref) and, when built with SIMD128, a vector version that
 * returns exactly the same value (h264_selftest in selftest.c checks this).
 */
#include "encoder.h"
#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

int sad16x16_ref(const u8 *a, int as, const u8 *b, int bs) {
  int sum = 0;
  for (int y = 0; y < 16; y++, a += as, b += bs)
    for (int x = 0; x < 16; x++) sum += iabs(a[x] - b[x]);
  return sum;
}

int satd4x4_ref(const u8 *a, int as, const u8 *b, int bs) {
  int d[16], t[16], sum = 0;
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) d[y * 4 + x] = a[y * as + x] - b[y * bs + x];
  for (int i = 0; i < 4; i++) {
    int *r = d + i * 4;
    int s01 = r[0] + r[1], d01 = r[0] - r[1], s23 = r[2] + r[3], d23 = r[2] - r[3];
    t[i * 4 + 0] = s01 + s23;
    t[i * 4 + 1] = s01 - s23;
    t[i * 4 + 2] = d01 - d23;
    t[i * 4 + 3] = d01 + d23;
  }
  for (int j = 0; j < 4; j++) {
    int s01 = t[j] + t[4 + j], d01 = t[j] - t[4 + j], s23 = t[8 + j] + t[12 + j], d23 = t[8 + j] - t[12 + j];
    sum += iabs(s01 + s23) + iabs(s01 - s23) + iabs(d01 - d23) + iabs(d01 + d23);
  }
  return sum >> 1;
}

static int satd_ref(const u8 *a, int as, const u8 *b, int bs, int w, int h) {
  int sum = 0;
  for (int y = 0; y < h; y += 4)
    for (int x = 0; x < w; x += 4) sum += satd4x4_ref(a + y * as + x, as, b + y * bs + x, bs);
  return sum;
}

int satd8x8_ref(const u8 *a, int as, const u8 *b, int bs) { return satd_ref(a, as, b, bs, 8, 8); }
int satd16x16_ref(const u8 *a, int as, const u8 *b, int bs) { return satd_ref(a, as, b, bs, 16, 16); }

#ifdef __wasm_simd128__

int sad16x16(const u8 *a, int as, const u8 *b, int bs) {
  v128_t acc = wasm_i16x8_splat(0);
  for (int y = 0; y < 16; y++, a += as, b += bs) {
    v128_t va = wasm_v128_load(a), vb = wasm_v128_load(b);
    v128_t diff = wasm_i8x16_sub(wasm_u8x16_max(va, vb), wasm_u8x16_min(va, vb));
    acc = wasm_i16x8_add(acc, wasm_u16x8_extadd_pairwise_u8x16(diff)); /* <= 16 * 510 per lane */
  }
  v128_t s = wasm_u32x4_extadd_pairwise_u16x8(acc);
  return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1) + wasm_i32x4_extract_lane(s, 2) +
         wasm_i32x4_extract_lane(s, 3);
}

/*
 * SATD of two horizontally adjacent 4x4 blocks (4 rows x 8 columns), as i32x4 partial sums.
 * Rows are transformed lane-wise (the vertical Hadamard), the two 4x4 blocks are transposed with
 * shuffles, and the horizontal Hadamard runs lane-wise again. Its last butterfly is folded into
 * |x + y| + |x - y| = 2 max(|x|, |y|), which also absorbs the final halving of SATD.
 */
static inline v128_t satd4x8(const u8 *a, int as, const u8 *b, int bs) {
  v128_t r0 = wasm_i16x8_sub(wasm_u16x8_load8x8(a), wasm_u16x8_load8x8(b));
  v128_t r1 = wasm_i16x8_sub(wasm_u16x8_load8x8(a + as), wasm_u16x8_load8x8(b + bs));
  v128_t r2 = wasm_i16x8_sub(wasm_u16x8_load8x8(a + 2 * as), wasm_u16x8_load8x8(b + 2 * bs));
  v128_t r3 = wasm_i16x8_sub(wasm_u16x8_load8x8(a + 3 * as), wasm_u16x8_load8x8(b + 3 * bs));
  v128_t s01 = wasm_i16x8_add(r0, r1), d01 = wasm_i16x8_sub(r0, r1);
  v128_t s23 = wasm_i16x8_add(r2, r3), d23 = wasm_i16x8_sub(r2, r3);
  v128_t h0 = wasm_i16x8_add(s01, s23), h1 = wasm_i16x8_sub(s01, s23);
  v128_t h2 = wasm_i16x8_sub(d01, d23), h3 = wasm_i16x8_add(d01, d23);
  /* transpose: c_j = [column j of the left block | column j of the right block] */
  v128_t lo01 = wasm_i16x8_shuffle(h0, h1, 0, 8, 1, 9, 2, 10, 3, 11);
  v128_t hi01 = wasm_i16x8_shuffle(h0, h1, 4, 12, 5, 13, 6, 14, 7, 15);
  v128_t lo23 = wasm_i16x8_shuffle(h2, h3, 0, 8, 1, 9, 2, 10, 3, 11);
  v128_t hi23 = wasm_i16x8_shuffle(h2, h3, 4, 12, 5, 13, 6, 14, 7, 15);
  v128_t x0 = wasm_i32x4_shuffle(lo01, lo23, 0, 4, 1, 5), x1 = wasm_i32x4_shuffle(lo01, lo23, 2, 6, 3, 7);
  v128_t y0 = wasm_i32x4_shuffle(hi01, hi23, 0, 4, 1, 5), y1 = wasm_i32x4_shuffle(hi01, hi23, 2, 6, 3, 7);
  v128_t c0 = wasm_i64x2_shuffle(x0, y0, 0, 2), c1 = wasm_i64x2_shuffle(x0, y0, 1, 3);
  v128_t c2 = wasm_i64x2_shuffle(x1, y1, 0, 2), c3 = wasm_i64x2_shuffle(x1, y1, 1, 3);
  v128_t t0 = wasm_i16x8_add(c0, c1), t1 = wasm_i16x8_sub(c0, c1);
  v128_t t2 = wasm_i16x8_add(c2, c3), t3 = wasm_i16x8_sub(c2, c3);
  v128_t m = wasm_i16x8_add(wasm_i16x8_max(wasm_i16x8_abs(t0), wasm_i16x8_abs(t2)),
                            wasm_i16x8_max(wasm_i16x8_abs(t1), wasm_i16x8_abs(t3)));
  return wasm_i32x4_extadd_pairwise_i16x8(m);
}

static inline int hsum_i32x4(v128_t v) {
  return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
         wasm_i32x4_extract_lane(v, 3);
}

int satd16x16(const u8 *a, int as, const u8 *b, int bs) {
  v128_t acc = wasm_i32x4_splat(0);
  for (int y = 0; y < 16; y += 4) {
    acc = wasm_i32x4_add(acc, satd4x8(a + y * as, as, b + y * bs, bs));
    acc = wasm_i32x4_add(acc, satd4x8(a + y * as + 8, as, b + y * bs + 8, bs));
  }
  return hsum_i32x4(acc);
}

int satd8x8(const u8 *a, int as, const u8 *b, int bs) {
  v128_t acc = wasm_i32x4_add(satd4x8(a, as, b, bs), satd4x8(a + 4 * as, as, b + 4 * bs, bs));
  return hsum_i32x4(acc);
}

/* One 4x4 block: rows 0-1 and 2-3 share a vector; the vertical Hadamard pairs the halves with a
 * 64-bit swap, the horizontal one pairs lanes with shuffles, and the last butterfly is the same
 * max trick as in satd4x8 (every pair is counted twice here, hence the final halving). */
int satd4x4(const u8 *a, int as, const u8 *b, int bs) {
  u32 ra[4], rb[4];
  for (int y = 0; y < 4; y++) {
    memcpy(&ra[y], a + y * as, 4);
    memcpy(&rb[y], b + y * bs, 4);
  }
  v128_t va = wasm_v128_load(ra), vb = wasm_v128_load(rb);
  v128_t d01 = wasm_i16x8_sub(wasm_u16x8_extend_low_u8x16(va), wasm_u16x8_extend_low_u8x16(vb));   /* rows 0 | 1 */
  v128_t d23 = wasm_i16x8_sub(wasm_u16x8_extend_high_u8x16(va), wasm_u16x8_extend_high_u8x16(vb)); /* rows 2 | 3 */
  v128_t s = wasm_i16x8_add(d01, d23), t = wasm_i16x8_sub(d01, d23); /* r0+r2 | r1+r3,  r0-r2 | r1-r3 */
  v128_t s_sw = wasm_i64x2_shuffle(s, s, 1, 0), t_sw = wasm_i64x2_shuffle(t, t, 1, 0);
  v128_t h[2] = {wasm_i64x2_shuffle(wasm_i16x8_add(s, s_sw), wasm_i16x8_sub(s, s_sw), 0, 2),
                 wasm_i64x2_shuffle(wasm_i16x8_add(t, t_sw), wasm_i16x8_sub(t, t_sw), 0, 2)};
  v128_t acc = wasm_i16x8_splat(0);
  for (int k = 0; k < 2; k++) {
    v128_t sw = wasm_i16x8_shuffle(h[k], h[k], 1, 0, 3, 2, 5, 4, 7, 6);
    v128_t m = wasm_i16x8_shuffle(wasm_i16x8_add(h[k], sw), wasm_i16x8_sub(h[k], sw), 0, 9, 2, 11, 4, 13, 6, 15);
    v128_t m_sw = wasm_i16x8_shuffle(m, m, 2, 3, 0, 1, 6, 7, 4, 5);
    acc = wasm_i16x8_add(acc, wasm_i16x8_max(wasm_i16x8_abs(m), wasm_i16x8_abs(m_sw)));
  }
  return hsum_i32x4(wasm_i32x4_extadd_pairwise_i16x8(acc)) >> 1;
}

#else

int sad16x16(const u8 *a, int as, const u8 *b, int bs) { return sad16x16_ref(a, as, b, bs); }
int satd4x4(const u8 *a, int as, const u8 *b, int bs) { return satd4x4_ref(a, as, b, bs); }
int satd8x8(const u8 *a, int as, const u8 *b, int bs) { return satd8x8_ref(a, as, b, bs); }
int satd16x16(const u8 *a, int as, const u8 *b, int bs) { return satd16x16_ref(a, as, b, bs); }

#endif
