/*
 * In-loop deblocking filter (H.264 clause 8.7), applied to the whole reconstructed picture after
 * its last macroblock, in macroblock order: for each macroblock the vertical luma edges left to
 * right, then the horizontal ones top to bottom, and the same for each chroma plane. The result is
 * the reference for the next picture, so it must match the decoder exactly.
 */
#include "encoder.h"
#include "simd.h"

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

#if H264_SIMD
/*
 * The same filters on 16 lines at once. pq[0..7] hold p3 p2 p1 p0 q0 q1 q2 q3 of every line (byte k
 * of each vector = line k); tc0[k] is line k's tC0, or -1 where its bS is 0. strong: bS 4 on every
 * line (edges next to an intra macroblock have bS 4 on all four segments). The arithmetic runs in
 * 16-bit lanes, eight lines per half.
 */
static inline vec absdiff16(vec a, vec b) { return v_abs16(v_sub16(a, b)); }
static inline vec less16(vec a, vec b) { return v_gt16(b, a); }

static void filter_half(vec x[8], vec tc0, vec alpha, vec beta, int strong, int chroma) {
  const vec p3 = x[0], p2 = x[1], p1 = x[2], p0 = x[3], q0 = x[4], q1 = x[5], q2 = x[6], q3 = x[7];
  const vec one = v_splat16(1), two = v_splat16(2), four = v_splat16(4);
  vec on = v_and(v_and(less16(absdiff16(p0, q0), alpha), less16(absdiff16(p1, p0), beta)),
                 v_and(less16(absdiff16(q1, q0), beta), v_gt16(tc0, v_splat16(-1))));
  if (!v_any(on)) return;
  vec ap = less16(absdiff16(p2, p0), beta), aq = less16(absdiff16(q2, q0), beta);
  if (strong) {
    if (chroma) {
      x[3] = v_select(on, v_srl16(v_add16(v_add16(v_shl16(p1, 1), p0), v_add16(q1, two)), 2), p0);
      x[4] = v_select(on, v_srl16(v_add16(v_add16(v_shl16(q1, 1), q0), v_add16(p1, two)), 2), q0);
      return;
    }
    vec small = less16(absdiff16(p0, q0), v_add16(v_sra16(alpha, 2), two));
    vec p0q0 = v_add16(p0, q0);
    vec pa = v_and(on, v_and(ap, small)), qa = v_and(on, v_and(aq, small));
    vec p_weak = v_srl16(v_add16(v_add16(v_shl16(p1, 1), p0), v_add16(q1, two)), 2);
    vec q_weak = v_srl16(v_add16(v_add16(v_shl16(q1, 1), q0), v_add16(p1, two)), 2);
    /* p0' = (p2 + 2p1 + 2p0 + 2q0 + q1 + 4) >> 3, p1' = (p2 + p1 + p0 + q0 + 2) >> 2,
     * p2' = (2p3 + 3p2 + p1 + p0 + q0 + 4) >> 3; mirrored for q */
    vec p_sum = v_add16(v_add16(p2, p1), p0q0), q_sum = v_add16(v_add16(q2, q1), p0q0);
    vec p0s = v_srl16(v_add16(v_add16(p_sum, v_add16(p1, p0q0)), v_add16(q1, four)), 3);
    vec p1s = v_srl16(v_add16(p_sum, two), 2);
    vec p2s = v_srl16(v_add16(v_add16(v_shl16(v_add16(p3, p2), 1), p_sum), four), 3);
    vec q0s = v_srl16(v_add16(v_add16(q_sum, v_add16(q1, p0q0)), v_add16(p1, four)), 3);
    vec q1s = v_srl16(v_add16(q_sum, two), 2);
    vec q2s = v_srl16(v_add16(v_add16(v_shl16(v_add16(q3, q2), 1), q_sum), four), 3);
    x[1] = v_select(pa, p2s, p2);
    x[2] = v_select(pa, p1s, p1);
    x[3] = v_select(pa, p0s, v_select(on, p_weak, p0));
    x[4] = v_select(qa, q0s, v_select(on, q_weak, q0));
    x[5] = v_select(qa, q1s, q1);
    x[6] = v_select(qa, q2s, q2);
    return;
  }
  /* ap and aq are all ones (-1) or zero per lane, so subtracting them adds one */
  vec tc = chroma ? v_add16(tc0, one) : v_sub16(v_sub16(tc0, ap), aq);
  vec delta = v_sra16(v_add16(v_add16(v_shl16(v_sub16(q0, p0), 2), v_sub16(p1, q1)), four), 3);
  delta = v_and(on, v_min16(v_max16(delta, v_sub16(v_zero(), tc)), tc));
  x[3] = v_add16(p0, delta); /* clipped to 0..255 when packed */
  x[4] = v_sub16(q0, delta);
  if (chroma) return;
  vec avg = v_srl16(v_add16(v_add16(p0, q0), one), 1);
  vec neg_tc0 = v_sub16(v_zero(), tc0);
  vec dp = v_min16(v_max16(v_sra16(v_sub16(v_add16(p2, avg), v_shl16(p1, 1)), 1), neg_tc0), tc0);
  vec dq = v_min16(v_max16(v_sra16(v_sub16(v_add16(q2, avg), v_shl16(q1, 1)), 1), neg_tc0), tc0);
  x[2] = v_add16(p1, v_and(v_and(on, ap), dp));
  x[5] = v_add16(q1, v_and(v_and(on, aq), dq));
}

