/*
 * Block distortion metrics for mode decision and motion search: SAD for integer-sample search,
 * SATD (sum of absolute 4x4 Hadamard coefficients of the difference, halved) where the cost
 * should track the bits the residual will take after the transform.
 *
 * Each metric has a scalar reference (*_ref) and, when built with SIMD (simd.h), a vector version that
 * returns exactly the same value (h264_selftest in selftest.c checks this).
 */
#include "encoder.h"
#include "simd.h"

int sad16x16_ref(const u8 *a, int as, const u8 *b, int bs) {
  int sum = 0;
  for (int y = 0; y < 16; y++, a += as, b += bs)
    for (int x = 0; x < 16; x++) sum += iabs(a[x] - b[x]);
  return sum;
}

/* SAD against the Vertical, Horizontal and DC Intra_16x16 predictions without forming them: every
 * row equal to `top`, row y filled with left[y * left_stride], or every sample `value`. */
int sad16x16_vertical_ref(const u8 *a, int as, const u8 *top) {
  int sum = 0;
  for (int y = 0; y < 16; y++, a += as)
    for (int x = 0; x < 16; x++) sum += iabs(a[x] - top[x]);
  return sum;
}

int sad16x16_horizontal_ref(const u8 *a, int as, const u8 *left, int left_stride) {
  int sum = 0;
  for (int y = 0; y < 16; y++, a += as)
    for (int x = 0; x < 16; x++) sum += iabs(a[x] - left[y * left_stride]);
  return sum;
}

int sad16x16_flat_ref(const u8 *a, int as, int value) {
  int sum = 0;
  for (int y = 0; y < 16; y++, a += as)
    for (int x = 0; x < 16; x++) sum += iabs(a[x] - value);
  return sum;
}

int sad8x8_ref(const u8 *a, int as, const u8 *b, int bs) {
  int sum = 0;
  for (int y = 0; y < 8; y++, a += as, b += bs)
    for (int x = 0; x < 8; x++) sum += iabs(a[x] - b[x]);
  return sum;
}

void sad16x4_halves_ref(const u8 *a, int as, const u8 *b, int bs, int out[2]) {
  out[0] = out[1] = 0;
  for (int y = 0; y < 4; y++, a += as, b += bs)
    for (int x = 0; x < 16; x++) out[x >> 3] += iabs(a[x] - b[x]);
}

int satd4x4_ref(const u8 *a, int as, const u8 *b, int bs) {
  int d[16], h[16], sum = 0;
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) d[y * 4 + x] = a[y * as + x] - b[y * bs + x];
  hadamard4x4(h, d);
  for (int i = 0; i < 16; i++) sum += iabs(h[i]);
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

u64 ssd_ref(const u8 *a, int as, const u8 *b, int bs, int w, int h) {
  u64 sum = 0;
  for (int y = 0; y < h; y++, a += as, b += bs)
    for (int x = 0; x < w; x++) sum += (u64)((a[x] - b[x]) * (a[x] - b[x]));
  return sum;
}

int luma_mse_q10(const encoder_t *e, const picture_t *p) {
  u64 sse = ssd(e->src_y, e->coded_w, p->y, e->stride_y, e->width, e->height);
  return (int)((sse * 1024 + (u64)(e->width * e->height) / 2) / (u64)(e->width * e->height));
}

#if H264_SIMD

/* Per row: squares of 16-bit differences summed in pairs (at most 16 * 65025 per lane), then widened. */
u64 ssd(const u8 *a, int as, const u8 *b, int bs, int w, int h) {
  u64 sum = 0;
  int wv = w & ~15;
  for (int y = 0; y < h; y++, a += as, b += bs) {
    vec acc = v_zero();
    for (int x = 0; x < wv; x += 16) {
      vec va = v_load(a + x), vb = v_load(b + x);
      vec lo = v_sub16(v_lo_u8_u16(va), v_lo_u8_u16(vb)), hi = v_sub16(v_hi_u8_u16(va), v_hi_u8_u16(vb));
      acc = v_add32(acc, v_add32(v_madd16(lo, lo), v_madd16(hi, hi)));
    }
    sum += (u64)(u32)v_hsum32(acc) + ssd_ref(a + wv, as, b + wv, bs, w - wv, 1);
  }
  return sum;
}

#if defined(__wasm_simd128__)
/* WebAssembly: see sad_row8 below (16-bit lanes from the load on, no u8 -> u16 extadd). */
V_INLINE vec sad_vs16(vec acc, const u8 *a, vec lo, vec hi) {
  return v_add16(v_add16(acc, v_abs16(v_sub16(v_load_u8_u16(a), lo))), v_abs16(v_sub16(v_load_u8_u16(a + 8), hi)));
}

