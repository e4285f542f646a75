/*
 * Intra macroblocks: mode decision (SATD + lambda * estimated mode bits), transform, quantisation
 * and reconstruction into the current picture, for Intra_4x4, Intra_16x16 and chroma.
 * Used for every macroblock of I pictures and where intra beats inter in P pictures.
 */
#include "encoder.h"

static inline u8 *rec_y(encoder_t *e, const mb_t *mb) { return e->pic[e->cur].y + mb->y * 16 * e->stride_y + mb->x * 16; }
static inline const u8 *src_y(encoder_t *e, const mb_t *mb) { return e->src_y + mb->y * 16 * e->coded_w + mb->x * 16; }

/* luma4x4BlkIdx (clause 6.4.3) of the 4x4 block at (bx, by): 8x8 quadrants, then raster inside. */
static inline int blk_index(int bx, int by) { return (by >> 1) * 8 + (bx >> 1) * 4 + (by & 1) * 2 + (bx & 1); }

/* predIntra4x4PredMode (clause 8.3.1.1): min of the left and upper blocks' modes; DC (2) when
 * either neighbour is outside the picture. Non-I_NxN macroblocks store 2 in every block. */
int i4_predicted_mode(const encoder_t *e, const mb_t *mb, int bx, int by) {
  int idx = mb->y * e->mb_w + mb->x;
  if ((bx == 0 && mb->x == 0) || (by == 0 && mb->y == 0)) return 2;
  int a = bx > 0 ? mb->i4_mode[by * 4 + bx - 1] : e->mbs[idx - 1].i4_mode[by * 4 + 3];
  int b = by > 0 ? mb->i4_mode[(by - 1) * 4 + bx] : e->mbs[idx - e->mb_w].i4_mode[12 + bx];
  return imin(a, b);
}

/* Neighbouring samples of a 4x4 block (clause 8.3.1.2), with availability per clause 6.4.11.4:
 * the up-right block is only available when it lies in an already coded block. */
static void gather_edge4(encoder_t *e, const mb_t *mb, int bx, int by, intra4_edge_t *ed) {
  const int s = e->stride_y;
  const u8 *rec = rec_y(e, mb) + by * 4 * s + bx * 4;
  ed->has_left = bx > 0 || mb->x > 0;
  ed->has_top = by > 0 || mb->y > 0;
  if (bx > 0 && by > 0) ed->has_topleft = 1;
  else if (bx > 0) ed->has_topleft = mb->y > 0;
  else if (by > 0) ed->has_topleft = mb->x > 0;
  else ed->has_topleft = mb->x > 0 && mb->y > 0;
  int has_topright;
  if (by == 0) has_topright = bx < 3 ? mb->y > 0 : (mb->y > 0 && mb->x + 1 < e->mb_w);
  else has_topright = bx < 3 && blk_index(bx + 1, by - 1) < blk_index(bx, by);
  for (int k = 0; k < 4; k++) {
    ed->top[k] = rec[-s + k];
    ed->left[k] = rec[k * s - 1];
  }
  for (int k = 4; k < 8; k++) ed->top[k] = has_topright ? rec[-s + k] : ed->top[3];
  ed->topleft = rec[-s - 1];
}

static void copy_block(u8 *dst, int ds, const u8 *src, int ss, int w, int h) {
  for (int y = 0; y < h; y++) memcpy(dst + y * ds, src + y * ss, (size_t)w);
}

/* Chooses and codes all sixteen 4x4 blocks in decoding order, reconstructing each before the next
 * one predicts from it. Returns the decision cost. */