/* Filters 16 lines given as pq[8] (u8 vectors); tc0 per line as described above. */
static void filter_lines16(vec pq[8], const i16 tc0[16], int alpha, int beta, int strong, int chroma) {
  vec lo[8], hi[8];
  for (int k = 0; k < 8; k++) {
    lo[k] = v_lo_u8_u16(pq[k]);
    hi[k] = v_hi_u8_u16(pq[k]);
  }
  vec a = v_splat16(alpha), b = v_splat16(beta);
  filter_half(lo, v_load(tc0), a, b, strong, chroma);
  filter_half(hi, v_load(tc0 + 8), a, b, strong, chroma);
  for (int k = 1; k < 7; k++) pq[k] = v_pack_u8(lo[k], hi[k]);
}

/* 16 rows of 8 bytes -> 8 columns of 16 bytes, and back. */
static void transpose_16x8(const vec rows[16], vec cols[8]) {
  vec a[8], b[8], c[8];
  for (int i = 0; i < 8; i++) a[i] = v_zip_lo8(rows[2 * i], rows[2 * i + 1]);
  for (int i = 0; i < 4; i++) {
    b[2 * i] = v_zip_lo16(a[2 * i], a[2 * i + 1]);
    b[2 * i + 1] = v_zip_hi16(a[2 * i], a[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) { /* rows 0-7 (h = 0) and 8-15 */
    c[4 * h + 0] = v_zip_lo32(b[4 * h], b[4 * h + 2]);     /* columns 0, 1 */
    c[4 * h + 1] = v_zip_hi32(b[4 * h], b[4 * h + 2]);     /* columns 2, 3 */
    c[4 * h + 2] = v_zip_lo32(b[4 * h + 1], b[4 * h + 3]); /* columns 4, 5 */
    c[4 * h + 3] = v_zip_hi32(b[4 * h + 1], b[4 * h + 3]); /* columns 6, 7 */
  }
  for (int k = 0; k < 4; k++) {
    cols[2 * k] = v_zip_lo64(c[k], c[4 + k]);
    cols[2 * k + 1] = v_zip_hi64(c[k], c[4 + k]);
  }
}

/* rows2[i] receives rows 2i (low 8 bytes) and 2i + 1 (high 8 bytes). */
static void transpose_8x16(const vec cols[8], vec rows2[8]) {
  vec u[8], w[8];
  for (int k = 0; k < 4; k++) {
    u[2 * k] = v_zip_lo8(cols[2 * k], cols[2 * k + 1]);     /* rows 0-7: (c2k, c2k+1) pairs */
    u[2 * k + 1] = v_zip_hi8(cols[2 * k], cols[2 * k + 1]); /* rows 8-15 */
  }
  for (int h = 0; h < 2; h++) {
    w[4 * h + 0] = v_zip_lo16(u[h], u[2 + h]);     /* rows 0-3 (+8h): columns 0-3 */
    w[4 * h + 1] = v_zip_hi16(u[h], u[2 + h]);     /* rows 4-7 */
    w[4 * h + 2] = v_zip_lo16(u[4 + h], u[6 + h]); /* rows 0-3: columns 4-7 */
    w[4 * h + 3] = v_zip_hi16(u[4 + h], u[6 + h]);
  }
  for (int h = 0; h < 2; h++) {
    rows2[4 * h + 0] = v_zip_lo32(w[4 * h], w[4 * h + 2]);
    rows2[4 * h + 1] = v_zip_hi32(w[4 * h], w[4 * h + 2]);
    rows2[4 * h + 2] = v_zip_lo32(w[4 * h + 1], w[4 * h + 3]);
    rows2[4 * h + 3] = v_zip_hi32(w[4 * h + 1], w[4 * h + 3]);
  }
}

/* One edge of 16 lines: line k starts at line[k] (its q0) and `step` crosses the edge. Lines
 * 0-7 and 8-15 may lie in different planes (Cb and Cr). */
static void filter_edge16(u8 *const line[2], int along, int step, const i16 tc0[16], const edge_params_t *ep, int strong, int chroma) {
  vec pq[8];
  if (step == 1) { /* vertical edge: lines are rows; transpose the 8 samples around it */
    vec rows[16], rows2[8];
    for (int k = 0; k < 16; k++) rows[k] = v_load64(line[k >> 3] + (k & 7) * along - 4);
    transpose_16x8(rows, pq);
    filter_lines16(pq, tc0, ep->alpha, ep->beta, strong, chroma);
    transpose_8x16(pq, rows2);
    for (int k = 0; k < 8; k++) {
      v_store64(line[k >> 2] + ((2 * k) & 7) * along - 4, rows2[k]);
      v_store64_hi(line[k >> 2] + ((2 * k + 1) & 7) * along - 4, rows2[k]);
    }
  } else { /* horizontal edge: lines are columns, the samples of one row are contiguous */
    for (int k = 0; k < 8; k++) pq[k] = v_zip_lo64(v_load64(line[0] + (k - 4) * step), v_load64(line[1] + (k - 4) * step));
    filter_lines16(pq, tc0, ep->alpha, ep->beta, strong, chroma);
    for (int k = 1; k < 7; k++) {
      v_store64(line[0] + (k - 4) * step, pq[k]);
      v_store64_hi(line[1] + (k - 4) * step, pq[k]);
    }
  }
}
#endif

static inline int is_intra(int type) { return type == MB_I4x4 || type == MB_I16; }

/* Boundary strengths (clause 8.7.2.1) of the four edges of one direction (dir 0: vertical edges,
 * 1: horizontal), four segments each; returns whether any is non-zero. mn is the left/upper
 * neighbour, NULL at the picture edge. Every inter macroblock here is one 16x16 partition with one
 * reference picture, so inside it only coefficients matter (bS 2), and across its edge 0 also a
 * motion vector difference of a whole sample or more (bS 1). */
static int strengths(const mb_info_t *mq, const mb_info_t *mn, int dir, u8 bs[4][4]) {
  int intra_q = is_intra(mq->type);
  /* nz of the four blocks along edge `edge` on its q side (k = segment) */
#define NZ_Q(m, edge, k) ((m)->nz[dir == 0 ? (k) * 4 + (edge) : (edge) * 4 + (k)])
  if (!mn) {
    memset(bs[0], 0, 4);
  } else if (intra_q || is_intra(mn->type)) {
    memset(bs[0], 4, 4);
  } else {
    int moved = iabs(mn->mv[0] - mq->mv[0]) >= 4 || iabs(mn->mv[1] - mq->mv[1]) >= 4;
    for (int k = 0; k < 4; k++) bs[0][k] = (u8)(NZ_Q(mq, 0, k) || NZ_Q(mn, 3, k) ? 2 : moved);
  }
  if (intra_q) {
    memset(bs[1], 3, 12);
  } else if (!mq->coded) {
    memset(bs[1], 0, 12);
  } else {
    for (int edge = 1; edge < 4; edge++)
      for (int k = 0; k < 4; k++) bs[edge][k] = (u8)(NZ_Q(mq, edge, k) || NZ_Q(mq, edge - 1, k) ? 2 : 0);
  }
#undef NZ_Q
  u32 any = 0;
  for (int edge = 0; edge < 4; edge++) any |= (u32)(bs[edge][0] | bs[edge][1] | bs[edge][2] | bs[edge][3]);
  return any != 0;
}

/* Filters the macroblock at (mbx, mby): for luma and each chroma plane, the vertical edges
 * (dir 0) left to right and then the horizontal ones (dir 1) top to bottom. simd: 0 runs the scalar
 * reference (h264_selftest compares the two). */
void deblock_mb(encoder_t *e, picture_t *p, int mbx, int mby, int simd) {
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
    /* Chroma (4:2:0) edges 0 and 4 reuse the strengths of luma edges 0 and 8, two chroma lines per
     * luma segment. QPs map through Table 8-15 per macroblock before averaging. */
    int qpc_q = chroma_qp_table[mq->qp];
    edge_params_t inner_c = edge_params(qpc_q, qpc_q);
    for (int edge = 0; edge < 4; edge++) {
      const u8 *b = bs[edge];
      if (!(b[0] | b[1] | b[2] | b[3])) continue;
      edge_params_t ep = edge == 0 && mn ? edge_params(mn->qp, mq->qp) : inner;
      int chroma_edge = !(edge & 1);
      edge_params_t epc = edge == 0 && mn ? edge_params(chroma_qp_table[mn->qp], qpc_q) : inner_c;
      u8 *qy = luma + edge * 4 * step_y;
      u8 *qc[2] = {chroma[0] + edge * 2 * step_c, chroma[1] + edge * 2 * step_c};
#if H264_SIMD
      if (simd) {
        i16 tc0[16], tc0_c[16];
        for (int k = 0; k < 16; k++) {
          int bl = b[k >> 2], bc = b[(k & 7) >> 1];
          tc0[k] = bl ? ep.tc0[imin(bl, 3) - 1] : -1;
          tc0_c[k] = bc ? epc.tc0[imin(bc, 3) - 1] : -1;
        }
        int strong = b[0] == 4; /* bS 4 comes on whole macroblock edges only */
        u8 *lines_y[2] = {qy, qy + 8 * along_y};
        filter_edge16(lines_y, along_y, step_y, tc0, &ep, strong, 0);
        if (chroma_edge) filter_edge16(qc, along_c, step_c, tc0_c, &epc, strong, 1);
        continue;
      }
#endif
      (void)simd;
      filter_edge(qy, step_y, along_y, b, &ep, 16, 0);
      if (chroma_edge)
        for (int c = 0; c < 2; c++) filter_edge(qc[c], step_c, along_c, b, &epc, 8, 1);
    }
  }
}

void deblock_picture(encoder_t *e, picture_t *p) {
  for (int mby = 0; mby < e->mb_h; mby++)
    for (int mbx = 0; mbx < e->mb_w; mbx++) deblock_mb(e, p, mbx, mby, 1);
}
