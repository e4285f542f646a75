/*
 * RGB24 / RGBA -> I420, BT.601 limited ("studio") range, the matrix the SPS VUI declares
 * (matrix_coefficients 6, video_full_range_flag 0):
 *
 *   Y  =  16 + ( 65.481 R + 128.553 G +  24.966 B) / 255
 *   Cb = 128 + (-37.797 R -  74.203 G + 112.0   B) / 255
 *   Cr = 128 + (112.0   R -  93.786 G -  18.214 B) / 255
 *
 * in 16-bit fixed point (coefficient * 65536 / 255, rounded so each chroma row sums to zero and
 * white maps to exactly 235). Chroma is computed from the 2x2 average of RGB, which places it at
 * the centre of each 2x2 block. The coded picture is padded to whole macroblocks by repeating the
 * last column and row, which costs fewer bits than black padding; the SPS crops it away.
 */
#include "encoder.h"

#define YR 16829
#define YG 33039
#define YB 6416
#define UR (-9714)
#define UG (-19070)
#define UB 28784
#define VR 28784
#define VG (-24103)
#define VB (-4681)


static void luma_row_ref(const u8 *s, int bpp, u8 *d, int x, int x_end) {
  for (s += x * bpp; x < x_end; x++, s += bpp) d[x] = (u8)((YR * s[0] + YG * s[1] + YB * s[2] + (16 << 16) + 32768) >> 16);
}

/* Chroma samples [x, x_end) from two source rows; sums of four samples divide by 4 inside the shift. */
static void chroma_row_ref(const u8 *s0, const u8 *s1, int bpp, u8 *du, u8 *dv, int x, int x_end) {
  for (; x < x_end; x++) {
    const u8 *a = s0 + 2 * x * bpp, *b = s1 + 2 * x * bpp;
    int r = a[0] + a[bpp] + b[0] + b[bpp];
    int g = a[1] + a[bpp + 1] + b[1] + b[bpp + 1];
    int bl = a[2] + a[bpp + 2] + b[2] + b[bpp + 2];
    du[x] = (u8)clip3(0, 255, (UR * r + UG * g + UB * bl + (128 << 18) + (1 << 17)) >> 18);
    dv[x] = (u8)clip3(0, 255, (VR * r + VG * g + VB * bl + (128 << 18) + (1 << 17)) >> 18);
  }
}

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

/* Splits 16 pixels (bpp 16-byte vectors) into R, G, B byte vectors. Out-of-range swizzle indices
 * produce 0, so each channel is the OR of one swizzle per source vector. Always inlined with a
 * constant bpp so the index vectors fold to constants. */
static inline __attribute__((always_inline)) void load_channels(const u8 *s, const int bpp, v128_t ch[3]) {
  for (int c = 0; c < 3; c++) {
    v128_t acc = wasm_i8x16_splat(0);
    for (int v = 0; v < bpp; v++) {
      i8 idx[16];
      for (int k = 0; k < 16; k++) {
        int byte = k * bpp + c - v * 16;
        idx[k] = (i8)(byte >= 0 && byte < 16 ? byte : -1);
      }
      acc = wasm_v128_or(acc, wasm_i8x16_swizzle(wasm_v128_load(s + 16 * v), wasm_v128_load(idx)));
    }
    ch[c] = acc;
  }
}

/* (wr*r + wg*g + wb*b + add) >> shift on four 32-bit lanes from the low or high half of 16-bit inputs. */
#define WEIGHTED(ext, r, g, b, wr, wg, wb, add, shift)                                                              \
  wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_add(ext(r, wasm_i16x8_splat((i16)(wr))), ext(g, wasm_i16x8_splat((i16)(wg)))), \
                                wasm_i32x4_add(ext(b, wasm_i16x8_splat((i16)(wb))), wasm_i32x4_splat(add))),            \
                 shift)

static inline __attribute__((always_inline)) void luma_row_simd(const u8 *s, const int bpp, u8 *d, int x, int x_end) {
  for (; x + 16 <= x_end; x += 16) {
    v128_t ch[3], half[2];
    load_channels(s + x * bpp, bpp, ch);
    for (int h = 0; h < 2; h++) {
      v128_t r = h ? wasm_u16x8_extend_high_u8x16(ch[0]) : wasm_u16x8_extend_low_u8x16(ch[0]);
      v128_t g = h ? wasm_u16x8_extend_high_u8x16(ch[1]) : wasm_u16x8_extend_low_u8x16(ch[1]);
      v128_t b = h ? wasm_u16x8_extend_high_u8x16(ch[2]) : wasm_u16x8_extend_low_u8x16(ch[2]);
      /* unsigned products: YG = 33039 needs all 16 bits */
      v128_t lo = WEIGHTED(wasm_u32x4_extmul_low_u16x8, r, g, b, YR, YG, YB, (16 << 16) + 32768, 16);
      v128_t hi = WEIGHTED(wasm_u32x4_extmul_high_u16x8, r, g, b, YR, YG, YB, (16 << 16) + 32768, 16);
      half[h] = wasm_i16x8_narrow_i32x4(lo, hi);
    }
    wasm_v128_store(d + x, wasm_u8x16_narrow_i16x8(half[0], half[1]));
  }
  luma_row_ref(s, bpp, d, x, x_end);
}