int intra4x4_encode(encoder_t *e, mb_t *mb) {
  const int s = e->stride_y, cw = e->coded_w;
  int total = 0;
  mb->cbp_luma = 0;
  for (int blk = 0; blk < 16; blk++) {
    int bx = ((blk >> 2) & 1) * 2 + (blk & 1), by = (blk >> 3) * 2 + ((blk >> 1) & 1), r = by * 4 + bx;
    const u8 *src = src_y(e, mb) + by * 4 * cw + bx * 4;
    u8 *rec = rec_y(e, mb) + by * 4 * s + bx * 4;
    intra4_edge_t ed;
    gather_edge4(e, mb, bx, by, &ed);
    int predicted = i4_predicted_mode(e, mb, bx, by), best_mode = 2, best_cost = 0x7fffffff;
    u8 pred[16], best_pred[16];
    for (int mode = 0; mode < 9; mode++) {
      if (!intra4x4_mode_available(mode, &ed)) continue;
      intra4x4_predict(pred, mode, &ed);
      int cost = satd4x4(src, cw, pred, 4) + e->lambda * (mode == predicted ? 1 : 4);
      if (cost < best_cost) {
        best_cost = cost;
        best_mode = mode;
        memcpy(best_pred, pred, 16);
      }
    }
    mb->i4_mode[r] = (i8)best_mode;
    total += best_cost;
    fdct4x4(mb->luma[r], src, cw, best_pred, 4);
    int nz = quant4x4(mb->luma[r], e->qp, 1, 0);
    copy_block(rec, s, best_pred, 4, 4, 4);
    if (nz) {
      int d[16];
      dequant4x4(d, mb->luma[r], e->qp);
      idct4x4_add(rec, s, d);
      mb->cbp_luma |= 1 << ((by >> 1) * 2 + (bx >> 1));
    }
  }
  return total;
}

int intra16x16_choose(encoder_t *e, mb_t *mb, int *cost) {
  const u8 *rec = rec_y(e, mb);
  int has_top = mb->y > 0, has_left = mb->x > 0, best_mode = 2;
  u8 pred[256];
  *cost = 0x7fffffff;
  for (int mode = 0; mode < 4; mode++) {
    if ((mode == 0 && !has_top) || (mode == 1 && !has_left) || (mode == 3 && !(has_top && has_left))) continue;
    intra16x16_predict(pred, mode, rec, e->stride_y, has_top, has_left);
    int c = satd16x16(src_y(e, mb), e->coded_w, pred, 16);
    if (c < *cost) {
      *cost = c;
      best_mode = mode;
    }
  }
  return best_mode;
}

/* Intra16x16: the sixteen DCs go through a 4x4 Hadamard and are coded as one block; the AC
 * parts are coded only when any of them survives quantisation (cbp luma 0 or 15). */
void intra16x16_encode(encoder_t *e, mb_t *mb) {
  const int s = e->stride_y, cw = e->coded_w, qp = e->qp;
  u8 pred[256];
  u8 *rec = rec_y(e, mb);
  intra16x16_predict(pred, mb->i16_mode, rec, s, mb->y > 0, mb->x > 0);
  int dc[16], any_ac = 0;
  for (int r = 0; r < 16; r += 2) {
    int bx = r & 3, by = r >> 2;
    fdct4x4_pair(mb->luma[r], mb->luma[r + 1], src_y(e, mb) + by * 4 * cw + bx * 4, cw, pred + by * 64 + bx * 4, 16);
  }
  for (int r = 0; r < 16; r++) {
    dc[r] = mb->luma[r][0];
    mb->luma[r][0] = 0;
    any_ac |= quant4x4(mb->luma[r], qp, 1, 1);
  }
  luma_dc_forward(dc);
  quant_dc(dc, 16, qp, 1, mb->luma_dc);
  mb->cbp_luma = any_ac ? 15 : 0;

  int dc_rec[16];
  luma_dc_dequant(dc_rec, mb->luma_dc, qp);
  copy_block(rec, s, pred, 16, 16, 16);
  for (int r = 0; r < 16; r++) {
    int d[16];
    dequant4x4(d, mb->luma[r], qp);
    d[0] = dc_rec[r];
    idct4x4_add(rec + (r >> 2) * 4 * s + (r & 3) * 4, s, d);
  }
}

/* Chroma residual for intra and inter macroblocks: per component a 2x2 DC transform plus four AC
 * blocks; cbp chroma says whether DC only (1) or DC and AC (2) are coded. */
