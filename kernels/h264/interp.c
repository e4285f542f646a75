/*
 * Fractional-sample interpolation (H.264 clause 8.4.2.2).
 *
 * Luma: after a reference picture is deblocked and its border replicated, the three half-sample
 * planes b (horizontal), h (vertical) and j (centre) are computed once with the 6-tap filter
 * (1, -5, 20, 20, -5, 1); j filters the unrounded horizontal intermediates vertically, as the spec
 * does. Every quarter-sample position is then the rounded average of two of {G, b, h, j} at some
 * offset (Table 8-12 and equations 8-250..8-261), so motion search and compensation only average.
 *
 * Chroma: bilinear with eighth-sample weights (8-266).
 */
#include "encoder.h"

static inline int tap6(int a, int b, int c, int d, int e, int f) { return a - 5 * b + 20 * c + 20 * d - 5 * e + f; }

/* One row of each plane over columns [x, x_end): the scalar reference, also used for row tails. */
static void half_row_ref(const u8 *f, int s, u8 *hb, u8 *hv, i16 *b1_next, int x, int x_end) {
  for (; x < x_end; x++) {
    hb[x] = clip_pixel((tap6(f[x - 2], f[x - 1], f[x], f[x + 1], f[x + 2], f[x + 3]) + 16) >> 5);
    hv[x] = clip_pixel((tap6(f[x - 2 * s], f[x - s], f[x], f[x + s], f[x + 2 * s], f[x + 3 * s]) + 16) >> 5);
    const u8 *g = f + 3 * s; /* row y + 3 feeds the centre plane's rolling window */
    b1_next[x] = (i16)tap6(g[x - 2], g[x - 1], g[x], g[x + 1], g[x + 2], g[x + 3]);
  }
}

static void centre_row_ref(u8 *hc, const i16 *const r[6], int x, int x_end) {
  for (; x < x_end; x++) hc[x] = clip_pixel((tap6(r[0][x], r[1][x], r[2][x], r[3][x], r[4][x], r[5][x]) + 512) >> 10);
}

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

static inline v128_t tap6_i16(v128_t a, v128_t b, v128_t c, v128_t d, v128_t e, v128_t f) {
  v128_t outer = wasm_i16x8_add(a, f), mid = wasm_i16x8_add(b, e), inner = wasm_i16x8_add(c, d);
  return wasm_i16x8_add(wasm_i16x8_sub(outer, wasm_i16x8_mul(mid, wasm_i16x8_splat(5))),
                        wasm_i16x8_mul(inner, wasm_i16x8_splat(20)));
}

/* 6-tap over u8 samples p[-2*step .. 3*step] for 16 columns: low and high halves as i16x8. */
static inline void tap6_u8x16(const u8 *p, int step, v128_t *lo, v128_t *hi) {
  v128_t v[6];
  for (int k = 0; k < 6; k++) v[k] = wasm_v128_load(p + (k - 2) * step);
#define HALF(fn) tap6_i16(fn(v[0]), fn(v[1]), fn(v[2]), fn(v[3]), fn(v[4]), fn(v[5]))
  *lo = HALF(wasm_u16x8_extend_low_u8x16);
  *hi = HALF(wasm_u16x8_extend_high_u8x16);
#undef HALF
}

static inline v128_t round_to_u8(v128_t lo, v128_t hi) { /* (x + 16) >> 5, saturated to 0..255 */
  v128_t r = wasm_i16x8_splat(16);
  return wasm_u8x16_narrow_i16x8(wasm_i16x8_shr(wasm_i16x8_add(lo, r), 5), wasm_i16x8_shr(wasm_i16x8_add(hi, r), 5));
}

static void half_row(const u8 *f, int s, u8 *hb, u8 *hv, i16 *b1_next, int x, int x_end) {
  for (; x + 16 <= x_end; x += 16) {
    v128_t lo, hi;
    tap6_u8x16(f + x, 1, &lo, &hi);
    wasm_v128_store(hb + x, round_to_u8(lo, hi));
    tap6_u8x16(f + x, s, &lo, &hi);
    wasm_v128_store(hv + x, round_to_u8(lo, hi));
    tap6_u8x16(f + 3 * s + x, 1, &lo, &hi);
    wasm_v128_store(b1_next + x, lo);
    wasm_v128_store(b1_next + x + 8, hi);
  }
  half_row_ref(f, s, hb, hv, b1_next, x, x_end);
}