int sad16x16_vertical(const u8 *a, int as, const u8 *top) {
  vec acc = v_zero(), lo = v_load_u8_u16(top), hi = v_load_u8_u16(top + 8);
  for (int y = 0; y < 16; y++, a += as) acc = sad_vs16(acc, a, lo, hi);
  return v_sad_total(acc);
}

int sad16x16_horizontal(const u8 *a, int as, const u8 *left, int left_stride) {
  vec acc = v_zero();
  for (int y = 0; y < 16; y++, a += as) {
    vec l = v_splat16(left[y * left_stride]);
    acc = sad_vs16(acc, a, l, l);
  }
  return v_sad_total(acc);
}

int sad16x16_flat(const u8 *a, int as, int value) {
  vec acc = v_zero(), v = v_splat16(value);
  for (int y = 0; y < 16; y++, a += as) acc = sad_vs16(acc, a, v, v);
  return v_sad_total(acc);
}
#else
int sad16x16_vertical(const u8 *a, int as, const u8 *top) {
  vec acc = v_zero(), t = v_load(top);
  for (int y = 0; y < 16; y++, a += as) acc = v_sad_acc(acc, v_load(a), t);
  return v_sad_total(acc);
}

int sad16x16_horizontal(const u8 *a, int as, const u8 *left, int left_stride) {
  vec acc = v_zero();
  for (int y = 0; y < 16; y++, a += as) acc = v_sad_acc(acc, v_load(a), v_splat8(left[y * left_stride]));
  return v_sad_total(acc);
}

int sad16x16_flat(const u8 *a, int as, int value) {
  vec acc = v_zero(), v = v_splat8(value);
  for (int y = 0; y < 16; y++, a += as) acc = v_sad_acc(acc, v_load(a), v);
  return v_sad_total(acc);
}
#endif

#if defined(__wasm_simd128__)
/* WebAssembly: JavaScriptCore rebuilds the constant of u8 -> u16 extadd_pairwise at every use, so
 * the SADs work on 16-bit lanes from the load on (load8x8_u is one pmovzxbw): |a - b| by i16 abs. */
V_INLINE vec sad_row8(vec acc, const u8 *a, const u8 *b) { return v_add16(acc, v_abs16(v_sub16(v_load_u8_u16(a), v_load_u8_u16(b)))); }
V_INLINE vec sad_row8s(vec acc, vec a, const u8 *b) { return v_add16(acc, v_abs16(v_sub16(a, v_load_u8_u16(b)))); }

int sad8x8(const u8 *a, int as, const u8 *b, int bs) {
  vec acc = v_zero();
  for (int y = 0; y < 8; y++, a += as, b += bs) acc = sad_row8(acc, a, b);
  return v_sad_total(acc);
}
#else
int sad8x8(const u8 *a, int as, const u8 *b, int bs) {
  vec acc = v_zero();
  for (int y = 0; y < 8; y++, a += as, b += bs) acc = v_sad_acc(acc, v_load64(a), v_load64(b));
  return v_sad_total(acc);
}

#endif

#if defined(__wasm_simd128__)
void sad16x4_halves(const u8 *a, int as, const u8 *b, int bs, int out[2]) {
  vec left = v_zero(), right = v_zero();
  for (int y = 0; y < 4; y++, a += as, b += bs) left = sad_row8(left, a, b), right = sad_row8(right, a + 8, b + 8);
  out[0] = v_sad_total(left), out[1] = v_sad_total(right);
}
#else
void sad16x4_halves(const u8 *a, int as, const u8 *b, int bs, int out[2]) {
  vec acc = v_zero();
  for (int y = 0; y < 4; y++, a += as, b += bs) acc = v_sad_acc(acc, v_load(a), v_load(b));
  v_sad_halves(acc, &out[0], &out[1]);
}
#endif

#if defined(__wasm_simd128__)
int sad16x16(const u8 *a, int as, const u8 *b, int bs) {
  vec acc = v_zero();
  V_WASM_UNROLL(2)
  for (int y = 0; y < 16; y++, a += as, b += bs) acc = sad_row8(sad_row8(acc, a, b), a + 8, b + 8);
  return v_sad_total(acc);
}