void chroma_residual_encode(encoder_t *e, mb_t *mb, const u8 pred_u[64], const u8 pred_v[64], int intra) {
  const int cs = e->coded_w / 2, s = e->stride_c, qp = e->qp_c;
  int any_dc = 0, any_ac = 0;
  for (int c = 0; c < 2; c++) {
    const u8 *src = (c ? e->src_v : e->src_u) + mb->y * 8 * cs + mb->x * 8;
    const u8 *pred = c ? pred_v : pred_u;
    int dc[4];
    fdct4x4_pair(mb->chroma_ac[c][0], mb->chroma_ac[c][1], src, cs, pred, 8);
    fdct4x4_pair(mb->chroma_ac[c][2], mb->chroma_ac[c][3], src + 4 * cs, cs, pred + 32, 8);
    for (int b = 0; b < 4; b++) {
      i16 *ac = mb->chroma_ac[c][b];
      dc[b] = ac[0];
      ac[0] = 0;
      any_ac |= quant4x4(ac, qp, intra, 1);
    }
    chroma_dc_forward(dc);
    any_dc |= quant_dc(dc, 4, qp, intra, mb->chroma_dc[c]);
  }
  mb->cbp_chroma = any_ac ? 2 : any_dc ? 1 : 0;
  if (mb->cbp_chroma < 2) memset(mb->chroma_ac, 0, sizeof(mb->chroma_ac));

  for (int c = 0; c < 2; c++) {
    u8 *rec = (c ? e->pic[e->cur].v : e->pic[e->cur].u) + mb->y * 8 * s + mb->x * 8;
    int dc_rec[4];
    chroma_dc_dequant(dc_rec, mb->chroma_dc[c], qp);
    copy_block(rec, s, c ? pred_v : pred_u, 8, 8, 8);
    for (int b = 0; b < 4; b++) {
      if (!dc_rec[b] && mb->cbp_chroma < 2) continue; /* nothing to add */
      int d[16];
      dequant4x4(d, mb->chroma_ac[c][b], qp);
      d[0] = dc_rec[b];
      idct4x4_add(rec + (b >> 1) * 4 * s + (b & 1) * 4, s, d);
    }
  }
}

void intra_chroma_encode(encoder_t *e, mb_t *mb) {
  const int s = e->stride_c, cs = e->coded_w / 2;
  int has_top = mb->y > 0, has_left = mb->x > 0, best = 0x7fffffff;
  const u8 *rec_u = e->pic[e->cur].u + mb->y * 8 * s + mb->x * 8, *rec_v = e->pic[e->cur].v + mb->y * 8 * s + mb->x * 8;
  const u8 *su = e->src_u + mb->y * 8 * cs + mb->x * 8, *sv = e->src_v + mb->y * 8 * cs + mb->x * 8;
  u8 pu[64], pv[64], best_u[64], best_v[64];
  for (int mode = 0; mode < 4; mode++) {
    if ((mode == 1 && !has_left) || (mode == 2 && !has_top) || (mode == 3 && !(has_top && has_left))) continue;
    intra_chroma_predict(pu, mode, rec_u, s, has_top, has_left);
    intra_chroma_predict(pv, mode, rec_v, s, has_top, has_left);
    int c = satd8x8(su, cs, pu, 8) + satd8x8(sv, cs, pv, 8) + e->lambda * (mode == 0 ? 1 : 3);
    if (c < best) {
      best = c;
      mb->chroma_mode = mode;
      memcpy(best_u, pu, 64);
      memcpy(best_v, pv, 64);
    }
  }
  chroma_residual_encode(e, mb, best_u, best_v, 1);
}

/* Picks Intra_16x16 (already evaluated: i16_mode, i16_cost) or Intra_4x4 by SATD cost plus a rough
 * allowance for the header bits each needs, codes the luma, then the chroma. */
void intra_mb_encode(encoder_t *e, mb_t *mb, int i16_mode, int i16_cost) {
  int cost16 = i16_cost + e->lambda * 6;
  int cost4 = intra4x4_encode(e, mb) + e->lambda * 8; /* the per-block mode bits are already in the sum */
  if (cost16 <= cost4) {
    mb->type = MB_I16;
    mb->i16_mode = i16_mode;
    intra16x16_encode(e, mb); /* overwrites the Intra_4x4 reconstruction */
  } else {
    mb->type = MB_I4x4;
  }
  intra_chroma_encode(e, mb);
}
