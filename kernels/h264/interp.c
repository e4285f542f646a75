/*
 * Fractional-sample interpolation (H.264 clause 8.4.2.2).
 *
 * Luma: after a reference picture is deblocked and its border replicated, the three half-sample
 * planes b (horizontal), h (vertical) and j (centre) are computed once with the 6-tap filter
 * (1, -5, 20, 20, -5, 1); j filters the unrounded horizontal intermediates vertically, as the spec
 * does. Every quarter-sample position is then the rounded average of two of {G, b, h, j} at some
 * offset (Table 8-12 and equations 8-250..8-261), so motion search and compensation only average
 * (luma_qpel_planes names the pair; averaging a plane with itself is the plane).
 *
 * Chroma: bilinear with eighth-sample weights (8-266).
 */
#include "encoder.h"
#include "simd.h"

static inline int tap6(int a, int b, int c, int d, int e, int f) { return a - 5 * b + 20 * c + 20 * d - 5 * e + f; }

/* The scalar reference of each step, also used for row tails:
 * b1_row: unrounded horizontal 6-tap of one row (the centre plane's input);
 * half_row: b from that row's b1 and h from six rows of samples;
 * centre_row: j from six rows of b1. */
static void b1_row_ref(const u8 *f, i16 *b1, int x, int x_end) {
  for (; x < x_end; x++) b1[x] = (i16)tap6(f[x - 2], f[x - 1], f[x], f[x + 1], f[x + 2], f[x + 3]);
}

static void half_row_ref(const u8 *f, int s, const i16 *b1, u8 *hb, u8 *hv, int x, int x_end) {
  for (; x < x_end; x++) {
    hb[x] = clip_pixel((b1[x] + 16) >> 5);
    hv[x] = clip_pixel((tap6(f[x - 2 * s], f[x - s], f[x], f[x + s], f[x + 2 * s], f[x + 3 * s]) + 16) >> 5);
  }
}

static void centre_row_ref(u8 *hc, const i16 *const r[6], int x, int x_end) {
  for (; x < x_end; x++) hc[x] = clip_pixel((tap6(r[0][x], r[1][x], r[2][x], r[3][x], r[4][x], r[5][x]) + 512) >> 10);
}

#if H264_SIMD

static inline vec tap6_i16(vec a, vec b, vec c, vec d, vec e, vec f) {
  vec outer = v_add16(a, f), mid = v_add16(b, e), inner = v_add16(c, d);
  return v_add16(v_sub16(outer, v_mul16(mid, v_splat16(5))), v_mul16(inner, v_splat16(20)));
}

/* 6-tap over u8 samples p[-2*step .. 3*step] for 16 columns: low and high halves as i16x8. */
static inline void tap6_u8x16(const u8 *p, int step, vec *lo, vec *hi) {
  vec v[6];
  for (int k = 0; k < 6; k++) v[k] = v_load(p + (k - 2) * step);
#define HALF(fn) tap6_i16(fn(v[0]), fn(v[1]), fn(v[2]), fn(v[3]), fn(v[4]), fn(v[5]))
  *lo = HALF(v_lo_u8_u16);
  *hi = HALF(v_hi_u8_u16);
#undef HALF
}

static inline vec round_to_u8(vec lo, vec hi) { /* (x + 16) >> 5, saturated to 0..255 */
  vec r = v_splat16(16);
  return v_pack_u8(v_sra16(v_add16(lo, r), 5), v_sra16(v_add16(hi, r), 5));
}

static void b1_row(const u8 *f, i16 *b1, int x, int x_end) {
  for (; x + 16 <= x_end; x += 16) {
    vec lo, hi;
    tap6_u8x16(f + x, 1, &lo, &hi);
    v_store(b1 + x, lo);
    v_store(b1 + x + 8, hi);
  }
  b1_row_ref(f, b1, x, x_end);
}

static void half_row(const u8 *f, int s, const i16 *b1, u8 *hb, u8 *hv, int x, int x_end) {
  for (; x + 16 <= x_end; x += 16) {
    vec lo, hi;
    v_store(hb + x, round_to_u8(v_load(b1 + x), v_load(b1 + x + 8)));
    tap6_u8x16(f + x, s, &lo, &hi);
    v_store(hv + x, round_to_u8(lo, hi));
  }
  half_row_ref(f, s, b1, hb, hv, x, x_end);
}