void sad16x16_x4(const u8 *a, int as, const u8 *const b[4], int bs, int out[4]) {
  vec acc0 = v_zero(), acc1 = v_zero(), acc2 = v_zero(), acc3 = v_zero();
  const u8 *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
  for (int y = 0; y < 16; y++, a += as, b0 += bs, b1 += bs, b2 += bs, b3 += bs) {
    vec lo = v_load_u8_u16(a), hi = v_load_u8_u16(a + 8);
    acc0 = sad_row8s(sad_row8s(acc0, lo, b0), hi, b0 + 8);
    acc1 = sad_row8s(sad_row8s(acc1, lo, b1), hi, b1 + 8);
    acc2 = sad_row8s(sad_row8s(acc2, lo, b2), hi, b2 + 8);
    acc3 = sad_row8s(sad_row8s(acc3, lo, b3), hi, b3 + 8);
  }
  out[0] = v_sad_total(acc0), out[1] = v_sad_total(acc1), out[2] = v_sad_total(acc2), out[3] = v_sad_total(acc3);
}
#else
int sad16x16(const u8 *a, int as, const u8 *b, int bs) {
  vec acc = v_zero();
  V_WASM_UNROLL(2)
  for (int y = 0; y < 16; y++, a += as, b += bs) acc = v_sad_acc(acc, v_load(a), v_load(b));
  return v_sad_total(acc);
}

/* sad16x16 against four blocks at once (the fast search's diamond): each source row is loaded
 * once for all four. */
void sad16x16_x4(const u8 *a, int as, const u8 *const b[4], int bs, int out[4]) {
  vec acc0 = v_zero(), acc1 = v_zero(), acc2 = v_zero(), acc3 = v_zero();
  const u8 *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
  for (int y = 0; y < 16; y++, a += as, b0 += bs, b1 += bs, b2 += bs, b3 += bs) {
    vec src = v_load(a);
    acc0 = v_sad_acc(acc0, src, v_load(b0));
    acc1 = v_sad_acc(acc1, src, v_load(b1));
    acc2 = v_sad_acc(acc2, src, v_load(b2));
    acc3 = v_sad_acc(acc3, src, v_load(b3));
  }
  out[0] = v_sad_total(acc0), out[1] = v_sad_total(acc1), out[2] = v_sad_total(acc2), out[3] = v_sad_total(acc3);
}
#endif

/*
 * SATD of two horizontally adjacent 4x4 blocks (4 rows x 8 columns) of differences, as i32x4
 * partial sums. Rows are transformed lane-wise (the vertical Hadamard), the two 4x4 blocks are
 * transposed, and the horizontal Hadamard runs lane-wise again. Its last butterfly is folded into
 * |x + y| + |x - y| = 2 max(|x|, |y|), which also absorbs the final halving of SATD.
 */
static inline vec satd4x8_diff(vec r0, vec r1, vec r2, vec r3) {
  vec s01 = v_add16(r0, r1), d01 = v_sub16(r0, r1);
  vec s23 = v_add16(r2, r3), d23 = v_sub16(r2, r3);
  vec c[4] = {v_add16(s01, s23), v_sub16(s01, s23), v_sub16(d01, d23), v_add16(d01, d23)};
  v_transpose_two_4x4(c);
  vec t0 = v_add16(c[0], c[1]), t1 = v_sub16(c[0], c[1]);
  vec t2 = v_add16(c[2], c[3]), t3 = v_sub16(c[2], c[3]);
  vec m = v_add16(v_max16(v_abs16(t0), v_abs16(t2)), v_max16(v_abs16(t1), v_abs16(t3)));
  return v_hadd_i16_i32(m);
}

static inline vec diff_row(const u8 *a, const u8 *b) { return v_sub16(v_load_u8_u16(a), v_load_u8_u16(b)); }

static inline vec satd4x8(const u8 *a, int as, const u8 *b, int bs) {
  return satd4x8_diff(diff_row(a, b), diff_row(a + as, b + bs), diff_row(a + 2 * as, b + 2 * bs), diff_row(a + 3 * as, b + 3 * bs));
}

/* Row difference against the average of p and q. */
static inline vec diff_row_avg(const u8 *a, const u8 *p, const u8 *q) { return v_sub16(v_load_u8_u16(a), v_lo_u8_u16(v_avg_u8(v_load64(p), v_load64(q)))); }

int satd16x16_avg(const u8 *src, int ss, const u8 *p, const u8 *q, int bs) {
  vec acc = v_zero();
  for (int y = 0; y < 16; y += 4)
    for (int x = 0; x < 16; x += 8) {
      const u8 *a = src + y * ss + x, *b = p + y * bs + x, *c = q + y * bs + x;
      acc = v_add32(acc, satd4x8_diff(diff_row_avg(a, b, c), diff_row_avg(a + ss, b + bs, c + bs), diff_row_avg(a + 2 * ss, b + 2 * bs, c + 2 * bs),
                                      diff_row_avg(a + 3 * ss, b + 3 * bs, c + 3 * bs)));
    }
  return v_hsum32(acc);
}

