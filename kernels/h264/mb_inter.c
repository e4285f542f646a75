/*
 * P-picture macroblocks: P_Skip, P_L0_16x16 or intra, whichever the costs favour.
 *
 * P_Skip is taken whenever coding the block as P_L0_16x16 with the skip vector would produce no
 * coefficients at all: the decoder then reconstructs exactly the same samples from nothing but
 * the skip run. That test runs before the motion search next to skipped macroblocks and where the
 * skip prediction's luma SAD is below twice the bound under which a 4x4 residual surely quantises
 * away (where skipping is likely), and again on the search result.
 *
 * Residual blocks whose SAD is below that bound (inter_zero_sad4x4, and its 8x8 chroma
 * counterpart) skip the transform altogether: the result is the same, only faster.
 *
 * Measured and rejected for this (the quality) preset: x264-style decimation of lone +-1 levels
 * (fewer bits, but it cost ~8 % BD-rate in Y-PSNR on our test scenes; the fast preset, whose
 * residuals are larger, gains from it: decimate.c) and early skip on every macroblock (the search
 * often finds a better vector whose residual is still cheap).
 */
#include "encoder.h"

/* The fast preset skips the transform of a pair of 4x4 blocks whose SAD is below this many times
 * the single-block bound. 2 only drops residuals that decimation (decimate.c) would drop anyway;
 * 3 and 4 save 5 - 20 % of the time (most on `pan`) for about +0.3 % BD-rate, but every step adds
 * to the drift over long P runs (test/media/h264-preset.test.ts), so 3. */
#ifndef FAST_ZERO_SAD_FACTOR
#define FAST_ZERO_SAD_FACTOR 3
#endif

/* Early-skip trigger: the skip prediction's SAD is below this many times inter_zero_sad4x4. */
#define SKIP_PROBE_FACTOR 2

/* Luma residual of an inter macroblock against the prediction already in the reconstruction;
 * fills levels and cbp_luma and adds the decoded residual. */
static void inter_luma_encode(encoder_t *e, mb_t *mb) {
  const int cw = e->coded_w, s = e->stride_y, qp = e->qp;
  const u8 *src = e->src_y + mb->y * 16 * cw + mb->x * 16;
  u8 *rec = e->pic[e->cur].y + mb->y * 16 * s + mb->x * 16;
  u8 *nz = mb->nz;
  const int zero_sad = e->preset == PRESET_FAST ? FAST_ZERO_SAD_FACTOR * e->zero_sad_luma : e->zero_sad_luma;
  mb->cbp_luma = 0;
  for (int band = 0; band < 4; band++) {
    int sad[2];
    sad16x4_halves(src + band * 4 * cw, cw, rec + band * 4 * s, s, sad);
    for (int half = 0; half < 2; half++) {
      int r = band * 4 + half * 2;
      if (sad[half] < zero_sad) { /* both 4x4 blocks quantise to nothing (see inter_zero_sad4x4) */
        memset(mb->luma[r], 0, 2 * sizeof(mb->luma[r]));
        nz[r] = nz[r + 1] = 0;
        continue;
      }
      int counts = fdct_quant_pair(mb->luma[r], mb->luma[r + 1], src + band * 4 * cw + half * 8, cw, rec + band * 4 * s + half * 8, s, qp, 0, NULL);
      nz[r] = (u8)(counts & 255);
      nz[r + 1] = (u8)(counts >> 8);
      if (nz[r] | nz[r + 1]) mb->cbp_luma |= 1 << ((band >> 1) * 2 + half);
    }
  }
  if (e->preset == PRESET_FAST && mb->cbp_luma) mb->cbp_luma = decimate_luma(mb->luma, nz, mb->cbp_luma);
  for (int r = 0; r < 16; r += 2)
    if (nz[r] | nz[r + 1]) recon4x4_pair(rec + (r >> 2) * 4 * s + (r & 3) * 4, s, mb->luma[r], mb->luma[r + 1], qp, NULL);
}

/* Codes the macroblock as P_L0_16x16 with motion vector mv: the prediction goes straight into the
 * reconstruction, the residual is coded against it and added. */
