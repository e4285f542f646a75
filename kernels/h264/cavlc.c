/*
 * residual_block_cavlc() (H.264 clauses 7.3.5.3.2 and 9.2): codes one block of quantised levels
 * given in scan order. The syntax walks the coefficients from the highest frequency down:
 * coeff_token (TotalCoeff, TrailingOnes), the signs of up to three trailing +-1, the remaining
 * levels with an adaptive Golomb-Rice suffix, total_zeros, then each run_before.
 */
#include "cavlc_tables.h"
#include "encoder.h"

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
    if (suffix_len == 0) {
      if (code < 14) {
        bw_put(bw, 1, code + 1);
      } else if (code < 30) {
        bw_put(bw, 1, 15); /* level_prefix 14 with a 4-bit suffix */
        bw_put(bw, (u32)(code - 14), 4);
      } else {
        bw_put(bw, 1, 16); /* level_prefix 15 with a 12-bit suffix */
        bw_put(bw, (u32)(code - 30), 12);
      }
    } else {
      int prefix = code >> suffix_len;
      if (prefix < 15) {
        bw_put(bw, 1, prefix + 1);
        bw_put(bw, (u32)code & ((1u << suffix_len) - 1), suffix_len);
      } else {
        bw_put(bw, 1, 16);
        bw_put(bw, (u32)(code - (15 << suffix_len)), 12);
      }
    }
    if (suffix_len == 0) suffix_len = 1;
    if (iabs(level) > (3 << (suffix_len - 1)) && suffix_len < 6) suffix_len++;
  }
}

/*
 * coef: max_coeff levels in scan order (16 for 4x4 blocks, 15 for AC blocks, 4 for chroma DC).
 * nC: predicted count from the neighbours (clause 9.2.1), -1 for chroma DC. Returns TotalCoeff.
 */
int cavlc_block(bitwriter_t *bw, const i16 *coef, int max_coeff, int nC) {
  int levels[16], runs[16], total = 0, last = -1;
  for (int i = max_coeff - 1; i >= 0; i--)
    if (coef[i]) {
      last = i;
      break;
    }
  if (last < 0) {
    write_coeff_token(bw, 0, 0, nC);
    return 0;
  }
  /* Collect levels from the highest frequency down; runs[k] = zeros just below level k. */
  for (int i = last; i >= 0; i--) {
    if (coef[i]) {
      levels[total] = coef[i];
      runs[total] = 0;
      total++;
    } else {
      runs[total - 1]++;
    }
  }
  int trailing = 0;
  while (trailing < total && trailing < 3 && iabs(levels[trailing]) == 1) trailing++;
  int total_zeros = last + 1 - total;

  write_coeff_token(bw, total, trailing, nC);
  for (int k = 0; k < trailing; k++) bw_put(bw, levels[k] < 0, 1);
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
