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
#include "simd.h"

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

/* How many pairs of source rows ahead convert_rows_simd prefetches. */
#define PREFETCH_ROW_PAIRS 2

#if H264_SIMD
/*
 * Two rows at a time, 16 pixels per step, in groups of four pixels. A swizzle spreads a group into
 * 16-bit lanes as (R, G) pairs and as (G, B) pairs, so pairwise multiply-adds (v_madd16) give each
 * pixel's weighted sum; YG = 33039 does not fit a signed 16-bit weight, so G's weight is split
 * between the two pairs. Chroma weights the row sums of the pairs and then adds neighbouring
 * pixels, which is the same integer sum as weighting the 2x2 sums.
 */
#define LANES_OF(bpp, c0, c1)                                                                                      \
  {(i8)(c0), -1, (i8)(c1), -1, (i8)((bpp) + (c0)), -1, (i8)((bpp) + (c1)), -1, (i8)(2 * (bpp) + (c0)), -1,          \
   (i8)(2 * (bpp) + (c1)), -1, (i8)(3 * (bpp) + (c0)), -1, (i8)(3 * (bpp) + (c1)), -1}
static const i8 rg_lanes[2][16] = {LANES_OF(3, 0, 1), LANES_OF(4, 0, 1)}, gb_lanes[2][16] = {LANES_OF(3, 1, 2), LANES_OF(4, 1, 2)};
#undef LANES_OF
#define YG_RG 16520 /* + YG_GB = YG */
#define YG_GB 16519

static inline vec weights(int a, int b) { return v_zip_lo16(v_splat16(a), v_splat16(b)); } /* a b a b ... */

/* The vector part of convert_rows: converts whole steps of 16 pixels up to x_end, returns where it
 * stopped. The last group's 16-byte load reads 4 bytes past pixel x_end (rgb24), which the caller
 * keeps inside the frame. Chroma adds each pixel to its right neighbour in 16 bits before the
 * weights (the same integer sums), with 64-bit shifts rather than shuffles: the first group of a
 * half keeps its pair sums in the even 32-bit lanes, the second moves them into the odd ones, so
 * one pair of multiply-adds weights both groups and leaves the samples in the order 0 2 1 3; one
 * shuffle per step puts them in order. (The wasm build pays two pshufb and a por per shuffle under
 * JavaScriptCore, see simd.h, and this loop had 20 of them per step.) The results are packed as
 * soon as they are complete, so fewer vectors are live at once. */