void inter_mb_encode(encoder_t *e, mb_t *mb, const int mv[2]) {
  const picture_t *ref = &e->pic[e->cur ^ 1];
  picture_t *cur = &e->pic[e->cur];
  const int sy = e->stride_y, sc = e->stride_c;
  u8 *pu = cur->u + mb->y * 8 * sc + mb->x * 8, *pv = cur->v + mb->y * 8 * sc + mb->x * 8;
  mb->type = MB_P16;
  mb->mv[0] = mv[0];
  mb->mv[1] = mv[1];
  mc_luma16(cur->y + mb->y * 16 * sy + mb->x * 16, sy, ref, sy, mb->x * 16, mb->y * 16, mv[0], mv[1]);
  mc_chroma8(pu, sc, ref->u, sc, mb->x * 8, mb->y * 8, mv[0], mv[1]);
  mc_chroma8(pv, sc, ref->v, sc, mb->x * 8, mb->y * 8, mv[0], mv[1]);
  inter_luma_encode(e, mb);
  chroma_residual_encode(e, mb, pu, pv, sc, 0);
}

/* Luma SAD of the P_Skip prediction. */
int skip_probe_sad(encoder_t *e, const mb_t *mb, const int skip_mv[2]) {
  const u8 *a, *b, *src = e->src_y + mb->y * 16 * e->coded_w + mb->x * 16;
  luma_qpel_planes(&e->pic[e->cur ^ 1], e->stride_y, mb->x * 16, mb->y * 16, skip_mv[0], skip_mv[1], &a, &b);
  return a == b ? sad16x16(src, e->coded_w, a, e->stride_y) : sad16x16_avg(src, e->coded_w, a, b, e->stride_y);
}

void encode_p_macroblock(encoder_t *e, mb_t *mb) {
  int skip_mv[2];
  mv_predict16x16(e, mb->x, mb->y, mb->mvp);
  mv_predict_skip(e, mb->x, mb->y, skip_mv);
  int skip_ok = mv_in_range(e, mb->x, mb->y, skip_mv[0], skip_mv[1]);

  /* Early skip: the skip vector leaves nothing worth coding. Tried next to skipped macroblocks,
   * and where the luma prediction error is small. */
  int idx = mb->y * e->mb_w + mb->x;
  int likely = (mb->x > 0 && e->mbs[idx - 1].type == MB_PSKIP) || (mb->y > 0 && e->mbs[idx - e->mb_w].type == MB_PSKIP);
  if (skip_ok && !likely) likely = skip_probe_sad(e, mb, skip_mv) < SKIP_PROBE_FACTOR * e->zero_sad_luma;
  if (skip_ok && likely) {
    inter_mb_encode(e, mb, skip_mv);
    if (mb->cbp_luma == 0 && mb->cbp_chroma == 0) {
      mb->type = MB_PSKIP;
      return;
    }
  }

  int mv[2];
  int inter_cost = motion_search(e, mb, mv);
  /* Intra only where the motion-compensated prediction is poor (SATD of 8 or more per sample):
   * below that it never paid off on our scenes, and trying it costs 5 % of the time. */
  if (inter_cost >= 8 * 256) {
    int i16_cost, i16_mode = intra16x16_choose(e, mb, &i16_cost, 1);
    if (i16_cost + e->lambda * 4 < inter_cost) {
      mb->mv[0] = mb->mv[1] = 0;
      intra_mb_encode(e, mb, i16_mode, i16_cost);
      return;
    }
    /* Detailed content can still favour Intra_4x4 when 16x16 prediction came close (after a
     * scene cut, say); trying it more often cost 5 % of the time for no measurable gain. */
    if (i16_cost < inter_cost + inter_cost / 16 && intra4x4_encode(e, mb, inter_cost - e->lambda * 8 - 1) != INT_MAX) {
      mb->type = MB_I4x4;
      mb->mv[0] = mb->mv[1] = 0;
      intra_chroma_encode(e, mb);
      return;
    }
  }
  inter_mb_encode(e, mb, mv);
  if (skip_ok && mv[0] == skip_mv[0] && mv[1] == skip_mv[1] && mb->cbp_luma == 0 && mb->cbp_chroma == 0)
    mb->type = MB_PSKIP;
}