/*
 * j = (A - 5B + 20C + 512) >> 10 with A, B, C the sums of the outer, middle and inner b1 pairs.
 * b1 lies in [-2550, 10710], so the sum needs more than 16 bits, but nested floor divisions give it
 * exactly in 16-bit steps: ((((A - B) >> 2) - B + C) >> 2) + C + 32) >> 6. Only t - B + C can leave
 * 16 bits, for inputs no picture is likely to hold; such a group of 8 is recomputed in 32 bits.
 */
static void centre_row(u8 *hc, const i16 *const r[6], int x, int x_end) {
  for (; x + 8 <= x_end; x += 8) {
    vec a = v_add16(v_load(r[0] + x), v_load(r[5] + x)), b = v_add16(v_load(r[1] + x), v_load(r[4] + x));
    vec c = v_add16(v_load(r[2] + x), v_load(r[3] + x));
    vec t = v_sub16(v_sra16(v_sub16(a, b), 2), b), u = v_add16(t, c);
    if (v_any(v_and(v_and(v_xor(t, u), v_xor(c, u)), v_splat16(-32768)))) { /* signed overflow in t + c */
      centre_row_ref(hc, r, x, x + 8);
      continue;
    }
    vec j = v_sra16(v_add16(v_add16(v_sra16(u, 2), c), v_splat16(32)), 6);
    v_store64(hc + x, v_pack_u8(j, j));
  }
  centre_row_ref(hc, r, x, x_end);
}
#else
#define b1_row b1_row_ref
#define half_row half_row_ref
#define centre_row centre_row_ref
#endif

/* Fills the half-sample planes for every position motion compensation may touch (see MV_REACH).
 * simd: 0 runs the scalar reference (h264_selftest compares the two). */
static void half_planes(encoder_t *e, picture_t *p, int simd) {
  const int s = e->stride_y, reach = MV_REACH + HALF_PLANE_MARGIN;
  const int x0 = -reach, x1 = e->coded_w + reach;
  const int y0 = -reach, y1 = e->coded_h + reach;
  /* Rolling window of six rows of unrounded horizontal intermediates b1 (rows y-2 .. y+3), indexed
   * by picture column so they line up with the planes. */
  i16 *const *rows = e->interp_rows;
  void (*b1)(const u8 *, i16 *, int, int) = simd ? b1_row : b1_row_ref;
  void (*half)(const u8 *, int, const i16 *, u8 *, u8 *, int, int) = simd ? half_row : half_row_ref;
  void (*centre)(u8 *, const i16 *const[6], int, int) = simd ? centre_row : centre_row_ref;
  for (int r = 0; r < 5; r++) b1(p->y + (y0 - 2 + r) * s, rows[r], x0, x1);
  for (int y = y0; y < y1; y++) {
    int k = y - y0;
    const i16 *window[6] = {rows[k % 6], rows[(k + 1) % 6], rows[(k + 2) % 6], rows[(k + 3) % 6], rows[(k + 4) % 6], rows[(k + 5) % 6]};
    b1(p->y + (y + 3) * s, rows[(k + 5) % 6], x0, x1);
    half(p->y + y * s, s, window[2], p->half_h + y * s, p->half_v + y * s, x0, x1);
    centre(p->half_c + y * s, window, x0, x1);
  }
}

void interp_half_planes(encoder_t *e, picture_t *p) { half_planes(e, p, 1); }
void interp_half_planes_ref(encoder_t *e, picture_t *p) { half_planes(e, p, 0); }

/* Table 8-12 as pairs of planes: the quarter-sample position (fx, fy) of an MV is the rounded
 * average of two of G (integer), b (half_h), h (half_v), j (half_c), each at some offset; a == b
 * when the position is one of the planes itself. */
