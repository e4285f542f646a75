/*
 * P-picture macroblocks: P_Skip, P_L0_16x16 or intra, whichever the costs favour.
 *
 * P_Skip is taken whenever coding the block as P_L0_16x16 with the skip vector would produce no
 * coefficients at all: the decoder then reconstructs exactly the same samples from nothing but
 * the skip run. That test runs before the motion search only next to skipped macroblocks (where
 * skipping is likely), and again on the search result.
 *
 * Measured and rejected: x264-style "decimation" of lone +-1 levels (fewer bits, but it cost
 * ~8 % BD-rate in Y-PSNR on our test scenes) and early skip on every macroblock (the search
 * often finds a better vector whose residual is still cheap).
 */
#include "encoder.h"

/* Luma residual of an inter macroblock against pred; fills levels, cbp_luma and the reconstruction. */
static void inter_luma_encode(encoder_t *e, mb_t *mb, const u8 pred[256]) {
  const int cw = e->coded_w, s = e->stride_y, qp = e->qp;
  const u8 *src = e->src_y + mb->y * 16 * cw + mb->x * 16;
  u8 *rec = e->pic[e->cur].y + mb->y * 16 * s + mb->x * 16;
  int nz[16];
  for (int r = 0; r < 16; r += 2) {
    int bx = r & 3, by = r >> 2;
    fdct4x4_pair(mb->luma[r], mb->luma[r + 1], src + by * 4 * cw + bx * 4, cw, pred + by * 64 + bx * 4, 16);
  }
  mb->cbp_luma = 0;
  for (int r = 0; r < 16; r++) {
    nz[r] = quant4x4(mb->luma[r], qp, 0, 0);
    if (nz[r]) mb->cbp_luma |= 1 << ((r >> 3) * 2 + ((r & 3) >> 1));
  }
  for (int y = 0; y < 16; y++) memcpy(rec + y * s, pred + y * 16, 16);
  for (int r = 0; r < 16; r++) {
    if (!nz[r]) continue;
    int d[16];
    dequant4x4(d, mb->luma[r], qp);
    idct4x4_add(rec + (r >> 2) * 4 * s + (r & 3) * 4, s, d);
  }
}

/* Codes the macroblock as P_L0_16x16 with motion vector mv (prediction, residual, reconstruction). */
static void inter_encode(encoder_t *e, mb_t *mb, const int mv[2]) {
  const picture_t *ref = &e->pic[e->cur ^ 1];
  u8 pred[256], pu[64], pv[64];
  mb->type = MB_P16;
  mb->mv[0] = mv[0];
  mb->mv[1] = mv[1];
  mc_luma16(pred, ref, e->stride_y, mb->x * 16, mb->y * 16, mv[0], mv[1]);
  mc_chroma8(pu, ref->u, e->stride_c, mb->x * 8, mb->y * 8, mv[0], mv[1]);
  mc_chroma8(pv, ref->v, e->stride_c, mb->x * 8, mb->y * 8, mv[0], mv[1]);
  inter_luma_encode(e, mb, pred);
  chroma_residual_encode(e, mb, pu, pv, 0);
}

void encode_p_macroblock(encoder_t *e, mb_t *mb) {
  int skip_mv[2];
  mv_predict16x16(e, mb->x, mb->y, mb->mvp);
  mv_predict_skip(e, mb->x, mb->y, skip_mv);
  int skip_ok = mv_in_range(e, mb->x, mb->y, skip_mv[0], skip_mv[1]);

  /* Early skip: the skip vector leaves nothing worth coding. */
  int idx = mb->y * e->mb_w + mb->x;
  int neighbour_skipped = (mb->x > 0 && e->mbs[idx - 1].type == MB_PSKIP) || (mb->y > 0 && e->mbs[idx - e->mb_w].type == MB_PSKIP);
  if (skip_ok && neighbour_skipped) {
    inter_encode(e, mb, skip_mv);
    if (mb->cbp_luma == 0 && mb->cbp_chroma == 0) {
      mb->type = MB_PSKIP;
      return;
    }
  }

  int mv[2];
  int inter_cost = motion_search(e, mb, mv);
  int i16_cost, i16_mode = intra16x16_choose(e, mb, &i16_cost);
  if (i16_cost + e->lambda * 4 < inter_cost) {
    mb->mv[0] = mb->mv[1] = 0;
    intra_mb_encode(e, mb, i16_mode, i16_cost);
    return;
  }
  /* Detailed content can still favour Intra_4x4 when 16x16 prediction came close. */
  if (i16_cost < inter_cost + inter_cost / 4 && intra4x4_encode(e, mb) + e->lambda * 8 < inter_cost) {
    mb->type = MB_I4x4;
    mb->mv[0] = mb->mv[1] = 0;
    intra_chroma_encode(e, mb);
    return;
  }
  inter_encode(e, mb, mv);
  if (skip_ok && mv[0] == skip_mv[0] && mv[1] == skip_mv[1] && mb->cbp_luma == 0 && mb->cbp_chroma == 0)
    mb->type = MB_PSKIP;
}
