/*
 * residual_block_cavlc() (H.264 clauses 7.3.5.3.2 and 9.2): codes one block of quantised levels
 * given in scan order. The syntax walks the coefficients from the highest frequency down:
 * coeff_token (TotalCoeff, TrailingOnes), the signs of up to three trailing +-1, the remaining
 * levels with an adaptive Golomb-Rice suffix, total_zeros, then each run_before.
 */
#include "cavlc_tables.h"
#include "encoder.h"
#include "simd.h"

static void put_vlc(bitwriter_t *bw, vlc_t v) { bw_put(bw, v.code, v.len); }

static void write_coeff_token(bitwriter_t *bw, int total, int trailing, int nC) {
  if (nC == -1) {
    put_vlc(bw, coeff_token_chroma_dc_vlc[total][trailing]);
  } else if (nC >= 8) { /* 6-bit fixed length: TotalCoeff - 1 then TrailingOnes, 000011 for an empty block */
    bw_put(bw, total == 0 ? 3 : (u32)(((total - 1) << 2) | trailing), 6);
  } else {
    put_vlc(bw, coeff_token_vlc[nC < 2 ? 0 : nC < 4 ? 1 : 2][total][trailing]);
  }
}

/*
 * Encoder side of clause 9.2.2.1: levelCode = 2*level - 2 for positive levels, -2*level - 1 for
 * negative ones, minus 2 for the first level after fewer than three trailing ones (which cannot be
 * +-1). The prefix is unary; suffixLength grows as levels get large. transform.c caps |level| at 2063
 * so every level fits the prefix-15 escape that Baseline allows.
 */
static void write_levels(bitwriter_t *bw, const int *levels, int total, int trailing) {
  int suffix_len = (total > 10 && trailing < 3) ? 1 : 0;
  for (int k = trailing; k < total; k++) {
    int level = levels[k];
    int code = level > 0 ? 2 * level - 2 : -2 * level - 1;
    if (k == trailing && trailing < 3) code -= 2;
    /* level_prefix (zeros then a one) and level_suffix go out as one code */
    if (suffix_len == 0) {
      if (code < 14) bw_put(bw, 1, code + 1);
      else if (code < 30) bw_put(bw, (1u << 4) | (u32)(code - 14), 15 + 4); /* level_prefix 14, 4-bit suffix */
      else bw_put(bw, (1u << 12) | (u32)(code - 30), 16 + 12);              /* level_prefix 15, 12-bit suffix */
    } else {
      int prefix = code >> suffix_len;
      if (prefix < 15) bw_put(bw, (1u << suffix_len) | ((u32)code & ((1u << suffix_len) - 1)), prefix + 1 + suffix_len);
      else bw_put(bw, (1u << 12) | (u32)(code - (15 << suffix_len)), 16 + 12);
    }
    if (suffix_len == 0) suffix_len = 1;
    if (iabs(level) > (3 << (suffix_len - 1)) && suffix_len < 6) suffix_len++;
  }
}

/* Bit k set when scan[k] != 0, k < 16. */
static u32 nonzero_mask(const i16 scan[16]) {
#if H264_SIMD
  vec zero = v_zero();
  return (u32)v_mask8(v_pack_i8(v_eq16(v_load(scan), zero), v_eq16(v_load(scan + 8), zero))) ^ 0xffffu;
#else
  u32 mask = 0;
  for (int k = 0; k < 16; k++) mask |= (u32)(scan[k] != 0) << k;
  return mask;
#endif
}

/* Codes levels coef[0..max_coeff) (scan order) whose non-zero positions are the set bits of mask. */
static int cavlc_code(bitwriter_t *bw, const i16 *coef, u32 mask, int max_coeff, int nC) {
  if (!mask) {
    write_coeff_token(bw, 0, 0, nC);
    return 0;
  }
  /* Levels from the highest frequency down; runs[k] = zeros between level k and the next lower one. */
  int levels[16], runs[16], total = 0;
  int last = 31 - __builtin_clz(mask), pos = last;
  for (u32 rest = mask & ~(1u << last);; total++) {
    levels[total] = coef[pos];
    if (!rest) {
      runs[total++] = pos;
      break;
    }
    int next = 31 - __builtin_clz(rest);
    runs[total] = pos - next - 1;
    rest &= ~(1u << next);
    pos = next;
  }
  int trailing = 0;
  while (trailing < total && trailing < 3 && iabs(levels[trailing]) == 1) trailing++;
  int total_zeros = last + 1 - total;

  write_coeff_token(bw, total, trailing, nC);
  u32 signs = 0; /* trailing_ones_sign_flag of each, highest frequency first */
  for (int k = 0; k < trailing; k++) signs = (signs << 1) | (u32)(levels[k] < 0);
  bw_put(bw, signs, trailing);
  write_levels(bw, levels, total, trailing);
  if (total < max_coeff) {
    if (max_coeff == 4)
      put_vlc(bw, total_zeros_chroma_dc_vlc[total - 1][total_zeros]);
    else
      put_vlc(bw, total_zeros_vlc[total - 1][total_zeros]);
  }
  int zeros_left = total_zeros;
  for (int k = 0; k < total - 1 && zeros_left > 0; k++) {
    put_vlc(bw, run_before_vlc[imin(zeros_left, 7) - 1][runs[k]]);
    zeros_left -= runs[k];
  }
  return total;
}

/*
 * coef: max_coeff levels in scan order (16 for 4x4 blocks, 15 for AC blocks, 4 for chroma DC).
 * nC: predicted count from the neighbours (clause 9.2.1), -1 for chroma DC. Returns TotalCoeff.
 */
int cavlc_block(bitwriter_t *bw, const i16 *coef, int max_coeff, int nC) {
  u32 mask = 0;
  for (int k = 0; k < max_coeff; k++) mask |= (u32)(coef[k] != 0) << k;
  return cavlc_code(bw, coef, mask, max_coeff, nC);
}

/* A 4x4 block given in raster order: zig-zag scanned (Table 8-13), coded from scan position first
 * (1 for AC blocks whose DC is coded separately). */
int cavlc_block4x4(bitwriter_t *bw, const i16 raster[16], int first, int nC) {
  i16 scan[16];
  for (int k = 0; k < 16; k++) scan[k] = raster[zigzag4x4[k]];
  return cavlc_code(bw, scan + first, nonzero_mask(scan) >> first, 16 - first, nC);
}
