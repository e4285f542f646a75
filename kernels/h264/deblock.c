/*
 * In-loop deblocking filter (H.264 clause 8.7), applied to the whole reconstructed picture after
 * its last macroblock, in macroblock order: for each macroblock the vertical luma edges left to
 * right, then the horizontal ones top to bottom, and the same for each chroma plane. The result is
 * the reference for the next picture, so it must match the decoder exactly.
 */
#include "encoder.h"

/* Table 8-16: alpha' and beta' by indexA / indexB. */
static const u8 alpha_table[52] = {0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,   0,   0,   0,   0,   4,   4,
                                   5,  6,  7,  8,  9,  10, 12, 13, 15, 17, 20, 22,  25,  28,  32,  36,  40,  45,
                                   50, 56, 63, 71, 80, 90, 101, 113, 127, 144, 162, 182, 203, 226, 255, 255};
static const u8 beta_table[52] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  2,  2,  2,  3,  3,  3,  3,  4,  4,  4,
                                  6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18};
/* Table 8-17: tC0 by indexA for bS = 1, 2, 3. */
static const u8 tc0_table[52][3] = {
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0},  {0, 0, 0},  {0, 0, 0},   {0, 0, 0},    {0, 0, 0},    {0, 0, 0},    {0, 0, 0},
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0},  {0, 0, 0},  {0, 0, 0},   {0, 0, 0},    {0, 0, 0},    {0, 0, 0},    {0, 0, 1},
    {0, 0, 1}, {0, 0, 1}, {0, 0, 1},  {0, 1, 1},  {0, 1, 1},   {1, 1, 1},    {1, 1, 1},    {1, 1, 1},    {1, 1, 1},
    {1, 1, 2}, {1, 1, 2}, {1, 1, 2},  {1, 1, 2},  {1, 2, 3},   {1, 2, 3},    {2, 2, 3},    {2, 2, 4},    {2, 3, 4},
    {2, 3, 4}, {3, 3, 5}, {3, 4, 6},  {3, 4, 6},  {4, 5, 7},   {4, 5, 8},    {4, 6, 9},    {5, 7, 10},   {6, 8, 11},
    {6, 8, 13}, {7, 10, 14}, {8, 11, 16}, {9, 12, 18}, {10, 13, 20}, {11, 15, 23}, {13, 17, 25}};

typedef struct {
  int alpha, beta;
  const u8 *tc0; /* tC0 for bS 1..3 */
} edge_params_t;

static inline edge_params_t edge_params(int qp_p, int qp_q) {
  int index = clip3(0, 51, (qp_p + qp_q + 1) >> 1); /* qPav; the slice's filter offsets are 0 */
  edge_params_t ep = {alpha_table[index], beta_table[index], tc0_table[index]};
  return ep;
}

