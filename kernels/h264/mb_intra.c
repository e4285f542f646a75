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

/* 4x4 Hadamard of a source block in satd4x4_ref's arrangement: out[v * 4 + u], u the horizontal
 * frequency (row pass first), v the vertical one. */
static void hadamard4x4_block(int out[16], const u8 *src, int stride) {
  int x[16];
  for (int i = 0; i < 4; i++, src += stride)
    for (int j = 0; j < 4; j++) x[i * 4 + j] = src[j];
  hadamard4x4(out, x);
}

static inline void hadamard4(int out[4], const int in[4]) {
  int s01 = in[0] + in[1], d01 = in[0] - in[1], s23 = in[2] + in[3], d23 = in[2] - in[3];
  out[0] = s01 + s23;
  out[1] = s01 - s23;
  out[2] = d01 - d23;
  out[3] = d01 + d23;
}

/*
 * SATD of the Vertical, Horizontal and DC predictions without forming them: the Hadamard transform
 * is linear, and those predictions transform to a single row (V), column (H) or coefficient (DC), so
 * SATD = (sum |H(src)| corrected on that row / column / coefficient) / 2, exactly satd4x4's value.
 * cost[mode] is left untouched for unavailable modes.
 */
static void satd_v_h_dc(const int hs[16], const intra4_edge_t *ed, int dc, int cost[3]) {
  int total = 0;
  for (int k = 0; k < 16; k++) total += iabs(hs[k]);
  if (ed->has_top) {
    int ht[4], c = total;
    hadamard4(ht, ed->top);
    for (int u = 0; u < 4; u++) c += iabs(hs[u] - 4 * ht[u]) - iabs(hs[u]);
    cost[0] = c >> 1;
  }
  if (ed->has_left) {
    int hl[4], c = total;
    hadamard4(hl, ed->left);
    for (int v = 0; v < 4; v++) c += iabs(hs[v * 4] - 4 * hl[v]) - iabs(hs[v * 4]);
    cost[1] = c >> 1;
  }
  cost[2] = (total - iabs(hs[0]) + iabs(hs[0] - 16 * dc)) >> 1;
}

/* The same from the source block (for h264_selftest). */
void intra4x4_satd_vhd(const u8 *src, int stride, const intra4_edge_t *ed, int cost[3]) {
  int hs[16];
  hadamard4x4_block(hs, src, stride);
  satd_v_h_dc(hs, ed, intra4x4_dc(ed), cost);
}

/* Directional modes worth trying after the best of V, H and DC (the ones pointing near it). */
static const i8 i4_followers[3][4] = {{7, 5, 3, -1}, {8, 6, 4, -1}, {4, 3, -1, -1}};

/* Chooses and codes all sixteen 4x4 blocks in decoding order, reconstructing each before the next
 * one predicts from it. Returns the decision cost, or INT_MAX as soon as it exceeds `bail` (the
 * caller then codes the macroblock another way, overwriting the partial reconstruction). */
int intra4x4_encode(encoder_t *e, mb_t *mb, int bail) {
  const int s = e->stride_y, cw = e->coded_w, mode_bits = e->lambda * 4, predicted_bits = e->lambda;
  int total = 0;
  mb->cbp_luma = 0;
  for (int blk = 0; blk < 16; blk++) {
    int bx = ((blk >> 2) & 1) * 2 + (blk & 1), by = (blk >> 3) * 2 + ((blk >> 1) & 1), r = by * 4 + bx;
    const u8 *src = src_y(e, mb) + by * 4 * cw + bx * 4;
    u8 *rec = rec_y(e, mb) + by * 4 * s + bx * 4;
    intra4_edge_t ed;
    gather_edge4(e, mb, bx, by, &ed);
    int predicted = i4_predicted_mode(e, mb, bx, by);
    int hs[16], vhd[3] = {INT_MAX, INT_MAX, INT_MAX}, dc = intra4x4_dc(&ed);
    hadamard4x4_block(hs, src, cw);
    satd_v_h_dc(hs, &ed, dc, vhd);
    int best_mode = 2, best_cost = INT_MAX, favoured = 2;
    for (int mode = 0; mode < 3; mode++) {
      if (vhd[mode] == INT_MAX) continue;
      int cost = vhd[mode] + (mode == predicted ? predicted_bits : mode_bits);
      if (cost < best_cost) best_cost = cost, best_mode = mode;
      if (vhd[mode] < vhd[favoured]) favoured = mode;
    }
    /* then the directional modes near the favourite, and the predicted mode (the cheapest to signal) */
    u8 pred[16], best_pred[16] = {0};
    int tries[5], n = 0, predicted_tried = predicted <= 2;
    for (const i8 *f = i4_followers[favoured]; *f >= 0 && f < i4_followers[favoured] + 4; f++) {
      tries[n++] = *f;
      predicted_tried |= *f == predicted;
    }
    if (!predicted_tried) tries[n++] = predicted;
    for (int k = 0; k < n; k++) {
      int mode = tries[k];
      if (!intra4x4_mode_available(mode, &ed)) continue;
      intra4x4_predict(pred, mode, &ed);
      int cost = satd4x4(src, cw, pred, 4) + (mode == predicted ? predicted_bits : mode_bits);
      if (cost < best_cost) {
        best_cost = cost, best_mode = mode;
        memcpy(best_pred, pred, 16);
      }
    }
    mb->i4_mode[r] = (i8)best_mode;
    total += best_cost;
    if (total > bail) return INT_MAX;
    /* Code the block against its prediction, held 8 wide so the pair kernels can read it. */
    u8 block[32];
    if (best_mode > 2) memcpy(pred, best_pred, 16);
    else if (best_mode == 2) memset(pred, dc, 16);
    else
      for (int k = 0; k < 16; k++) pred[k] = (u8)(best_mode == 0 ? ed.top[k & 3] : ed.left[k >> 2]);
    for (int y = 0; y < 4; y++) memcpy(block + 8 * y, pred + 4 * y, 4);
    i16 unused[16];
    static const i16 zero[16];
    fdct4x4_pair(mb->luma[r], unused, src, cw, block, 8);
    int nz = quant4x4(mb->luma[r], e->qp, 1, 0);
    mb->nz[r] = (u8)nz;
    copy_block(rec, s, pred, 4, 4, 4);
    if (nz) {
      recon4x4_pair(rec, s, mb->luma[r], zero, e->qp, NULL); /* the right half adds nothing */
      mb->cbp_luma |= 1 << ((by >> 1) * 2 + (bx >> 1));
    }
  }
  return total;
}

