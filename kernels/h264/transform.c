/*
 * 4x4 integer transform, Hadamard transforms of the DC coefficients, quantisation and the
 * normative scaling (H.264 clauses 8.5.6 - 8.5.12).
 *
 * The forward direction is the encoder's choice; only the inverse (scaling + inverse transform)
 * must match the decoder bit for bit, so it follows the spec's equations literally. Coefficient
 * arrays are column-major: c[j*4+i] holds the spec's c_ij (i the vertical frequency, j the
 * horizontal one). The vector transforms end (and the inverse starts) with one column per vector,
 * so storing columns saves a 4x4 transpose each way, which JavaScriptCore compiles badly (simd.h);
 * the zig-zag scan below, and decimate.c's inverse of it, follow this order. The quantiser and
 * scaling tables are symmetric (c_ij and c_ji share a class), so they read the same either way.
 */
#include "encoder.h"
#include "simd.h"

/* Frame zig-zag scan (Table 8-13): scan index -> column-major index (raster 0, 1, 4, 8, 5, 2, ...
 * transposed). */
const u8 zigzag4x4[16] = {0, 4, 1, 2, 5, 8, 12, 9, 6, 3, 7, 10, 13, 14, 11, 15};

/* QPc as a function of qPI (Table 8-15); identity below 30. */
const u8 chroma_qp_table[52] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 29, 30, 31, 32, 32, 33, 34, 34, 35, 35, 36, 36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39};

/* normAdjust4x4 v (clause 8.5.9): columns are positions with (i,j) both even, both odd, mixed. */
static const int norm_adjust[6][3] = {{10, 16, 13}, {11, 18, 14}, {13, 20, 16}, {14, 23, 18}, {16, 25, 20}, {18, 29, 23}};
/* Per raster position of a 4x4 block: the forward multipliers (mf), chosen so that mf * v ~= 2^21 / 16,
 * 2^21 / 25, 2^21 / 20 for the three position classes (quantising then scaling back undoes the
 * forward transform's gain), and v itself (scale). SPREAD places a class triple like norm_adjust's. */
#define SPREAD(a, b, c) {a, c, a, c, c, b, c, b, a, c, a, c, c, b, c, b}
static const int mf_table[6][16] = {SPREAD(13107, 5243, 8066), SPREAD(11916, 4660, 7490), SPREAD(10082, 4194, 6554),
                                    SPREAD(9362, 3647, 5825),  SPREAD(8192, 3355, 5243),  SPREAD(7282, 2893, 4559)};
static const int scale_table[6][16] = {SPREAD(10, 16, 13), SPREAD(11, 18, 14), SPREAD(13, 20, 16),
                                       SPREAD(14, 23, 18), SPREAD(16, 25, 20), SPREAD(18, 29, 23)};
/* mf_table as 16-bit lanes (every entry is below 2^15): the vector quantisers multiply |c| by it
 * with a widening 16 x 16 -> 32-bit multiply (pmullw + pmulhuw on SSE, extmul in wasm), which is
 * cheaper than widening first and multiplying 32 x 32 bits (pmulld; i32x4.mul). Same products. */
static const i16 mf16_table[6][16] = {SPREAD(13107, 5243, 8066), SPREAD(11916, 4660, 7490), SPREAD(10082, 4194, 6554),
                                      SPREAD(9362, 3647, 5825),  SPREAD(8192, 3355, 5243),  SPREAD(7282, 2893, 4559)};
#undef SPREAD

/* CAVLC in Baseline cannot code level_prefix > 15, which caps |level| at 2063 when suffixLength is 0. */
#define MAX_LEVEL 2063