/* bS < 4 on one line (clause 8.7.2.3); q points at q0 and `step` crosses the edge. */
static inline void filter_normal(u8 *q, int step, int bs, const edge_params_t *ep, int chroma) {
  int p0 = q[-step], p1 = q[-2 * step], q0 = q[0], q1 = q[step];
  if (iabs(p0 - q0) >= ep->alpha || iabs(p1 - p0) >= ep->beta || iabs(q1 - q0) >= ep->beta) return;
  int tc0 = ep->tc0[bs - 1];
  if (chroma) {
    int delta = clip3(-(tc0 + 1), tc0 + 1, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
    q[-step] = clip_pixel(p0 + delta);
    q[0] = clip_pixel(q0 - delta);
    return;
  }
  int p2 = q[-3 * step], q2 = q[2 * step];
  int ap = iabs(p2 - p0) < ep->beta, aq = iabs(q2 - q0) < ep->beta;
  int tc = tc0 + ap + aq;
  int delta = clip3(-tc, tc, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
  q[-step] = clip_pixel(p0 + delta);
  q[0] = clip_pixel(q0 - delta);
  if (ap) q[-2 * step] = (u8)(p1 + clip3(-tc0, tc0, (p2 + ((p0 + q0 + 1) >> 1) - (p1 << 1)) >> 1));
  if (aq) q[step] = (u8)(q1 + clip3(-tc0, tc0, (q2 + ((p0 + q0 + 1) >> 1) - (q1 << 1)) >> 1));
}

/* bS == 4 on one line (clause 8.7.2.4). */
static inline void filter_strong(u8 *q, int step, const edge_params_t *ep, int chroma) {
  int p0 = q[-step], p1 = q[-2 * step], q0 = q[0], q1 = q[step];
  if (iabs(p0 - q0) >= ep->alpha || iabs(p1 - p0) >= ep->beta || iabs(q1 - q0) >= ep->beta) return;
  if (chroma) {
    q[-step] = (u8)((2 * p1 + p0 + q1 + 2) >> 2);
    q[0] = (u8)((2 * q1 + q0 + p1 + 2) >> 2);
    return;
  }
  int p2 = q[-3 * step], q2 = q[2 * step];
  int small_gap = iabs(p0 - q0) < ((ep->alpha >> 2) + 2);
  if (iabs(p2 - p0) < ep->beta && small_gap) {
    int p3 = q[-4 * step];
    q[-step] = (u8)((p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3);
    q[-2 * step] = (u8)((p2 + p1 + p0 + q0 + 2) >> 2);
    q[-3 * step] = (u8)((2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3);
  } else {
    q[-step] = (u8)((2 * p1 + p0 + q1 + 2) >> 2);
  }
  if (iabs(q2 - q0) < ep->beta && small_gap) {
    int q3 = q[3 * step];
    q[0] = (u8)((p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3);
    q[step] = (u8)((p0 + q0 + q1 + q2 + 2) >> 2);
    q[2 * step] = (u8)((2 * q3 + 3 * q2 + q1 + q0 + p0 + 4) >> 3);
  } else {
    q[0] = (u8)((2 * q1 + q0 + p1 + 2) >> 2);
  }
}

/* Filters `lines` lines along an edge: q is q0 of the first line, `along` steps to the next line,
 * bs[line * 4 / lines] gives each line's strength (4 luma lines or 2 chroma lines per segment). */
static void filter_edge(u8 *q, int step, int along, const u8 bs[4], const edge_params_t *ep, int lines, int chroma) {
  int per_segment = lines / 4;
  for (int seg = 0; seg < 4; seg++) {
    int strength = bs[seg];
    if (!strength) continue;
    u8 *line = q + seg * per_segment * along;
    for (int k = 0; k < per_segment; k++, line += along) {
      if (strength == 4) filter_strong(line, step, ep, chroma);
      else filter_normal(line, step, strength, ep, chroma);
    }
  }
}

static inline int is_intra(int type) { return type == MB_I4x4 || type == MB_I16; }

/* Boundary strength (clause 8.7.2.1) between 4x4 blocks p and q (raster indices in their MBs),
 * for inter macroblocks; intra ones are handled by the caller. */
static inline int inter_strength(const mb_info_t *mp, int bp, const mb_info_t *mq, int bq) {
  if (mp->nz[bp] || mq->nz[bq]) return 2;
  return iabs(mp->mv[0] - mq->mv[0]) >= 4 || iabs(mp->mv[1] - mq->mv[1]) >= 4;
}

/* bS for the four edges of one direction (dir 0: vertical edges, 1: horizontal), four segments each.
 * Returns whether any is non-zero. mn is the left/upper neighbour or NULL at the picture edge. */
static int strengths(const mb_info_t *mq, const mb_info_t *mn, int dir, u8 bs[4][4]) {
  int any = 0;
  for (int edge = 0; edge < 4; edge++) {
    const mb_info_t *mp = edge ? mq : mn;
    for (int seg = 0; seg < 4; seg++) {
      int v;
      if (!mp) v = 0;
      else if (is_intra(mq->type) || is_intra(mp->type)) v = edge ? 3 : 4;
      else {
        int bq = dir == 0 ? seg * 4 + edge : edge * 4 + seg;
        int bp = edge ? (dir == 0 ? bq - 1 : bq - 4) : (dir == 0 ? seg * 4 + 3 : 12 + seg);
        v = inter_strength(mp, bp, mq, bq);
      }
      bs[edge][seg] = (u8)v;
      any |= v;
    }
  }
  return any;
}

/* Filters the macroblock at (mbx, mby): for luma and each chroma plane, the vertical edges
 * (dir 0) left to right and then the horizontal ones (dir 1) top to bottom. */
static void deblock_mb(encoder_t *e, picture_t *p, int mbx, int mby) {
  const mb_info_t *mq = &e->mbs[mby * e->mb_w + mbx];
  const int sy = e->stride_y, sc = e->stride_c;
  u8 *luma = p->y + mby * 16 * sy + mbx * 16;
  u8 *chroma[2] = {p->u + mby * 8 * sc + mbx * 8, p->v + mby * 8 * sc + mbx * 8};
  for (int dir = 0; dir < 2; dir++) {
    const mb_info_t *mn = dir == 0 ? (mbx > 0 ? mq - 1 : NULL) : (mby > 0 ? mq - e->mb_w : NULL);
    u8 bs[4][4];
    if (!strengths(mq, mn, dir, bs)) continue;
    /* step crosses the edge, along moves to the next line, edge_step to the next edge */
    int step_y = dir == 0 ? 1 : sy, along_y = dir == 0 ? sy : 1;
    int step_c = dir == 0 ? 1 : sc, along_c = dir == 0 ? sc : 1;
    edge_params_t inner = edge_params(mq->qp, mq->qp);
    for (int edge = 0; edge < 4; edge++) {
      edge_params_t ep = edge == 0 && mn ? edge_params(mn->qp, mq->qp) : inner;
      filter_edge(luma + edge * 4 * step_y, step_y, along_y, bs[edge], &ep, 16, 0);
    }
    /* Chroma (4:2:0) edges 0 and 4 reuse the strengths of luma edges 0 and 8, two chroma lines per
     * luma segment. QPs map through Table 8-15 per macroblock before averaging. */
    int qpc_q = chroma_qp_table[mq->qp];
    edge_params_t inner_c = edge_params(qpc_q, qpc_q);
    for (int ce = 0; ce < 2; ce++) {
      edge_params_t ep = ce == 0 && mn ? edge_params(chroma_qp_table[mn->qp], qpc_q) : inner_c;
      for (int c = 0; c < 2; c++) filter_edge(chroma[c] + ce * 4 * step_c, step_c, along_c, bs[ce * 2], &ep, 8, 1);
    }
  }
}

void deblock_picture(encoder_t *e, picture_t *p) {
  for (int mby = 0; mby < e->mb_h; mby++)
    for (int mbx = 0; mbx < e->mb_w; mbx++) deblock_mb(e, p, mbx, mby);
}
