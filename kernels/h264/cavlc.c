/*
 * residual_block_cavlc() (H.264 clauses 7.3.5.3.2 and 9.2): codes one block of quantised levels
 * given in scan order. The syntax walks the coefficients from the highest frequency down:
 * coeff_token (TotalCoeff, TrailingOnes), the signs of up to three trailing +-1, the remaining
 * levels with an adaptive Golomb-Rice suffix, total_zeros, then each run_before.
 */
#include "cavlc_tables.h"
#include "encoder.h"
#include "simd.h"

/* Every code below comes from a table or is built to its length, so no mask is needed (bw_put_exact). */
static inline __attribute__((always_inline)) void put_vlc(bitwriter_t *bw, vlc_t v) { bw_put_exact(bw, v.code, v.len); }

/* coeff_token for every nC class: 0-2 the VLC tables of Table 9-5, 3 the 6-bit fixed-length code
 * for nC >= 8 (TotalCoeff - 1 then TrailingOnes, 000011 for an empty block), 4 chroma DC (nC -1);
 * nc_class maps nC + 1 to its class. One lookup instead of a chain of branches on nC. */
static vlc_t coeff_tokens[5][17][4];
static u8 nc_class[18];

static void coeff_tokens_init(void) {
  for (int total = 0; total <= 16; total++)
    for (int t = 0; t < 4 && t <= total; t++) {
      for (int c = 0; c < 3; c++) coeff_tokens[c][total][t] = coeff_token_vlc[c][total][t];
      coeff_tokens[3][total][t].code = total == 0 ? 3 : (u8)(((total - 1) << 2) | t);
      coeff_tokens[3][total][t].len = 6;
      if (total <= 4) coeff_tokens[4][total][t] = coeff_token_chroma_dc_vlc[total][t];
    }
  for (int nc = -1; nc <= 16; nc++) nc_class[nc + 1] = (u8)(nc < 0 ? 4 : nc < 2 ? 0 : nc < 4 ? 1 : nc < 8 ? 2 : 3);
}

/* coeff_token followed by the trailing ones' sign flags (trailing bits in signs), as one code. */
static inline __attribute__((always_inline)) void write_coeff_token(bitwriter_t *bw, int total, int trailing, int nC, u32 signs) {
  vlc_t v = coeff_tokens[nc_class[nC + 1]][total][trailing];
  bw_put_exact(bw, ((u32)v.code << trailing) | signs, v.len + trailing);
}

/* Every run_before of a block at once, x264's way: for each mask of non-zero positions (bit k =
 * scan position k), the concatenated run_before codes (at most 25 bits) in the low 27 bits and
 * their length above. 256 KiB, filled once. */
static u32 run_before_codes[1 << 16];

static void run_before_init(void) {
  for (u32 mask = 1; mask < (1u << 16); mask++) {
    int last = 31 - __builtin_clz(mask), zeros_left = last + 1 - __builtin_popcount(mask), pos = last, len = 0;
    u32 code = 0;
    for (u32 lower = mask & ~(1u << last); zeros_left > 0 && lower;) {
      int next = 31 - __builtin_clz(lower), run = pos - next - 1;
      vlc_t v = run_before_vlc[imin(zeros_left, 7) - 1][run];
      code = code << v.len | v.code;
      len += v.len;
      zeros_left -= run;
      lower &= ~(1u << next);
      pos = next;
    }
    run_before_codes[mask] = (u32)len << 27 | code;
  }
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
  coeff_tokens_init();
  run_before_init();
  level_codes_ready = 1;
}

static inline __attribute__((always_inline)) int put_level(bitwriter_t *bw, int level, int suffix_len, int first) {
  level_code_t t = (u32)(level + LEVEL_RANGE) <= 2 * LEVEL_RANGE ? level_codes[first][suffix_len][LEVEL_RANGE + level] : level_code(level, suffix_len, first);
  bw_put_exact(bw, t.code, t.len);
  return t.next;
}

/* Codes levels coef[0..max_coeff) (scan order) whose non-zero positions are the set bits of mask;
 * ones marks the levels that are +-1 and neg the negative ones. The writer's state is copied into a
 * local for the block, so it lives in registers (wasm locals) instead of going through memory at
 * every code. Positions come straight from the masks, with no arrays of levels and runs and no
 * data-dependent branches until the levels themselves. */