/* Y = Cf * (src - pred) * Cf^T with Cf = [1 1 1 1; 2 1 -1 -2; 1 -1 -1 1; 1 -2 2 -1]. */
void fdct4x4(i16 out[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride) {
  int t[16];
  for (int y = 0; y < 4; y++) {
    const u8 *s = src + y * src_stride, *p = pred + y * pred_stride;
    int d0 = s[0] - p[0], d1 = s[1] - p[1], d2 = s[2] - p[2], d3 = s[3] - p[3];
    int s03 = d0 + d3, d03 = d0 - d3, s12 = d1 + d2, d12 = d1 - d2;
    t[y * 4 + 0] = s03 + s12;
    t[y * 4 + 1] = 2 * d03 + d12;
    t[y * 4 + 2] = s03 - s12;
    t[y * 4 + 3] = d03 - 2 * d12;
  }
  for (int x = 0; x < 4; x++) {
    int d0 = t[x], d1 = t[4 + x], d2 = t[8 + x], d3 = t[12 + x];
    int s03 = d0 + d3, d03 = d0 - d3, s12 = d1 + d2, d12 = d1 - d2;
    out[x * 4 + 0] = (i16)(s03 + s12); /* column x, column-major */
    out[x * 4 + 1] = (i16)(2 * d03 + d12);
    out[x * 4 + 2] = (i16)(s03 - s12);
    out[x * 4 + 3] = (i16)(d03 - 2 * d12);
  }
}

/* Two horizontally adjacent blocks at once (src/pred point at the left one). */
#if H264_SIMD
/* The 1-D core transform applied lane-wise across four vectors. */
static inline void dct4_lanes(vec v[4]) {
  vec s03 = v_add16(v[0], v[3]), d03 = v_sub16(v[0], v[3]);
  vec s12 = v_add16(v[1], v[2]), d12 = v_sub16(v[1], v[2]);
  v[0] = v_add16(s03, s12);
  v[1] = v_add16(v_add16(d03, d03), d12); /* 2x as an add: JavaScriptCore moves every constant shift count through a general register */
  v[2] = v_sub16(s03, s12);
  v[3] = v_sub16(v_sub16(d03, d12), d12);
}

void fdct4x4_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride) {
  vec v[4];
  for (int y = 0; y < 4; y++) v[y] = v_sub16(v_load_u8_u16(src + y * src_stride), v_load_u8_u16(pred + y * pred_stride));
  dct4_lanes(v);            /* columns: v[i] = vertical frequency i */
  v_transpose_two_4x4(v);   /* v[j] = spatial column j */
  dct4_lanes(v);            /* rows: v[k] lane i = coefficient (i, k), i.e. coefficient column k */
  for (int k = 0; k < 4; k++) { /* halves straight to memory: no shuffle (see V_SHUFFLE8) */
    v_store64(out_a + 4 * k, v[k]);
    v_store64_hi(out_b + 4 * k, v[k]);
  }
}
#else
void fdct4x4_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride) {
  fdct4x4(out_a, src, src_stride, pred, pred_stride);
  fdct4x4(out_b, src + 4, src_stride, pred + 4, pred_stride);
}
#endif

static inline int quant_one(int c, int mf, int bias, int shift) {
  int level = (int)(((u32)iabs(c) * (u32)mf + (u32)bias) >> shift);
  if (level > MAX_LEVEL) level = MAX_LEVEL;
  return c < 0 ? -level : level;
}

/* A 4x4 block of residuals whose absolute sum is below this quantises to nothing at qp (inter
 * rounding): each coefficient is a weighted sum of the residuals with weights of magnitude 1 (the
 * mf class (0)), 4 (class (1)) or 2 (class (2)), so |c| * mf + bias < 2^shift holds for every position. */
int inter_zero_sad4x4(int qp) {
  int shift = 15 + qp / 6, room = (1 << shift) - (1 << shift) / 6;
  const int *mf = mf_table[qp % 6];
  int worst = imax(mf[0], imax(4 * mf[5], 2 * mf[1]));
  return room / worst;
}

/* An 8x8 inter chroma residual with a smaller SAD quantises to nothing: its four blocks' AC as
 * above, and the 2x2 transformed DCs, each at most the SAD of the whole block in magnitude. */