/* j = (tap6 over six rows of b1 + 512) >> 10; b1 reaches 10710, so the sum needs 32 bits. */
static void centre_row(u8 *hc, const i16 *const r[6], int x, int x_end) {
  for (; x + 8 <= x_end; x += 8) {
    v128_t lo[6], hi[6];
    for (int k = 0; k < 6; k++) {
      v128_t v = wasm_v128_load(r[k] + x);
      lo[k] = wasm_i32x4_extend_low_i16x8(v);
      hi[k] = wasm_i32x4_extend_high_i16x8(v);
    }
#define TAP32(v)                                                                                                  \
  wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_sub(wasm_i32x4_add(v[0], v[5]),                         \
                                                              wasm_i32x4_mul(wasm_i32x4_add(v[1], v[4]),          \
                                                                             wasm_i32x4_splat(5))),              \
                                               wasm_i32x4_mul(wasm_i32x4_add(v[2], v[3]), wasm_i32x4_splat(20))), \
                                wasm_i32x4_splat(512)),                                                          \
                 10)
    v128_t w = wasm_i16x8_narrow_i32x4(TAP32(lo), TAP32(hi));
#undef TAP32
    wasm_v128_store64_lane(hc + x, wasm_u8x16_narrow_i16x8(w, w), 0);
  }
  centre_row_ref(hc, r, x, x_end);
}
#else
#define half_row half_row_ref
#define centre_row centre_row_ref
#endif

/* Fills the half-sample planes for every position the motion search may touch: the picture plus
 * its border, minus three samples at the outer edge where the filter would run off the allocation. */
void interp_half_planes(encoder_t *e, picture_t *p) {
  const int s = e->stride_y;
  const int x0 = -PAD_Y + 3, x1 = e->coded_w + PAD_Y - 3;
  const int y0 = -PAD_Y + 3, y1 = e->coded_h + PAD_Y - 3;
  /* Rolling window of six rows of unrounded horizontal intermediates b1 (rows y-2 .. y+3), indexed
   * by picture column so they line up with the planes. */
  static i16 *rows[6];
  static int rows_width;
  if (rows_width != s) {
    for (int k = 0; k < 6; k++) rows[k] = (i16 *)arena_alloc((size_t)s * sizeof(i16)) + PAD_Y;
    rows_width = s;
  }
  for (int r = 0; r < 5; r++) {
    const u8 *f = p->y + (y0 - 2 + r) * s;
    for (int x = x0; x < x1; x++) rows[r][x] = (i16)tap6(f[x - 2], f[x - 1], f[x], f[x + 1], f[x + 2], f[x + 3]);
  }
  for (int y = y0; y < y1; y++) {
    int k = y - y0;
    const i16 *window[6] = {rows[k % 6], rows[(k + 1) % 6], rows[(k + 2) % 6], rows[(k + 3) % 6], rows[(k + 4) % 6], rows[(k + 5) % 6]};
    half_row(p->y + y * s, s, p->half_h + y * s, p->half_v + y * s, rows[(k + 5) % 6], x0, x1);
    centre_row(p->half_c + y * s, window, x0, x1);
  }
}

static void copy16(u8 *dst, const u8 *a, int s) {
  for (int y = 0; y < 16; y++) memcpy(dst + y * 16, a + y * s, 16);
}

static void avg16(u8 *dst, const u8 *a, const u8 *b, int s) {
#ifdef __wasm_simd128__
  for (int y = 0; y < 16; y++, a += s, b += s) wasm_v128_store(dst + y * 16, wasm_u8x16_avgr(wasm_v128_load(a), wasm_v128_load(b)));
#else
  for (int y = 0; y < 16; y++, a += s, b += s)
    for (int x = 0; x < 16; x++) dst[y * 16 + x] = (u8)((a[x] + b[x] + 1) >> 1);
#endif
}

