/*
 * The fast preset's macroblock decisions, after x264's ultrafast: Intra_16x16 only (no Intra_4x4,
 * whose sixteen sequential predictions dominate intra time), whole-sample diamond motion search
 * (so no half-sample planes are ever computed), SAD rather than SATD everywhere, and the same exact
 * P_Skip test as the quality preset (skip only when the residual would quantise to nothing).
 * Its inter residuals are decimated (decimate.c) and small ones not transformed at all (mb_inter.c).
 * encoder.c also turns the deblocking filter off for this preset (disable_deblocking_filter_idc 1).
 * The streams are larger than the quality preset's for the same PSNR but, like ultrafast's, cheap
 * to make.
 */
#include "encoder.h"

/* Probe P_Skip first where the skip prediction's SAD is below this many times inter_zero_sad4x4
 * (as mb_inter.c does, but on every macroblock: the fast search rarely finds better). */
#define FAST_SKIP_PROBE_FACTOR 2
/* Intra is considered only where the inter SAD per sample reaches this. */
#define FAST_INTRA_SAD 6

void encode_i_macroblock_fast(encoder_t *e, mb_t *mb) {
  int cost;
  mb->i16_mode = intra16x16_choose(e, mb, &cost, 2);
  mb->type = MB_I16;
  intra16x16_encode(e, mb);
  intra_chroma_encode(e, mb);
}

void encode_p_macroblock_fast(encoder_t *e, mb_t *mb) {
  int skip_mv[2];
  mv_predict16x16(e, mb->x, mb->y, mb->mvp);
  mv_predict_skip(e, mb->x, mb->y, skip_mv);
  int skip_ok = mv_in_range(e, mb->x, mb->y, skip_mv[0], skip_mv[1]);
  /* the probe's SAD, at a whole-sample vector, is also the search's at that position */
  int known[3] = {skip_mv[0] >> 2, skip_mv[1] >> 2, skip_ok ? skip_probe_sad(e, mb, skip_mv) : -1};
  const int *known_sad = known[2] >= 0 && !((skip_mv[0] | skip_mv[1]) & 3) ? known : NULL;
  if (skip_ok && known[2] < FAST_SKIP_PROBE_FACTOR * e->zero_sad_luma) {
    inter_mb_encode(e, mb, skip_mv);
    if (mb->cbp_luma == 0 && mb->cbp_chroma == 0) {
      mb->type = MB_PSKIP;
      return;
    }
  }
  int mv[2];
  int inter_cost = motion_search_fast(e, mb, mv, FAST_HALF_PEL, known_sad);
  if (inter_cost >= FAST_INTRA_SAD * 256) {
    int i16_cost, i16_mode = intra16x16_choose(e, mb, &i16_cost, 2);
    if (i16_cost + e->lambda * 4 < inter_cost) {
      mb->mv[0] = mb->mv[1] = 0;
      mb->i16_mode = i16_mode;
      mb->type = MB_I16;
      intra16x16_encode(e, mb);
      intra_chroma_encode(e, mb);
      return;
    }
  }
  inter_mb_encode(e, mb, mv);
  if (skip_ok && mv[0] == skip_mv[0] && mv[1] == skip_mv[1] && mb->cbp_luma == 0 && mb->cbp_chroma == 0)
    mb->type = MB_PSKIP;
}