int inter_zero_sad_chroma8x8(int qp) {
  int shift = 16 + qp / 6, dc_room = (1 << shift) - (1 << shift) / 6;
  return imin(inter_zero_sad4x4(qp), dc_room / mf_table[qp % 6][0]);
}

/* Dead-zone quantiser: rounding offset 1/3 for intra, 1/6 for inter (the JM/x264 defaults).
 * Quantises positions first..15 in place and returns how many levels are non-zero. */
int quant4x4_ref(i16 c[16], int qp, int intra, int first) {
  int shift = 15 + qp / 6, bias = (1 << shift) / (intra ? 3 : 6), nz = 0;
  const int *mf = mf_table[qp % 6];
  for (int k = first; k < 16; k++) {
    c[k] = (i16)quant_one(c[k], mf[k], bias, shift);
    nz += c[k] != 0;
  }
  return nz;
}

#if H264_SIMD
/* Same arithmetic on eight coefficients at a time: |c| * mf + bias in 32 bits, shift, cap, sign back. */
int quant4x4(i16 c[16], int qp, int intra, int first) {
  int shift = 15 + qp / 6;
  const i16 *mf = mf16_table[qp % 6];
  vec bias = v_splat32((1 << shift) / (intra ? 3 : 6)), cap = v_splat16(MAX_LEVEL);
  i16 keep = c[0];
  int zero_bytes = 0;
  for (int half = 0; half < 2; half++) {
    vec v = v_load(c + 8 * half);
    vec sign = v_sra16(v, 15);
    vec a = v_abs16(v), m = v_load(mf + 8 * half);
    vec lo = v_mul_lo_u16_u32(a, m);
    vec hi = v_mul_hi_u16_u32(a, m);
    lo = v_srl32(v_add32(lo, bias), shift);
    hi = v_srl32(v_add32(hi, bias), shift);
    vec level = v_min16(v_pack_i16(lo, hi), cap);
    level = v_sub16(v_xor(level, sign), sign);
    v_store(c + 8 * half, level);
    zero_bytes += __builtin_popcount((u32)v_mask8(v_eq16(level, v_zero())));
  }
  int nz = 16 - zero_bytes / 2;
  if (first) { /* position 0 (a DC coded elsewhere) is left as it was */
    nz -= c[0] != 0;
    c[0] = keep;
  }
  return nz;
}
#else
int quant4x4(i16 c[16], int qp, int intra, int first) { return quant4x4_ref(c, qp, intra, first); }
#endif

/* Forward transform and quantisation of two horizontally adjacent 4x4 blocks in one pass: the same
 * numbers as fdct4x4_pair then quant4x4 on each block (h264_selftest checks), without the round trip
 * through memory between them. With dc (Intra16x16 and chroma code their DCs separately), the two
 * unquantised DCs go there and position 0 of both blocks' levels is 0. Returns the blocks' counts
 * of non-zero levels as a + 256 * b. */
int fdct_quant_pair_ref(i16 out_a[16], i16 out_b[16], const u8 *src, int ss, const u8 *pred, int ps, int qp, int intra, int dc[2]) {
  fdct4x4(out_a, src, ss, pred, ps);
  fdct4x4(out_b, src + 4, ss, pred + 4, ps);
  if (dc) {
    dc[0] = out_a[0], dc[1] = out_b[0];
    out_a[0] = out_b[0] = 0;
  }
  return quant4x4_ref(out_a, qp, intra, dc != NULL) + 256 * quant4x4_ref(out_b, qp, intra, dc != NULL);
}