void luma_qpel_planes(const picture_t *ref, int s, int x, int y, int mvx, int mvy, const u8 **pa, const u8 **pb) {
  int o = (y + (mvy >> 2)) * s + x + (mvx >> 2);
  const u8 *G = ref->y + o, *b = ref->half_h + o, *h = ref->half_v + o, *j = ref->half_c + o;
  const u8 *first, *second;
  switch ((mvy & 3) * 4 + (mvx & 3)) {
  case 0: first = second = G; break;       /* G */
  case 1: first = G, second = b; break;    /* a = (G + b) */
  case 2: first = second = b; break;       /* b */
  case 3: first = G + 1, second = b; break; /* c = (H + b) */
  case 4: first = G, second = h; break;    /* d = (G + h) */
  case 5: first = b, second = h; break;    /* e = (b + h) */
  case 6: first = b, second = j; break;    /* f = (b + j) */
  case 7: first = b, second = h + 1; break; /* g = (b + m) */
  case 8: first = second = h; break;       /* h */
  case 9: first = h, second = j; break;    /* i = (h + j) */
  case 10: first = second = j; break;      /* j */
  case 11: first = j, second = h + 1; break; /* k = (j + m) */
  case 12: first = G + s, second = h; break; /* n = (M + h) */
  case 13: first = h, second = b + s; break; /* p = (h + s) */
  case 14: first = j, second = b + s; break; /* q = (j + s) */
  default: first = h + 1, second = b + s; break; /* r = (m + s) */
  }
  *pa = first;
  *pb = second;
}

/* 16x16 luma prediction (rows dst_stride apart) for the block whose top-left luma sample is (x, y),
 * quarter-sample MV. */
void mc_luma16(u8 *dst, int dst_stride, const picture_t *ref, int s, int x, int y, int mvx, int mvy) {
  const u8 *a, *b;
  luma_qpel_planes(ref, s, x, y, mvx, mvy, &a, &b);
#if H264_SIMD
  for (int r = 0; r < 16; r++, a += s, b += s, dst += dst_stride) v_store(dst, v_avg_u8(v_load(a), v_load(b)));
#else
  for (int r = 0; r < 16; r++, a += s, b += s, dst += dst_stride)
    for (int c = 0; c < 16; c++) dst[c] = (u8)((a[c] + b[c] + 1) >> 1);
#endif
}

/* 8x8 chroma prediction (rows ds apart) for the block at chroma sample (cx, cy); the luma MV is in
 * 1/8 chroma units. */
void mc_chroma8_ref(u8 *dst, int ds, const u8 *plane, int s, int cx, int cy, int mvx, int mvy) {
  int fx = mvx & 7, fy = mvy & 7;
  const u8 *a = plane + (cy + (mvy >> 3)) * s + cx + (mvx >> 3);
  int wa = (8 - fx) * (8 - fy), wb = fx * (8 - fy), wc = (8 - fx) * fy, wd = fx * fy;
  for (int y = 0; y < 8; y++, a += s)
    for (int x = 0; x < 8; x++)
      dst[y * ds + x] = (u8)((wa * a[x] + wb * a[x + 1] + wc * a[x + s] + wd * a[x + s + 1] + 32) >> 6);
}

#if H264_SIMD
void mc_chroma8(u8 *dst, int ds, const u8 *plane, int s, int cx, int cy, int mvx, int mvy) {
  int fx = mvx & 7, fy = mvy & 7;
  const u8 *a = plane + (cy + (mvy >> 3)) * s + cx + (mvx >> 3);
  /* the weights sum to 64, so every term and the sum fit in 16 bits */
  vec wa = v_splat16((i16)((8 - fx) * (8 - fy))), wb = v_splat16((i16)(fx * (8 - fy)));
  vec wc = v_splat16((i16)((8 - fx) * fy)), wd = v_splat16((i16)(fx * fy));
  vec top = v_load_u8_u16(a), top1 = v_load_u8_u16(a + 1);
  for (int y = 0; y < 8; y++, a += s) {
    vec bot = v_load_u8_u16(a + s), bot1 = v_load_u8_u16(a + s + 1);
    vec sum = v_add16(v_add16(v_mul16(top, wa), v_mul16(top1, wb)), v_add16(v_mul16(bot, wc), v_mul16(bot1, wd)));
    sum = v_srl16(v_add16(sum, v_splat16(32)), 6);
    v_store64(dst + y * ds, v_pack_u8(sum, sum));
    top = bot;
    top1 = bot1;
  }
}
#else
void mc_chroma8(u8 *dst, int ds, const u8 *plane, int s, int cx, int cy, int mvx, int mvy) { mc_chroma8_ref(dst, ds, plane, s, cx, cy, mvx, mvy); }
#endif