/* 16x16 luma prediction for the block whose top-left luma sample is (x, y), quarter-sample MV. */
void mc_luma16(u8 dst[256], const picture_t *ref, int s, int x, int y, int mvx, int mvy) {
  int xi = x + (mvx >> 2), yi = y + (mvy >> 2), fx = mvx & 3, fy = mvy & 3;
  int o = yi * s + xi;
  const u8 *G = ref->y + o, *b = ref->half_h + o, *h = ref->half_v + o, *j = ref->half_c + o;
  switch (fy * 4 + fx) {
  case 0: copy16(dst, G, s); break;              /* G */
  case 1: avg16(dst, G, b, s); break;            /* a = (G + b) */
  case 2: copy16(dst, b, s); break;              /* b */
  case 3: avg16(dst, G + 1, b, s); break;        /* c = (H + b) */
  case 4: avg16(dst, G, h, s); break;            /* d = (G + h) */
  case 5: avg16(dst, b, h, s); break;            /* e = (b + h) */
  case 6: avg16(dst, b, j, s); break;            /* f = (b + j) */
  case 7: avg16(dst, b, h + 1, s); break;        /* g = (b + m) */
  case 8: copy16(dst, h, s); break;              /* h */
  case 9: avg16(dst, h, j, s); break;            /* i = (h + j) */
  case 10: copy16(dst, j, s); break;             /* j */
  case 11: avg16(dst, j, h + 1, s); break;       /* k = (j + m) */
  case 12: avg16(dst, G + s, h, s); break;       /* n = (M + h) */
  case 13: avg16(dst, h, b + s, s); break;       /* p = (h + s) */
  case 14: avg16(dst, j, b + s, s); break;       /* q = (j + s) */
  default: avg16(dst, h + 1, b + s, s); break;   /* r = (m + s) */
  }
}

/* 8x8 chroma prediction for the block at chroma sample (cx, cy); the luma MV is in 1/8 chroma units. */
void mc_chroma8_ref(u8 dst[64], const u8 *plane, int s, int cx, int cy, int mvx, int mvy) {
  int fx = mvx & 7, fy = mvy & 7;
  const u8 *a = plane + (cy + (mvy >> 3)) * s + cx + (mvx >> 3);
  int wa = (8 - fx) * (8 - fy), wb = fx * (8 - fy), wc = (8 - fx) * fy, wd = fx * fy;
  for (int y = 0; y < 8; y++, a += s)
    for (int x = 0; x < 8; x++)
      dst[y * 8 + x] = (u8)((wa * a[x] + wb * a[x + 1] + wc * a[x + s] + wd * a[x + s + 1] + 32) >> 6);
}

#ifdef __wasm_simd128__
void mc_chroma8(u8 dst[64], const u8 *plane, int s, int cx, int cy, int mvx, int mvy) {
  int fx = mvx & 7, fy = mvy & 7;
  const u8 *a = plane + (cy + (mvy >> 3)) * s + cx + (mvx >> 3);
  /* the weights sum to 64, so every term and the sum fit in 16 bits */
  v128_t wa = wasm_i16x8_splat((i16)((8 - fx) * (8 - fy))), wb = wasm_i16x8_splat((i16)(fx * (8 - fy)));
  v128_t wc = wasm_i16x8_splat((i16)((8 - fx) * fy)), wd = wasm_i16x8_splat((i16)(fx * fy));
  v128_t top = wasm_u16x8_load8x8(a), top1 = wasm_u16x8_load8x8(a + 1);
  for (int y = 0; y < 8; y++, a += s) {
    v128_t bot = wasm_u16x8_load8x8(a + s), bot1 = wasm_u16x8_load8x8(a + s + 1);
    v128_t sum = wasm_i16x8_add(wasm_i16x8_add(wasm_i16x8_mul(top, wa), wasm_i16x8_mul(top1, wb)),
                                wasm_i16x8_add(wasm_i16x8_mul(bot, wc), wasm_i16x8_mul(bot1, wd)));
    sum = wasm_u16x8_shr(wasm_i16x8_add(sum, wasm_i16x8_splat(32)), 6);
    wasm_v128_store64_lane(dst + y * 8, wasm_u8x16_narrow_i16x8(sum, sum), 0);
    top = bot;
    top1 = bot1;
  }
}
#else
void mc_chroma8(u8 dst[64], const u8 *plane, int s, int cx, int cy, int mvx, int mvy) { mc_chroma8_ref(dst, plane, s, cx, cy, mvx, mvy); }
#endif