#if H264_SIMD
int fdct_quant_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int ss, const u8 *pred, int ps, int qp, int intra, int dc[2]) {
  vec v[4];
  for (int y = 0; y < 4; y++) v[y] = v_sub16(v_load_u8_u16(src + y * ss), v_load_u8_u16(pred + y * ps));
  dct4_lanes(v);
  v_transpose_two_4x4(v);
  dct4_lanes(v); /* v[j] = coefficient column j of block a (lanes 0-3) and of block b (4-7) */
  if (dc) {
    static const i16 not_dc[8] = {0, -1, -1, -1, 0, -1, -1, -1};
    dc[0] = (i16)v_lane32(v[0], 0);
    dc[1] = (i16)v_lane32(v[0], 2);
    v[0] = v_and(v[0], v_load(not_dc));
  }
  const int shift = 15 + qp / 6;
  const i16 *mf = mf16_table[qp % 6];
  const vec bias = v_splat32((1 << shift) / (intra ? 3 : 6)), cap = v_splat16(MAX_LEVEL), zero = v_zero();
  /* The factor table is symmetric and its rows 0 and 2, 1 and 3 are equal: two vectors serve all four columns. */
  const vec mf02 = v_load64_dup(mf), mf13 = v_load64_dup(mf + 4);
  vec eq[4];
  for (int i = 0; i < 4; i++) {
    vec sign = v_gt16(zero, v[i]), a = v_abs16(v[i]), row_mf = i & 1 ? mf13 : mf02; /* sign: all ones where negative */
    vec lo = v_srl32(v_add32(v_mul_lo_u16_u32(a, row_mf), bias), shift);
    vec hi = v_srl32(v_add32(v_mul_hi_u16_u32(a, row_mf), bias), shift);
    vec level = v_min16(v_pack_i16(lo, hi), cap);
    level = v_sub16(v_xor(level, sign), sign);
    v_store64(out_a + 4 * i, level);
    v_store64_hi(out_b + 4 * i, level);
    eq[i] = v_eq16(level, zero);
  }
  /* bytes of the zero masks: per row pair, a's four lanes then b's four, twice */
  u32 zeros = (u32)v_mask8(v_pack_i8(eq[0], eq[1])) | (u32)v_mask8(v_pack_i8(eq[2], eq[3])) << 16;
  int za = __builtin_popcount(zeros & 0x0f0f0f0fu), zb = __builtin_popcount(zeros & 0xf0f0f0f0u);
  return (16 - za) + 256 * (16 - zb);
}
#else
int fdct_quant_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int ss, const u8 *pred, int ps, int qp, int intra, int dc[2]) {
  return fdct_quant_pair_ref(out_a, out_b, src, ss, pred, ps, qp, intra, dc);
}
#endif

/* DC coefficients after their Hadamard transform: one more bit of shift, as the transform gain is doubled. */
int quant_dc(int *c, int n, int qp, int intra, i16 *levels) {
  int shift = 16 + qp / 6, bias = (1 << shift) / (intra ? 3 : 6), nz = 0;
  int mf = mf_table[qp % 6][0];
  for (int k = 0; k < n; k++) {
    levels[k] = (i16)quant_one(c[k], mf, bias, shift);
    nz += levels[k] != 0;
  }
  return nz;
}

/* Clause 8.5.12.1 with flat weighting: d = c * LevelScale4x4 << (qP/6 - 4), LevelScale = 16 * v. */
void dequant4x4(int d[16], const i16 levels[16], int qp) {
  const int *v = scale_table[qp % 6];
  int shift = qp / 6;
  for (int k = 0; k < 16; k++) d[k] = (levels[k] * v[k]) << shift;
}

/* Clause 8.5.12.2: rows, then columns, then (x + 32) >> 6, added to the prediction already in dst.
 * d is column-major: row i is d[i], d[4 + i], d[8 + i], d[12 + i]. */