static inline __attribute__((always_inline)) int cavlc_code(bitwriter_t *out, const i16 *coef, u32 mask, u32 ones, u32 neg, int max_coeff, int nC) {
  bitwriter_t w = *out, *bw = &w;
  if (!mask) {
    write_coeff_token(bw, 0, 0, nC, 0);
    *out = w;
    return 0;
  }
  const int total = __builtin_popcount(mask), last = 31 - __builtin_clz(mask);
  /* TrailingOnes: the +-1 levels above the highest larger one, at most three; their signs,
   * highest frequency first, follow coeff_token in the same code. p[k] is the position of the
   * k-th level from the top (garbage past total, never used); rest drops the trailing ones. */
  u32 big = mask & ~ones;
  u32 above = big ? mask & ~((2u << (31 - __builtin_clz(big))) - 1) : mask;
  int trailing = imin(__builtin_popcount(above), 3);
  int p[4] = {16, last, 0, 0};
  p[2] = 31 - __builtin_clz((mask & ((1u << p[1]) - 1)) | 1);
  p[3] = 31 - __builtin_clz((mask & ((1u << p[2]) - 1)) | 1);
  u32 signs = ((neg >> p[1] & 1) << 2 | (neg >> p[2] & 1) << 1 | (neg >> p[3] & 1)) >> (3 - trailing);
  u32 rest = mask & ((1u << p[trailing]) - 1);
  write_coeff_token(bw, total, trailing, nC, signs);
  if (rest) { /* the remaining levels, highest frequency first */
    int suffix_len = (total > 10 && trailing < 3) ? 1 : 0, first = trailing < 3;
    do {
      int pos = 31 - __builtin_clz(rest);
      rest &= ~(1u << pos);
      suffix_len = put_level(bw, coef[pos], suffix_len, first);
      first = 0;
    } while (rest);
  }
  int zeros_left = last + 1 - total; /* total_zeros */
  if (total < max_coeff) put_vlc(bw, max_coeff == 4 ? total_zeros_chroma_dc_vlc[total - 1][zeros_left] : total_zeros_vlc[total - 1][zeros_left]);
  u32 runs = run_before_codes[mask]; /* each level's run_before but the lowest one's, while zeros are left */
  if (runs) bw_put_exact(bw, runs & ((1u << 27) - 1), (int)(runs >> 27));
  *out = w;
  return total;
}

/*
 * coef: max_coeff levels in scan order (16 for 4x4 blocks, 15 for AC blocks, 4 for chroma DC).
 * nC: predicted count from the neighbours (clause 9.2.1), -1 for chroma DC. Returns TotalCoeff.
 */
int cavlc_block(bitwriter_t *bw, const i16 *coef, int max_coeff, int nC) {
  u32 mask = 0, ones = 0, neg = 0;
  for (int k = 0; k < max_coeff; k++) {
    mask |= (u32)(coef[k] != 0) << k;
    ones |= (u32)(coef[k] == 1 || coef[k] == -1) << k;
    neg |= (u32)(coef[k] < 0) << k;
  }
  return cavlc_code(bw, coef, mask, ones, neg, max_coeff, nC);
}

/* coeff_token of a block without levels (TotalCoeff 0): what most blocks of a coded 8x8 are. */
void cavlc_empty(bitwriter_t *bw, int nC) { write_coeff_token(bw, 0, 0, nC, 0); }

/* A 4x4 block given column-major (transform.c): zig-zag scanned (Table 8-13, transposed), coded
 * from scan position first (1 for AC blocks whose DC is coded separately). */
int cavlc_block4x4(bitwriter_t *bw, const i16 coef[16], int first, int nC) {
  i16 scan[16];
  u32 mask, ones, neg;
#if H264_SIMD
  /* scan order as column-major indices: 0 4 1 2 5 8 12 9 | 6 3 7 10 13 14 11 15 */
  vec lo = v_load(coef), hi = v_load(coef + 8), s0, s1;
#if defined(__wasm_simd128__)
  /* wasm shuffles two vectors by constant byte indices in one instruction (pshufb pairs in V8 and JSC) */
  s0 = wasm_i8x16_shuffle(lo, hi, 0, 1, 8, 9, 2, 3, 4, 5, 10, 11, 16, 17, 24, 25, 18, 19);
  s1 = wasm_i8x16_shuffle(lo, hi, 12, 13, 6, 7, 14, 15, 20, 21, 26, 27, 28, 29, 22, 23, 30, 31);
#else
  /* each half of the scan takes lanes from both halves of the block (index -1 gives 0) */
  s0 = v_or(V_SHUFFLE8(lo, 0, 1, 8, 9, 2, 3, 4, 5, 10, 11, -1, -1, -1, -1, -1, -1), V_SHUFFLE8(hi, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 8, 9, 2, 3));
  s1 = v_or(V_SHUFFLE8(lo, 12, 13, 6, 7, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1), V_SHUFFLE8(hi, -1, -1, -1, -1, -1, -1, 4, 5, 10, 11, 12, 13, 6, 7, 14, 15));
#endif
  v_store(scan, s0);
  v_store(scan + 8, s1);
  /* bit k of each mask from scan position k: saturating packs keep the sign and the all-ones lanes */
  const vec zero = v_zero(), one = v_splat16(1);
  mask = (u32)v_mask8(v_pack_i8(v_eq16(s0, zero), v_eq16(s1, zero))) ^ 0xffffu;
  ones = (u32)v_mask8(v_pack_i8(v_eq16(v_abs16(s0), one), v_eq16(v_abs16(s1), one)));
  neg = (u32)v_mask8(v_pack_i8(s0, s1));
#else
  mask = ones = neg = 0;
  for (int k = 0; k < 16; k++) {
    scan[k] = coef[zigzag4x4[k]];
    mask |= (u32)(scan[k] != 0) << k;
    ones |= (u32)(scan[k] == 1 || scan[k] == -1) << k;
    neg |= (u32)(scan[k] < 0) << k;
  }
#endif
  return cavlc_code(bw, scan + first, mask >> first, ones >> first, neg >> first, 16 - first, nC);
}
