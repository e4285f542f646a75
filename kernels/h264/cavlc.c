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

/* coeff_token followed by the trailing ones' sign flags (trailing bits in signs), as one code. */
static void write_coeff_token(bitwriter_t *bw, int total, int trailing, int nC, u32 signs) {
  vlc_t v;
  if (nC == -1) {
    v = coeff_token_chroma_dc_vlc[total][trailing];
  } else if (nC >= 8) { /* 6-bit fixed length: TotalCoeff - 1 then TrailingOnes, 000011 for an empty block */
    v.code = total == 0 ? 3 : (u8)(((total - 1) << 2) | trailing);
    v.len = 6;
  } else {
    v = coeff_token_vlc[nC < 2 ? 0 : nC < 4 ? 1 : 2][total][trailing];
  }
  bw_put(bw, ((u32)v.code << trailing) | signs, v.len + trailing);
}

/*
 * Encoder side of clause 9.2.2.1: levelCode = 2*level - 2 for positive levels, -2*level - 1 for
 * negative ones, minus 2 for the first level after fewer than three trailing ones (which cannot be
 * +-1). The prefix is unary; suffixLength grows as levels get large. transform.c caps |level| at 2063
 * so every level fits the prefix-15 escape that Baseline allows. level_prefix (zeros then a one) and
 * level_suffix go out as one code.
 */
typedef struct {
  u32 code;
  u8 len;
  u8 next; /* suffixLength for the next level */
} level_code_t;

static level_code_t level_code(int level, int suffix_len, int first) {
  level_code_t t;
  int code = level > 0 ? 2 * level - 2 : -2 * level - 1;
  if (first) code -= 2;
  if (code < 0) code = 0; /* first with |level| 1 never happens; keep the table entry harmless */
  if (suffix_len == 0) {
    if (code < 14) t.code = 1, t.len = (u8)(code + 1);
    else if (code < 30) t.code = (1u << 4) | (u32)(code - 14), t.len = 15 + 4; /* level_prefix 14, 4-bit suffix */
    else t.code = (1u << 12) | (u32)(code - 30), t.len = 16 + 12;              /* level_prefix 15, 12-bit suffix */
  } else {
    int prefix = code >> suffix_len;
    if (prefix < 15) t.code = (1u << suffix_len) | ((u32)code & ((1u << suffix_len) - 1)), t.len = (u8)(prefix + 1 + suffix_len);
    else t.code = (1u << 12) | (u32)(code - (15 << suffix_len)), t.len = 16 + 12;
  }
  int next = suffix_len == 0 ? 1 : suffix_len;
  if (iabs(level) > (3 << (next - 1)) && next < 6) next++;
  t.next = (u8)next;
  return t;
}

/* level_code for every small level, so the common case is one lookup instead of a chain of
 * data-dependent branches: level_codes[first][suffixLength][LEVEL_RANGE + level]. */
#define LEVEL_RANGE 64
static level_code_t level_codes[2][7][2 * LEVEL_RANGE + 1];
static int level_codes_ready;

/* Called by h264_create; the table is the same for every encoder. */
void cavlc_init(void) {
  if (level_codes_ready) return;
  for (int first = 0; first < 2; first++)
    for (int sl = 0; sl < 7; sl++)
      for (int l = -LEVEL_RANGE; l <= LEVEL_RANGE; l++) level_codes[first][sl][LEVEL_RANGE + l] = level_code(l, sl, first);
  level_codes_ready = 1;
}

static inline int put_level(bitwriter_t *bw, int level, int suffix_len, int first) {
  level_code_t t = (u32)(level + LEVEL_RANGE) <= 2 * LEVEL_RANGE ? level_codes[first][suffix_len][LEVEL_RANGE + level] : level_code(level, suffix_len, first);
  bw_put(bw, t.code, t.len);
  return t.next;
}

static void write_levels(bitwriter_t *bw, const int *levels, int total, int trailing) {
  int suffix_len = (total > 10 && trailing < 3) ? 1 : 0, k = trailing;
  if (k < total && trailing < 3) suffix_len = put_level(bw, levels[k++], suffix_len, 1);
  for (; k < total; k++) suffix_len = put_level(bw, levels[k], suffix_len, 0);
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
static inline __attribute__((always_inline)) int cavlc_code(bitwriter_t *bw, const i16 *coef, u32 mask, int max_coeff, int nC) {
  if (!mask) {
    write_coeff_token(bw, 0, 0, nC, 0);
    return 0;
  }
  /* Levels from the highest frequency down; runs[k] = zeros between level k and the next lower one. */
  int levels[16], runs[16], total = 0;
  levels[1] = levels[2] = 0;
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
  /* TrailingOnes: up to three +-1 at the top (levels past total are 0); their signs, highest
   * frequency first, follow coeff_token in the same code. */
  int t1 = iabs(levels[0]) == 1, t2 = t1 & (iabs(levels[1]) == 1), t3 = t2 & (iabs(levels[2]) == 1);
  int trailing = t1 + t2 + t3;
  u32 signs = ((u32)(levels[0] < 0) << 2 | (u32)(levels[1] < 0) << 1 | (u32)(levels[2] < 0)) >> (3 - trailing);
  int total_zeros = last + 1 - total;
  write_coeff_token(bw, total, trailing, nC, signs);
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
#if H264_SIMD
  /* Table 8-13 as byte swizzles: each half of the scan takes lanes from both halves of the block
   * (indices >= 16, here -1, give 0). */
  static const i8 lo_from_lo[16] = {0, 1, 2, 3, 8, 9, -1, -1, 10, 11, 4, 5, 6, 7, 12, 13};
  static const i8 lo_from_hi[16] = {-1, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, -1, -1, -1, -1, -1};
  static const i8 hi_from_hi[16] = {2, 3, 8, 9, 10, 11, 4, 5, -1, -1, 6, 7, 12, 13, 14, 15};
  static const i8 hi_from_lo[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 14, 15, -1, -1, -1, -1, -1, -1};
  vec lo = v_load(raster), hi = v_load(raster + 8);
  v_store(scan, v_or(v_swizzle(lo, v_load(lo_from_lo)), v_swizzle(hi, v_load(lo_from_hi))));
  v_store(scan + 8, v_or(v_swizzle(hi, v_load(hi_from_hi)), v_swizzle(lo, v_load(hi_from_lo))));
#else
  for (int k = 0; k < 16; k++) scan[k] = raster[zigzag4x4[k]];
#endif
  return cavlc_code(bw, scan + first, nonzero_mask(scan) >> first, 16 - first, nC);
}
