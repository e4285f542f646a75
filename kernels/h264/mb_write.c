/*
 * macroblock_layer() syntax for CAVLC (H.264 clauses 7.3.5, 7.3.5.1, 7.3.5.3) and the
 * bookkeeping later macroblocks need (TotalCoeff for nC, modes, MVs).
 */
#include "encoder.h"

/* Table 9-4 (chroma_format_idc 1) inverted: the codeNum of me(v) for each coded_block_pattern. */
static const u8 code_of_cbp_intra[48] = {3, 29, 30, 17, 31, 18, 37, 8, 32, 38, 19, 9, 20, 10, 11, 2, 16, 33, 34, 21, 35, 22, 39, 4, 36, 40, 23, 5, 24, 6, 7, 1, 41, 42, 43, 25, 44, 26, 46, 12, 45, 47, 27, 13, 28, 14, 15, 0};
static const u8 code_of_cbp_inter[48] = {0, 2, 3, 7, 4, 8, 17, 13, 5, 18, 9, 14, 10, 15, 16, 11, 1, 32, 33, 36, 34, 37, 44, 40, 35, 45, 38, 41, 39, 42, 43, 19, 6, 24, 25, 20, 26, 21, 46, 28, 27, 47, 22, 29, 23, 30, 31, 12};

/* nC (clause 9.2.1): the average of the left (A) and upper (B) blocks' TotalCoeff when both
 * exist, the one that exists, or 0; -1 stands for a missing block. A table of (A + 1, B + 1), so
 * that no branch depends on the counts. */
static u8 nc_table[18][18];

void mb_write_init(void) {
  static int ready; /* the same for every encoder: filled once (h264_create calls this) */
  if (ready) return;
  for (int na = -1; na <= 16; na++)
    for (int nb = -1; nb <= 16; nb++)
      nc_table[na + 1][nb + 1] = (u8)(na >= 0 && nb >= 0 ? (na + nb + 1) >> 1 : na >= 0 ? na : nb >= 0 ? nb : 0);
  ready = 1;
}

/* The macroblock's TotalCoeffs with their left and upper neighbours' (x264's non_zero_count cache):
 * luma at [1 + by][1 + bx] of a 5x5 array, chroma at [1 + by][1 + bx] of a 3x3 per component, -1
 * where the neighbour macroblock is outside the picture. Built once per coded macroblock, so each
 * block's nC is two loads and a table lookup instead of branches on its position. */
typedef struct {
  i8 luma[5][5];
  i8 chroma[2][3][3];
} nc_cache_t;

static void nc_cache_fill(const encoder_t *e, const mb_t *mb, nc_cache_t *c) {
  const int idx = mb->y * e->mb_w + mb->x;
  const mb_info_t *left = mb->x > 0 ? &e->mbs[idx - 1] : NULL, *up = mb->y > 0 ? &e->mbs[idx - e->mb_w] : NULL;
  for (int k = 0; k < 4; k++) {
    c->luma[0][1 + k] = up ? (i8)up->nz[12 + k] : -1;
    c->luma[1 + k][0] = left ? (i8)left->nz[4 * k + 3] : -1;
    memcpy(&c->luma[1 + k][1], &mb->nz[4 * k], 4);
  }
  for (int p = 0; p < 2; p++)
    for (int k = 0; k < 2; k++) {
      c->chroma[p][0][1 + k] = up ? (i8)up->nz_c[p][2 + k] : -1;
      c->chroma[p][1 + k][0] = left ? (i8)left->nz_c[p][2 * k + 1] : -1;
      c->chroma[p][1 + k][1] = (i8)mb->nz_c[p][2 * k];
      c->chroma[p][1 + k][2] = (i8)mb->nz_c[p][2 * k + 1];
    }
}

static inline int nc_luma(const nc_cache_t *c, int bx, int by) { return nc_table[c->luma[1 + by][bx] + 1][c->luma[by][1 + bx] + 1]; }
static inline int nc_chroma(const nc_cache_t *c, int p, int bx, int by) {
  return nc_table[c->chroma[p][1 + by][bx] + 1][c->chroma[p][by][1 + bx] + 1];
}

static void write_residual(encoder_t *e, bitwriter_t *bw, mb_t *mb) {
  int is_i16 = mb->type == MB_I16;
  nc_cache_t nc_cache;
  nc_cache_fill(e, mb, &nc_cache);
  if (is_i16) {
    cavlc_block4x4(bw, mb->luma_dc, 0, nc_luma(&nc_cache, 0, 0));
  }
  for (int b8 = 0; b8 < 4; b8++) {
    if (!(mb->cbp_luma & (1 << b8))) continue;
    for (int b4 = 0; b4 < 4; b4++) {
      int bx = (b8 & 1) * 2 + (b4 & 1), by = (b8 >> 1) * 2 + (b4 >> 1);
      int nc = nc_luma(&nc_cache, bx, by);
      if (mb->nz[by * 4 + bx]) cavlc_block4x4(bw, mb->luma[by * 4 + bx], is_i16 ? 1 : 0, nc);
      else cavlc_empty(bw, nc); /* nz holds the block's TotalCoeff: no need to scan its levels */
    }
  }
  if (mb->cbp_chroma)
    for (int c = 0; c < 2; c++) cavlc_block(bw, mb->chroma_dc[c], 4, -1);
  if (mb->cbp_chroma == 2)
    for (int c = 0; c < 2; c++)
      for (int b = 0; b < 4; b++) {
        int nc = nc_chroma(&nc_cache, c, b & 1, b >> 1);
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
  /* whole arrays at once rather than byte loops (this ran for every macroblock) */
  if (mb->type == MB_I4x4) memcpy(m->i4_mode, mb->i4_mode, sizeof(m->i4_mode));
  else memset(m->i4_mode, 2, sizeof(m->i4_mode));
  if (mb->type == MB_PSKIP) {
    memset(m->nz, 0, sizeof(m->nz));
    memset(m->nz_c, 0, sizeof(m->nz_c));
    m->coded = 0;
  } else {
    memcpy(m->nz, mb->nz, sizeof(m->nz));
    memcpy(m->nz_c, mb->nz_c, sizeof(m->nz_c));
    u64 lo, hi; /* coded: the OR of the sixteen counts, folded from two words */
    memcpy(&lo, mb->nz, 8);
    memcpy(&hi, mb->nz + 8, 8);
    u64 x = lo | hi;
    x |= x >> 32;
    x |= x >> 16;
    x |= x >> 8;
    m->coded = (u8)x;
  }
  m->mv[0] = (i16)(inter ? mb->mv[0] : 0);
  m->mv[1] = (i16)(inter ? mb->mv[1] : 0);
}