static int convert_rows_simd(const u8 *s0, const u8 *s1, int bpp, u8 *y0, u8 *y1, u8 *du, u8 *dv, int x_end, long ahead) {
  const int t = bpp == 4;
  int x = 0;
  const vec rg_idx = v_load(rg_lanes[t]), gb_idx = v_load(gb_lanes[t]);
  const vec y_rg = weights(YR, YG_RG), y_gb = weights(YG_GB, YB);
  const vec u_rg = weights(UR, UG), u_gb = weights(0, UB), v_rg = weights(VR, VG), v_gb = weights(0, VB);
  const vec even32 = v_zip_lo32(v_splat32(-1), v_zero()); /* 32-bit lanes 0 and 2 */
  const vec y_add = v_splat32((16 << 16) + 32768), c_add = v_splat32((128 << 18) + (1 << 17));
  for (; x + 16 <= x_end; x += 16) {
    vec uv16[2];
    /* The host's frame is usually not in the cache (bun:ffi hands over the caller's buffer): fetch
     * the rows `ahead` bytes on while these are converted. Reading it cold cost 15-20 % of the
     * native encode time before. A hint only (nothing in wasm); past the frame's end it is harmless. */
    __builtin_prefetch(s0 + x * bpp + ahead);
    __builtin_prefetch(s1 + x * bpp + ahead);
    for (int h = 0; h < 2; h++) {
      vec luma[2][2], rg_pairs = v_zero(), gb_pairs = v_zero();
      for (int k = 0; k < 2; k++) {
        const int g = 2 * h + k;
        vec rg[2], gb[2];
        for (int r = 0; r < 2; r++) {
          vec px = v_load((r ? s1 : s0) + (x + 4 * g) * bpp);
          rg[r] = v_swizzle(px, rg_idx);
          gb[r] = v_swizzle(px, gb_idx);
          /* (sum + y_add) >> 16 lies in 16..235: its byte 2, picked out below (v_bytes2_of_32) */
          luma[r][k] = v_add32(v_add32(v_madd16(rg[r], y_rg), v_madd16(gb[r], y_gb)), y_add);
        }
        vec rg_sum = v_add16(rg[0], rg[1]), gb_sum = v_add16(gb[0], gb[1]); /* <= 510 per lane */
        /* 2x2 sums (<= 1020): pixel 0 + pixel 1 (and 2 + 3) in 32-bit lanes 0 and 2 for k = 0, in
         * lanes 1 and 3 for k = 1; the other lanes 0 */
        if (k == 0) {
          rg_pairs = v_add16(v_and(rg_sum, even32), v_srl64(rg_sum, 32));
          gb_pairs = v_add16(v_and(gb_sum, even32), v_srl64(gb_sum, 32));
        } else {
          rg_pairs = v_add16(rg_pairs, v_add16(v_andnot(rg_sum, even32), v_shl64(rg_sum, 32)));
          gb_pairs = v_add16(gb_pairs, v_add16(v_andnot(gb_sum, even32), v_shl64(gb_sum, 32)));
        }
      }
      /* Each half's results leave the registers as soon as they are complete: luma to memory, the
       * chroma of the half as one vector (16-bit U 0 2 1 3, V 0 2 1 3, + 4h). Keeping all of a
       * step's results for full-width stores made JavaScriptCore spill (16 vector registers, eleven
       * of them holding the constants above). */
      for (int r = 0; r < 2; r++) v_store64((r ? y1 : y0) + x + 8 * h, v_bytes2_of_32(luma[r][0], luma[r][1]));
      /* chroma samples 0 2 1 3 (+4h) */
      vec uc = v_sra32(v_add32(v_add32(v_madd16(rg_pairs, u_rg), v_madd16(gb_pairs, u_gb)), c_add), 18);
      vec vc = v_sra32(v_add32(v_add32(v_madd16(rg_pairs, v_rg), v_madd16(gb_pairs, v_gb)), c_add), 18);
      uv16[h] = v_pack_i16(uc, vc);
    }
    /* bytes U 0 2 1 3 4 6 5 7, V 0 2 1 3 4 6 5 7 after the pack: one shuffle puts both in order */
    vec uv = V_SHUFFLE8(v_pack_u8(uv16[0], uv16[1]), 0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
    v_store64(du + x / 2, uv);
    v_store64_hi(dv + x / 2, uv);
  }
  return x;
}
#else
static int convert_rows_simd(const u8 *s0, const u8 *s1, int bpp, u8 *y0, u8 *y1, u8 *du, u8 *dv, int x_end, long ahead) {
  (void)s0, (void)s1, (void)bpp, (void)y0, (void)y1, (void)du, (void)dv, (void)x_end, (void)ahead;
  return 0;
}
#endif

/* Rows s0 and s1, pixels [0, w): luma into y0 and y1, chroma into du and dv; the vector part up to
 * simd_end (0 runs the scalar reference alone, which h264_selftest compares with it). */
static void convert_rows(const u8 *s0, const u8 *s1, int bpp, u8 *y0, u8 *y1, u8 *du, u8 *dv, int w, int simd_end) {
  int x = 0;
  if (simd_end) x = convert_rows_simd(s0, s1, bpp, y0, y1, du, dv, simd_end, PREFETCH_ROW_PAIRS * 2L * (s1 - s0));
  luma_row_ref(s0, bpp, y0, x, w);
  luma_row_ref(s1, bpp, y1, x, w);
  chroma_row_ref(s0, s1, bpp, du, dv, x / 2, w / 2);
}

/* rgb may be the host's own buffer (h264_encode_from), so nothing past the frame is read: on the
 * last two rows of rgb24 the vector part stops 2 pixels early, and the scalar code does the rest. */
static void convert_band(encoder_t *e, const u8 *rgb, int simd, int y_from, int y_to) {
  const int bpp = e->rgba ? 4 : 3, w = e->width, h = e->height, cw = e->coded_w;
  const int row_bytes = w * bpp;
  for (int y = y_from; y < y_to; y += 2) {
    const u8 *s0 = rgb + y * row_bytes;
    u8 *y0 = e->src_y + y * cw;
    int simd_end = !simd ? 0 : y + 2 >= h && bpp == 3 ? w - 2 : w;
    convert_rows(s0, s0 + row_bytes, bpp, y0, y0 + cw, e->src_u + y / 2 * (cw / 2), e->src_v + y / 2 * (cw / 2), w, simd_end);
  }
}

/* Replicate the right column and bottom row into the macroblock padding. */
static void pad_source(encoder_t *e) {
  const int w = e->width, h = e->height, cw = e->coded_w, ch = e->coded_h;
  for (int y = 0; y < h; y++) memset(e->src_y + y * cw + w, e->src_y[y * cw + w - 1], (size_t)(cw - w));
  for (int y = h; y < ch; y++) memcpy(e->src_y + y * cw, e->src_y + (h - 1) * cw, (size_t)cw);
  for (int p = 0; p < 2; p++) {
    u8 *plane = p ? e->src_v : e->src_u;
    int pw = w / 2, ph = h / 2, cs = cw / 2;
    for (int y = 0; y < ph; y++) memset(plane + y * cs + pw, plane[y * cs + pw - 1], (size_t)(cs - pw));
    for (int y = ph; y < ch / 2; y++) memcpy(plane + y * cs, plane + (ph - 1) * cs, (size_t)cs);
  }
}

static void convert(encoder_t *e, const u8 *rgb, int simd) {
  convert_band(e, rgb, simd, 0, e->height);
  pad_source(e);
}

/* Rows [y_from, y_to) (even bounds, or y_to = height) of the frame at rgb, without the padding
 * (rgb_to_i420_pad once all rows are in): lets the wasm host copy a band of rows into h264_input()
 * and convert it while it is still in the cache. The same numbers as rgb_to_i420. */
void rgb_to_i420_rows(encoder_t *e, const u8 *rgb, int y_from, int y_to) {
  if (y_from < 0) y_from = 0;
  if (y_to > e->height) y_to = e->height;
  convert_band(e, rgb, 1, y_from & ~1, y_to);
}
void rgb_to_i420_pad(encoder_t *e) { pad_source(e); }

void rgb_to_i420(encoder_t *e, const u8 *rgb) { convert(e, rgb, 1); }
void rgb_to_i420_ref(encoder_t *e, const u8 *rgb) { convert(e, rgb, 0); }