void idct4x4_add(u8 *dst, int stride, const int d[16]) {
  int f[16];
  for (int i = 0; i < 4; i++) {
    const int r[4] = {d[i], d[4 + i], d[8 + i], d[12 + i]};
    int e0 = r[0] + r[2], e1 = r[0] - r[2], e2 = (r[1] >> 1) - r[3], e3 = r[1] + (r[3] >> 1);
    f[i * 4 + 0] = e0 + e3;
    f[i * 4 + 1] = e1 + e2;
    f[i * 4 + 2] = e1 - e2;
    f[i * 4 + 3] = e0 - e3;
  }
  for (int j = 0; j < 4; j++) {
    int g0 = f[j] + f[8 + j], g1 = f[j] - f[8 + j];
    int g2 = (f[4 + j] >> 1) - f[12 + j], g3 = f[4 + j] + (f[12 + j] >> 1);
    int h[4] = {g0 + g3, g1 + g2, g1 - g2, g0 - g3};
    for (int i = 0; i < 4; i++) {
      u8 *p = dst + i * stride + j;
      *p = clip_pixel(*p + ((h[i] + 32) >> 6));
    }
  }
}

/* Reconstruction of two horizontally adjacent 4x4 blocks from their levels: scaling, inverse
 * transform, added to the prediction already in dst. dc, when given, holds the two blocks' already
 * scaled DC values (Intra16x16 and chroma code their DCs separately). The reference, in 32 bits. */
void recon4x4_pair_ref(u8 *dst, int stride, const i16 la[16], const i16 lb[16], int qp, const int *dc) {
  for (int k = 0; k < 2; k++) {
    int d[16];
    dequant4x4(d, k ? lb : la, qp);
    if (dc) d[0] = dc[k];
    idct4x4_add(dst + 4 * k, stride, d);
  }
}

#if H264_SIMD
/*
 * The same in 16-bit lanes, both blocks side by side ([block a | block b] per vector). 16 bits are
 * exact here: the scaled values and every intermediate of a conforming stream stay within
 * -2^15..2^15-1 (clause 8.5.12.2 requires it for 8-bit video), and levels quantised from real
 * residuals reconstruct to within one quantiser step of the original coefficients, which keeps them there.
 */
void recon4x4_pair(u8 *dst, int stride, const i16 la[16], const i16 lb[16], int qp, const int *dc) {
  static const i16 scale16[6][16] = {
#define SPREAD(a, b, c) {a, c, a, c, c, b, c, b, a, c, a, c, c, b, c, b}
      SPREAD(10, 16, 13), SPREAD(11, 18, 14), SPREAD(13, 20, 16), SPREAD(14, 23, 18), SPREAD(16, 25, 20), SPREAD(18, 29, 23)
#undef SPREAD
  };
  const i16 *v = scale16[qp % 6];
  int shift = qp / 6;
  vec r[4];
  /* The scale table is symmetric, rows 0 and 2 and rows 1 and 3 equal: two shifted vectors serve all columns. */
  const vec scale02 = v_shl16(v_load64_dup(v), shift), scale13 = v_shl16(v_load64_dup(v + 4), shift);
  for (int j = 0; j < 4; j++) /* r[j] = coefficient column j (lanes = rows i) */
    r[j] = v_mul16(v_load64x2(la + 4 * j, lb + 4 * j), j & 1 ? scale13 : scale02);
  if (dc) { /* lanes 0 and 4 take the low halves of dc[0] and dc[1] (little-endian on both targets) */
    static const i16 lanes_0_4[8] = {-1, 0, 0, 0, -1, 0, 0, 0};
    r[0] = v_select(v_load(lanes_0_4), v_load32x2(&dc[0], &dc[1]), r[0]);
  }
  /* the horizontal pass runs across the columns, lane-wise: no transpose needed first */
  vec e0 = v_add16(r[0], r[2]), e1 = v_sub16(r[0], r[2]);
  vec e2 = v_sub16(v_sra16(r[1], 1), r[3]), e3 = v_add16(r[1], v_sra16(r[3], 1));
  r[0] = v_add16(e0, e3);
  r[1] = v_add16(e1, e2);
  r[2] = v_sub16(e1, e2);
  r[3] = v_sub16(e0, e3);
  v_transpose_two_4x4(r); /* r[i] = row i, lanes = columns */
  vec g0 = v_add16(r[0], r[2]), g1 = v_sub16(r[0], r[2]);
  vec g2 = v_sub16(v_sra16(r[1], 1), r[3]), g3 = v_add16(r[1], v_sra16(r[3], 1));
  vec h[4] = {v_add16(g0, g3), v_add16(g1, g2), v_sub16(g1, g2), v_sub16(g0, g3)};
  const vec round = v_splat16(32);
  for (int i = 0; i < 4; i++, dst += stride) {
    vec sum = v_add16(v_load_u8_u16(dst), v_sra16(v_add16(h[i], round), 6));
    v_store64(dst, v_pack_u8(sum, sum));
  }
}
#else
void recon4x4_pair(u8 *dst, int stride, const i16 la[16], const i16 lb[16], int qp, const int *dc) {
  recon4x4_pair_ref(dst, stride, la, lb, qp, dc);
}
#endif

