/*
 * macroblock_layer() syntax for CAVLC (H.264 clauses 7.3.5, 7.3.5.1, 7.3.5.3) and the
 * bookkeeping later macroblocks need (TotalCoeff for nC, modes, MVs).
 */
#include "encoder.h"

/* Table 9-4 (chroma_format_idc 1) inverted: the codeNum of me(v) for each coded_block_pattern. */
static const u8 code_of_cbp_intra[48] = {3, 29, 30, 17, 31, 18, 37, 8, 32, 38, 19, 9, 20, 10, 11, 2, 16, 33, 34, 21, 35, 22, 39, 4, 36, 40, 23, 5, 24, 6, 7, 1, 41, 42, 43, 25, 44, 26, 46, 12, 45, 47, 27, 13, 28, 14, 15, 0};
static const u8 code_of_cbp_inter[48] = {0, 2, 3, 7, 4, 8, 17, 13, 5, 18, 9, 14, 10, 15, 16, 11, 1, 32, 33, 36, 34, 37, 44, 40, 35, 45, 38, 41, 39, 42, 43, 19, 6, 24, 25, 20, 26, 21, 46, 28, 27, 47, 22, 29, 23, 30, 31, 12};

/* nC (clause 9.2.1): average of the left (A) and upper (B) blocks' TotalCoeff when both exist. */
static int nc_from(int na, int nb) {
  if (na >= 0 && nb >= 0) return (na + nb + 1) >> 1;
  if (na >= 0) return na;
  if (nb >= 0) return nb;
  return 0;
}

static int nc_luma(const encoder_t *e, const mb_t *mb, int bx, int by) {
  int idx = mb->y * e->mb_w + mb->x, na = -1, nb = -1;
  if (bx > 0) na = mb->nz[by * 4 + bx - 1];
  else if (mb->x > 0) na = e->mbs[idx - 1].nz[by * 4 + 3];
  if (by > 0) nb = mb->nz[(by - 1) * 4 + bx];
  else if (mb->y > 0) nb = e->mbs[idx - e->mb_w].nz[12 + bx];
  return nc_from(na, nb);
}

static int nc_chroma(const encoder_t *e, const mb_t *mb, int c, int bx, int by) {
  int idx = mb->y * e->mb_w + mb->x, na = -1, nb = -1;
  if (bx > 0) na = mb->nz_c[c][by * 2];
  else if (mb->x > 0) na = e->mbs[idx - 1].nz_c[c][by * 2 + 1];
  if (by > 0) nb = mb->nz_c[c][bx];
  else if (mb->y > 0) nb = e->mbs[idx - e->mb_w].nz_c[c][2 + bx];
  return nc_from(na, nb);
}

static void write_residual(encoder_t *e, bitwriter_t *bw, mb_t *mb) {
  int is_i16 = mb->type == MB_I16;
  if (is_i16) {
    cavlc_block4x4(bw, mb->luma_dc, 0, nc_luma(e, mb, 0, 0));
  }
  for (int b8 = 0; b8 < 4; b8++) {
    if (!(mb->cbp_luma & (1 << b8))) continue;
    for (int b4 = 0; b4 < 4; b4++) {
      int bx = (b8 & 1) * 2 + (b4 & 1), by = (b8 >> 1) * 2 + (b4 >> 1);
      int nc = nc_luma(e, mb, bx, by);
      if (mb->nz[by * 4 + bx]) cavlc_block4x4(bw, mb->luma[by * 4 + bx], is_i16 ? 1 : 0, nc);
      else cavlc_empty(bw, nc); /* nz holds the block's TotalCoeff: no need to scan its levels */
    }
  }
  if (mb->cbp_chroma)
    for (int c = 0; c < 2; c++) cavlc_block(bw, mb->chroma_dc[c], 4, -1);
  if (mb->cbp_chroma == 2)
    for (int c = 0; c < 2; c++)
      for (int b = 0; b < 4; b++) {
        int nc = nc_chroma(e, mb, c, b & 1, b >> 1);
        if (mb->nz_c[c][b]) cavlc_block4x4(bw, mb->chroma_ac[c][b], 1, nc);
        else cavlc_empty(bw, nc);
      }
}

void mb_write(encoder_t *e, bitwriter_t *bw, mb_t *mb, int p_slice) {
  int intra = mb->type == MB_I4x4 || mb->type == MB_I16;
  int type_offset = p_slice ? 5 : 0; /* intra mb_type values follow the 5 inter ones in P slices */
  if (mb->type == MB_I4x4) {
    bw_ue(bw, (u32)type_offset);
    for (int blk = 0; blk < 16; blk++) {
      int bx = ((blk >> 2) & 1) * 2 + (blk & 1), by = (blk >> 3) * 2 + ((blk >> 1) & 1);
      int predicted = i4_predicted_mode(e, mb, bx, by), mode = mb->i4_mode[by * 4 + bx];
      if (mode == predicted) {
        bw_put(bw, 1, 1); /* prev_intra4x4_pred_mode_flag */
      } else {
        bw_put(bw, 0, 1);
        bw_put(bw, (u32)(mode < predicted ? mode : mode - 1), 3); /* rem_intra4x4_pred_mode */
      }
    }
  } else if (mb->type == MB_I16) {
    bw_ue(bw, (u32)(type_offset + 1 + mb->i16_mode + 4 * mb->cbp_chroma + (mb->cbp_luma ? 12 : 0)));
  } else {
    bw_ue(bw, 0); /* P_L0_16x16; ref_idx_l0 is absent with one active reference */
  }
  if (intra) bw_ue(bw, (u32)mb->chroma_mode);
  if (mb->type == MB_P16) {
    bw_se(bw, mb->mv[0] - mb->mvp[0]);
    bw_se(bw, mb->mv[1] - mb->mvp[1]);
  }
  int cbp = mb->cbp_luma | (mb->cbp_chroma << 4);
  if (mb->type != MB_I16) bw_ue(bw, (u32)(intra ? code_of_cbp_intra : code_of_cbp_inter)[cbp]);
  if (cbp || mb->type == MB_I16) {
    bw_se(bw, 0); /* mb_qp_delta: one QP per picture */
    write_residual(e, bw, mb);
  }
}

void mb_store_info(encoder_t *e, const mb_t *mb) {
  mb_info_t *m = &e->mbs[mb->y * e->mb_w + mb->x];
  int inter = mb->type == MB_P16 || mb->type == MB_PSKIP;
  m->type = (u8)mb->type;
  m->qp = (u8)e->qp;
  m->coded = 0;
  for (int k = 0; k < 16; k++) {
    m->i4_mode[k] = mb->type == MB_I4x4 ? mb->i4_mode[k] : 2;
    m->nz[k] = mb->type == MB_PSKIP ? 0 : mb->nz[k];
    m->coded |= m->nz[k];
  }
  for (int c = 0; c < 2; c++)
    for (int b = 0; b < 4; b++) m->nz_c[c][b] = mb->type == MB_PSKIP ? 0 : mb->nz_c[c][b];
  m->mv[0] = (i16)(inter ? mb->mv[0] : 0);
  m->mv[1] = (i16)(inter ? mb->mv[1] : 0);
}
