/*
 * Decimation of nearly empty inter residual blocks (the fast preset only), after x264's
 * dct-decimate, which its ultrafast preset uses: a 4x4 block whose levels are all +-1 scores by the
 * zero runs below each level (a lone high-frequency 1 scores 0, one with no zeros below it 3), any
 * larger level makes the block worth keeping (score 9). An 8x8 quadrant scoring under 4 is dropped,
 * and the whole macroblock's luma when its quadrants together score under 6. Such levels cost several bits
 * each for very little distortion, so dropping them saves bits and, as importantly here, the CAVLC
 * and reconstruction work for them; more macroblocks also end up as P_Skip.
 */
#include "encoder.h"
#include "simd.h"

/* Zig-zag position (Table 8-13) of each coefficient position (column-major, see transform.c): bit
 * r of a position mask becomes scan bit scan_of_pos[r]. The inverse of zigzag4x4. */
static const u8 scan_of_pos[16] = {0, 2, 3, 9, 1, 4, 8, 10, 5, 7, 11, 14, 6, 12, 13, 15};

/* A 16-bit position mask as a scan mask, one table lookup per byte. */
static u16 scan_lo[256], scan_hi[256];

/* The score of a block of +-1 levels by the mask of their positions (column-major): one lookup
 * instead of a loop over the levels with a data-dependent exit (it was a quarter of
 * inter_mb_encode's time in wasm). 64 KiB; the largest score, 16 levels without zeros, is 48. */
static u8 score_of_positions[1 << 16];

/* run_score[k]: what a level with k zeros (in scan order) below it adds. */
static const u8 run_score[16] = {3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static inline u32 scan_mask(u32 positions) { return (u32)scan_lo[positions & 255] | (u32)scan_hi[positions >> 8]; }

void decimate_init(void) {
  static int ready; /* the same for every encoder: filled once (h264_create calls this) */
  if (ready) return;
  for (int m = 0; m < 256; m++) {
    u16 lo = 0, hi = 0;
    for (int r = 0; r < 8; r++)
      if (m & (1 << r)) lo |= (u16)(1u << scan_of_pos[r]), hi |= (u16)(1u << scan_of_pos[r + 8]);
    scan_lo[m] = lo, scan_hi[m] = hi;
  }
  /* Each mask's highest-frequency level adds run_score of the zeros down to the next level; the
   * rest scores as the mask without it, a smaller number already filled in. */
  score_of_positions[0] = 0;
  for (u32 m = 1; m < (1u << 16); m++) {
    u32 scan = scan_mask(m);
    int top = 31 - __builtin_clz(scan);
    u32 rest = scan & ~(1u << top);
    int below = rest ? 31 - __builtin_clz(rest) : -1;
    score_of_positions[m] = (u8)(run_score[top - below - 1] + score_of_positions[m & ~(1u << zigzag4x4[top])]);
  }
  ready = 1;
}

/* The score of one block of levels (column-major, as transform.c stores them; see above). */
int decimate_score4x4(const i16 levels[16]) {
  u32 pos_mask = 0;
#if H264_SIMD
  vec lo = v_load(levels), hi = v_load(levels + 8), one = v_splat16(1), zero = v_zero();
  if (v_any(v_or(v_gt16(v_abs16(lo), one), v_gt16(v_abs16(hi), one)))) return 9;
  pos_mask = (u32)v_mask8(v_pack_i8(v_eq16(lo, zero), v_eq16(hi, zero))) ^ 0xffffu;
#else
  for (int k = 0; k < 16; k++) {
    if (iabs(levels[k]) > 1) return 9;
    pos_mask |= (u32)(levels[k] != 0) << k;
  }
#endif
  return score_of_positions[pos_mask];
}

/* Applies the 8x8 and macroblock thresholds to an inter macroblock's luma levels (raster block
 * order) and their counts in nz; clears what it drops and returns the new cbp_luma. */
int decimate_luma(i16 levels[16][16], u8 nz[16], int cbp_luma) {
  static const u8 quadrant_blocks[4][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};
  int total = 0;
  for (int q = 0; q < 4; q++) {
    if (!(cbp_luma & (1 << q))) continue;
    int score = 0;
    for (int k = 0; k < 4 && score < 6; k++) { /* past 6 neither threshold can be met */
      int r = quadrant_blocks[q][k];
      if (nz[r]) score += decimate_score4x4(levels[r]);
    }
    if (score < 4) {
      for (int k = 0; k < 4; k++) {
        int r = quadrant_blocks[q][k];
        memset(levels[r], 0, sizeof(levels[r]));
        nz[r] = 0;
      }
      cbp_luma &= ~(1 << q);
    }
    total += score; /* dropped quadrants count too, as in x264 */
  }
  if (cbp_luma && total < 6) {
    memset(levels, 0, sizeof(i16) * 16 * 16);
    memset(nz, 0, 16);
    cbp_luma = 0;
  }
  return cbp_luma;
}