int sad16x16_avg(const u8 *src, int ss, const u8 *p, const u8 *q, int bs) {
  vec acc = v_zero();
  for (int y = 0; y < 16; y++, src += ss, p += bs, q += bs) acc = v_sad_acc(acc, v_load(src), v_avg_u8(v_load(p), v_load(q)));
  return v_sad_total(acc);
}

int satd16x16(const u8 *a, int as, const u8 *b, int bs) {
  vec acc = v_zero();
  for (int y = 0; y < 16; y += 4) {
    acc = v_add32(acc, satd4x8(a + y * as, as, b + y * bs, bs));
    acc = v_add32(acc, satd4x8(a + y * as + 8, as, b + y * bs + 8, bs));
  }
  return v_hsum32(acc);
}

int satd8x8(const u8 *a, int as, const u8 *b, int bs) {
  return v_hsum32(v_add32(satd4x8(a, as, b, bs), satd4x8(a + 4 * as, as, b + 4 * bs, bs)));
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
  vec va = v_load(ra), vb = v_load(rb);
  vec d01 = v_sub16(v_lo_u8_u16(va), v_lo_u8_u16(vb)); /* rows 0 | 1 */
  vec d23 = v_sub16(v_hi_u8_u16(va), v_hi_u8_u16(vb)); /* rows 2 | 3 */
  vec s = v_add16(d01, d23), t = v_sub16(d01, d23);    /* r0+r2 | r1+r3,  r0-r2 | r1-r3 */
  vec s_sw = V_SHUFFLE8(s, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  vec t_sw = V_SHUFFLE8(t, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  vec h[2] = {v_zip_lo64(v_add16(s, s_sw), v_sub16(s, s_sw)), v_zip_lo64(v_add16(t, t_sw), v_sub16(t, t_sw))};
  const vec odd = v_zip_lo16(v_zero(), v_splat16(-1)); /* lanes 1, 3, 5, 7 */
  vec acc = v_zero();
  for (int k = 0; k < 2; k++) {
    vec sw = V_SHUFFLE8(h[k], 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    vec m = v_select(odd, v_sub16(h[k], sw), v_add16(h[k], sw));
    vec m_sw = V_SHUFFLE8(m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    acc = v_add16(acc, v_max16(v_abs16(m), v_abs16(m_sw)));
  }
  return v_hsum32(v_hadd_i16_i32(acc)) >> 1;
}

#else

u64 ssd(const u8 *a, int as, const u8 *b, int bs, int w, int h) { return ssd_ref(a, as, b, bs, w, h); }
int sad16x16(const u8 *a, int as, const u8 *b, int bs) { return sad16x16_ref(a, as, b, bs); }
void sad16x16_x4(const u8 *a, int as, const u8 *const b[4], int bs, int out[4]) {
  for (int k = 0; k < 4; k++) out[k] = sad16x16_ref(a, as, b[k], bs);
}
int sad8x8(const u8 *a, int as, const u8 *b, int bs) { return sad8x8_ref(a, as, b, bs); }
void sad16x4_halves(const u8 *a, int as, const u8 *b, int bs, int out[2]) { sad16x4_halves_ref(a, as, b, bs, out); }
int sad16x16_vertical(const u8 *a, int as, const u8 *top) { return sad16x16_vertical_ref(a, as, top); }
int sad16x16_horizontal(const u8 *a, int as, const u8 *left, int ls) { return sad16x16_horizontal_ref(a, as, left, ls); }
int sad16x16_flat(const u8 *a, int as, int value) { return sad16x16_flat_ref(a, as, value); }
int satd4x4(const u8 *a, int as, const u8 *b, int bs) { return satd4x4_ref(a, as, b, bs); }
int satd8x8(const u8 *a, int as, const u8 *b, int bs) { return satd8x8_ref(a, as, b, bs); }
int satd16x16(const u8 *a, int as, const u8 *b, int bs) { return satd16x16_ref(a, as, b, bs); }

static void avg_block16(u8 out[256], const u8 *p, const u8 *q, int bs) {
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) out[y * 16 + x] = (u8)((p[y * bs + x] + q[y * bs + x] + 1) >> 1);
}

int satd16x16_avg(const u8 *src, int ss, const u8 *p, const u8 *q, int bs) {
  u8 pred[256];
  avg_block16(pred, p, q, bs);
  return satd16x16_ref(src, ss, pred, 16);
}

int sad16x16_avg(const u8 *src, int ss, const u8 *p, const u8 *q, int bs) {
  u8 pred[256];
  avg_block16(pred, p, q, bs);
  return sad16x16_ref(src, ss, pred, 16);
}

#endif