static inline __attribute__((always_inline)) void chroma_row_simd(const u8 *s0, const u8 *s1, const int bpp, u8 *du, u8 *dv,
                                                                  int x, int x_end) {
  for (; x + 8 <= x_end; x += 8) {
    v128_t a[3], b[3], sum[3];
    load_channels(s0 + 2 * x * bpp, bpp, a);
    load_channels(s1 + 2 * x * bpp, bpp, b);
    for (int c = 0; c < 3; c++) sum[c] = wasm_i16x8_add(wasm_u16x8_extadd_pairwise_u8x16(a[c]), wasm_u16x8_extadd_pairwise_u8x16(b[c]));
    /* signed products: sums of four samples (<= 1020) times weights within +-28784 */
    const int add = (128 << 18) + (1 << 17);
    v128_t u = wasm_i16x8_narrow_i32x4(WEIGHTED(wasm_i32x4_extmul_low_i16x8, sum[0], sum[1], sum[2], UR, UG, UB, add, 18),
                                       WEIGHTED(wasm_i32x4_extmul_high_i16x8, sum[0], sum[1], sum[2], UR, UG, UB, add, 18));
    v128_t v = wasm_i16x8_narrow_i32x4(WEIGHTED(wasm_i32x4_extmul_low_i16x8, sum[0], sum[1], sum[2], VR, VG, VB, add, 18),
                                       WEIGHTED(wasm_i32x4_extmul_high_i16x8, sum[0], sum[1], sum[2], VR, VG, VB, add, 18));
    wasm_v128_store64_lane(du + x, wasm_u8x16_narrow_i16x8(u, u), 0);
    wasm_v128_store64_lane(dv + x, wasm_u8x16_narrow_i16x8(v, v), 0);
  }
  chroma_row_ref(s0, s1, bpp, du, dv, x, x_end);
}

static void luma_row(const u8 *s, int bpp, u8 *d, int w) {
  if (bpp == 3) luma_row_simd(s, 3, d, 0, w);
  else luma_row_simd(s, 4, d, 0, w);
}

static void chroma_row(const u8 *s0, const u8 *s1, int bpp, u8 *du, u8 *dv, int w) {
  if (bpp == 3) chroma_row_simd(s0, s1, 3, du, dv, 0, w);
  else chroma_row_simd(s0, s1, 4, du, dv, 0, w);
}
#else
static void luma_row(const u8 *s, int bpp, u8 *d, int w) { luma_row_ref(s, bpp, d, 0, w); }
static void chroma_row(const u8 *s0, const u8 *s1, int bpp, u8 *du, u8 *dv, int w) { chroma_row_ref(s0, s1, bpp, du, dv, 0, w); }
#endif

void rgb_to_i420(encoder_t *e) {
  const int bpp = e->rgba ? 4 : 3, w = e->width, h = e->height, cw = e->coded_w, ch = e->coded_h;
  const int row_bytes = w * bpp;
  for (int y = 0; y < h; y++) luma_row(e->rgb_in + y * row_bytes, bpp, e->src_y + y * cw, w);
  for (int y = 0; y < h / 2; y++) {
    const u8 *s0 = e->rgb_in + 2 * y * row_bytes;
    chroma_row(s0, s0 + row_bytes, bpp, e->src_u + y * (cw / 2), e->src_v + y * (cw / 2), w / 2);
  }
  /* Replicate the right column and bottom row into the macroblock padding. */
  for (int y = 0; y < h; y++) memset(e->src_y + y * cw + w, e->src_y[y * cw + w - 1], (size_t)(cw - w));
  for (int y = h; y < ch; y++) memcpy(e->src_y + y * cw, e->src_y + (h - 1) * cw, (size_t)cw);
  for (int p = 0; p < 2; p++) {
    u8 *plane = p ? e->src_v : e->src_u;
    int pw = w / 2, ph = h / 2, cs = cw / 2;
    for (int y = 0; y < ph; y++) memset(plane + y * cs + pw, plane[y * cs + pw - 1], (size_t)(cs - pw));
    for (int y = ph; y < ch / 2; y++) memcpy(plane + y * cs, plane + (ph - 1) * cs, (size_t)cs);
  }
}