void hadamard4x4(int out[16], const int in[16]) {
  int t[16];
  for (int i = 0; i < 4; i++) {
    const int *r = in + i * 4;
    int s01 = r[0] + r[1], d01 = r[0] - r[1], s23 = r[2] + r[3], d23 = r[2] - r[3];
    t[i * 4 + 0] = s01 + s23;
    t[i * 4 + 1] = s01 - s23;
    t[i * 4 + 2] = d01 - d23;
    t[i * 4 + 3] = d01 + d23;
  }
  for (int j = 0; j < 4; j++) {
    int s01 = t[j] + t[4 + j], d01 = t[j] - t[4 + j], s23 = t[8 + j] + t[12 + j], d23 = t[8 + j] - t[12 + j];
    out[j] = s01 + s23;
    out[4 + j] = s01 - s23;
    out[8 + j] = d01 - d23;
    out[12 + j] = d01 + d23;
  }
}

/* Forward transform of the Intra16x16 DC array, halved (rounding) so it quantises like quant_dc expects. */
void luma_dc_forward(int dc[16]) {
  int t[16];
  hadamard4x4(t, dc);
  for (int k = 0; k < 16; k++) dc[k] = (t[k] + (t[k] < 0 ? -1 : 1)) / 2; /* round half away from zero */
}

/* Clause 8.5.10: inverse Hadamard then scaling of Intra16x16 DC levels. */
void luma_dc_dequant(int out[16], const i16 levels[16], int qp) {
  int c[16], f[16];
  for (int k = 0; k < 16; k++) c[k] = levels[k];
  hadamard4x4(f, c);
  int scale = 16 * norm_adjust[qp % 6][0];
  for (int k = 0; k < 16; k++) {
    if (qp >= 36)
      out[k] = (f[k] * scale) << (qp / 6 - 6);
    else
      out[k] = (f[k] * scale + (1 << (5 - qp / 6))) >> (6 - qp / 6);
  }
}

/* 2x2 transform of chroma DC (clause 8.5.11.1); its own inverse up to scale. */
static void hadamard2x2(int out[4], const int in[4]) {
  out[0] = in[0] + in[1] + in[2] + in[3];
  out[1] = in[0] - in[1] + in[2] - in[3];
  out[2] = in[0] + in[1] - in[2] - in[3];
  out[3] = in[0] - in[1] - in[2] + in[3];
}

void chroma_dc_forward(int dc[4]) {
  int t[4];
  hadamard2x2(t, dc);
  for (int k = 0; k < 4; k++) dc[k] = t[k];
}

/* Clause 8.5.11.2 for 4:2:0: dcC = ((f * LevelScale(qP % 6, 0, 0)) << (qP / 6)) >> 5. */
void chroma_dc_dequant(int out[4], const i16 levels[4], int qp) {
  int c[4] = {levels[0], levels[1], levels[2], levels[3]}, f[4];
  hadamard2x2(f, c);
  int scale = 16 * norm_adjust[qp % 6][0];
  for (int k = 0; k < 4; k++) out[k] = ((f[k] * scale) << (qp / 6)) >> 5;
}