/* Picks the Intra_16x16 mode with the lowest SATD and returns it, its SATD in *cost. fast (for P
 * pictures, where intra rarely wins): ranks the modes by SAD, which needs no prediction for V, H
 * and DC, and measures the SATD of the winner only; fast 2 (the fast preset) returns that SAD. */
int intra16x16_choose(encoder_t *e, mb_t *mb, int *cost, int fast) {
  const u8 *rec = rec_y(e, mb), *src = src_y(e, mb);
  const int s = e->stride_y, cw = e->coded_w;
  int has_top = mb->y > 0, has_left = mb->x > 0, best_mode = 2, best = INT_MAX;
  u8 pred[256];
  for (int mode = 0; mode < 4; mode++) {
    if ((mode == 0 && !has_top) || (mode == 1 && !has_left) || (mode == 3 && !(has_top && has_left))) continue;
    int c;
    if (!fast) {
      intra16x16_predict(pred, mode, rec, s, has_top, has_left);
      c = satd16x16(src, cw, pred, 16);
    } else if (mode == 0) {
      c = sad16x16_vertical(src, cw, rec - s);
    } else if (mode == 1) {
      c = sad16x16_horizontal(src, cw, rec - 1, s);
    } else if (mode == 2) {
      c = sad16x16_flat(src, cw, intra16x16_dc(rec, s, has_top, has_left));
    } else {
      intra16x16_predict(pred, mode, rec, s, has_top, has_left);
      c = sad16x16(src, cw, pred, 16);
    }
    if (c < best) best = c, best_mode = mode;
  }
  if (fast == 1) {
    if (best_mode != 3) intra16x16_predict(pred, best_mode, rec, s, has_top, has_left); /* plane is still in pred */
    best = satd16x16(src, cw, pred, 16);
  }
  *cost = best;
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
    int counts = fdct_quant_pair(mb->luma[r], mb->luma[r + 1], src_y(e, mb) + by * 4 * cw + bx * 4, cw, pred + by * 64 + bx * 4, 16, qp, 1, dc + r);
    mb->nz[r] = (u8)(counts & 255);
    mb->nz[r + 1] = (u8)(counts >> 8);
    any_ac |= counts;
  }
  /* The DC block is coded column-major like every 4x4 block (transform.c). The Hadamard transforms
   * commute with transposition (the same matrix on both sides), so transposing the DCs going in and
   * the scaled DCs coming out is all it takes. */
  int dc_cm[16], dc_rec_cm[16], dc_rec[16];
  for (int k = 0; k < 16; k++) dc_cm[(k & 3) * 4 + (k >> 2)] = dc[k];
  luma_dc_forward(dc_cm);
  quant_dc(dc_cm, 16, qp, 1, mb->luma_dc);
  mb->cbp_luma = any_ac ? 15 : 0;

  luma_dc_dequant(dc_rec_cm, mb->luma_dc, qp);
  for (int k = 0; k < 16; k++) dc_rec[k] = dc_rec_cm[(k & 3) * 4 + (k >> 2)];
  copy_block(rec, s, pred, 16, 16, 16);
  for (int r = 0; r < 16; r += 2) recon4x4_pair(rec + (r >> 2) * 4 * s + (r & 3) * 4, s, mb->luma[r], mb->luma[r + 1], qp, dc_rec + r);
}

/* Chroma residual for intra and inter macroblocks: per component a 2x2 DC transform plus four AC
 * blocks; cbp chroma says whether DC only (1) or DC and AC (2) are coded. */
/* pred_u / pred_v: the predictions, rows pred_stride apart; they may already be the reconstruction. */
void chroma_residual_encode(encoder_t *e, mb_t *mb, const u8 *pred_u, const u8 *pred_v, int pred_stride, int intra) {
  const int cs = e->coded_w / 2, s = e->stride_c, qp = e->qp_c;
  int any_dc = 0, any_ac = 0;
  for (int c = 0; c < 2; c++) {
    const u8 *src = (c ? e->src_v : e->src_u) + mb->y * 8 * cs + mb->x * 8;
    const u8 *pred = c ? pred_v : pred_u;
    if (!intra && sad8x8(src, cs, pred, pred_stride) < e->zero_sad_chroma) { /* nothing survives quantisation */
      memset(mb->chroma_ac[c], 0, sizeof(mb->chroma_ac[c]));
      memset(mb->chroma_dc[c], 0, sizeof(mb->chroma_dc[c]));
      memset(mb->nz_c[c], 0, sizeof(mb->nz_c[c]));
      continue;
    }
    int dc[4];
    for (int b = 0; b < 4; b += 2) {
      int counts = fdct_quant_pair(mb->chroma_ac[c][b], mb->chroma_ac[c][b + 1], src + b * 2 * cs, cs, pred + b * 2 * pred_stride, pred_stride, qp, intra, dc + b);
      mb->nz_c[c][b] = (u8)(counts & 255);
      mb->nz_c[c][b + 1] = (u8)(counts >> 8);
      any_ac |= counts;
    }
    chroma_dc_forward(dc);
    any_dc |= quant_dc(dc, 4, qp, intra, mb->chroma_dc[c]);
  }
  mb->cbp_chroma = any_ac ? 2 : any_dc ? 1 : 0;
  if (mb->cbp_chroma < 2) {
    memset(mb->chroma_ac, 0, sizeof(mb->chroma_ac));
    memset(mb->nz_c, 0, sizeof(mb->nz_c));
  }

  for (int c = 0; c < 2; c++) {
    u8 *rec = (c ? e->pic[e->cur].v : e->pic[e->cur].u) + mb->y * 8 * s + mb->x * 8;
    int dc_rec[4];
    chroma_dc_dequant(dc_rec, mb->chroma_dc[c], qp);
    const u8 *pred = c ? pred_v : pred_u;
    if (pred != rec) copy_block(rec, s, pred, pred_stride, 8, 8);
    for (int b = 0; b < 4; b += 2)
      if (dc_rec[b] | dc_rec[b + 1] || mb->cbp_chroma == 2) recon4x4_pair(rec + b * 2 * s, s, mb->chroma_ac[c][b], mb->chroma_ac[c][b + 1], qp, dc_rec + b);
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
    int c = e->preset == PRESET_FAST ? sad8x8(su, cs, pu, 8) + sad8x8(sv, cs, pv, 8) : satd8x8(su, cs, pu, 8) + satd8x8(sv, cs, pv, 8);
    c += e->lambda * (mode == 0 ? 1 : 3);
    if (c < best) {
      best = c;
      mb->chroma_mode = mode;
      memcpy(best_u, pu, 64);
      memcpy(best_v, pv, 64);
    }
  }
  chroma_residual_encode(e, mb, best_u, best_v, 8, 1);
}

/* Picks Intra_16x16 (already evaluated: i16_mode, i16_cost) or Intra_4x4 by SATD cost plus a rough
 * allowance for the header bits each needs, codes the luma, then the chroma. */
void intra_mb_encode(encoder_t *e, mb_t *mb, int i16_mode, int i16_cost) {
  int cost16 = i16_cost + e->lambda * 6;
  /* the per-block mode bits are already in the Intra_4x4 sum; it stops once it cannot win */
  int cost4 = intra4x4_encode(e, mb, cost16 - e->lambda * 8);
  if (cost4 != INT_MAX) cost4 += e->lambda * 8;
  if (cost16 <= cost4) {
    mb->type = MB_I16;
    mb->i16_mode = i16_mode;
    intra16x16_encode(e, mb); /* overwrites the Intra_4x4 reconstruction */
  } else {
    mb->type = MB_I4x4;
  }
  intra_chroma_encode(e, mb);
}
