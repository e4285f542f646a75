/*
 * Motion estimation for P_L0_16x16: integer-sample hexagon search from the best of a few
 * predictors (median prediction, zero, the neighbours' vectors and the co-located vector of the
 * previous picture) and an 8-neighbour square refinement, then half-sample square steps and
 * quarter-sample diamond steps measured with SAD on the interpolated prediction (formed on the fly,
 * never stored), and finally the SATD of the chosen vector, which the mode decision compares with
 * the intra costs. (SATD throughout the sub-sample steps cost 15 % more time for no measurable gain.)
 *
 * Costs are distortion + lambda * (bits of the mvd), the usual Lagrangian shortcut.
 */
#include "encoder.h"

/* A second half-sample round never changed a vector on our scenes; a second quarter-sample one
 * saves about 3 % of the bits on zooming content. */
#define HPEL_ITERATIONS 1
#define QPEL_ITERATIONS 2

/* Integer-sample range of the block's top-left corner so that it and the interpolation taps stay
 * inside the replicated border (see MV_REACH), intersected with the level's vertical limit. */
static void mv_bounds(const encoder_t *e, int mbx, int mby, int *xmin, int *xmax, int *ymin, int *ymax) {
  int px = mbx * 16, py = mby * 16;
  *xmin = -(px + MV_REACH);
  *xmax = e->coded_w - px - 16 + MV_REACH;
  *ymin = -(py + MV_REACH);
  *ymax = e->coded_h - py - 16 + MV_REACH;
  int lim = e->mv_limit_y / 4 - 1;
  if (*ymin < -lim) *ymin = -lim;
  if (*ymax > lim - 1) *ymax = lim - 1;
}

/* A quarter-sample MV is usable when its integer part (floor) lies inside the bounds. */
int mv_in_range(const encoder_t *e, int mbx, int mby, int mvx, int mvy) {
  int xmin, xmax, ymin, ymax;
  mv_bounds(e, mbx, mby, &xmin, &xmax, &ymin, &ymax);
  int xi = mvx >> 2, yi = mvy >> 2;
  return xi >= xmin && xi <= xmax && yi >= ymin && yi <= ymax;
}

typedef struct {
  encoder_t *e;
  const picture_t *pic; /* the reference picture */
  int px, py;           /* the macroblock's luma position */
  const u8 *src;
  int src_stride;
  const u8 *ref; /* integer plane at the macroblock's position */
  int stride;
  int mvp[2];
  int xmin, xmax, ymin, ymax;
  int best_x, best_y, best_cost; /* integer samples */
  int known_x, known_y, known_sad; /* a SAD measured before the search (known_sad < 0: none) */
} search_t;

static inline int mv_cost(const search_t *s, int qx, int qy) {
  return s->e->lambda * (se_bits(qx - s->mvp[0]) + se_bits(qy - s->mvp[1]));
}

static inline int in_bounds(const search_t *s, int x, int y) { return x >= s->xmin && x <= s->xmax && y >= s->ymin && y <= s->ymax; }

/* Takes the integer MV (in samples, inside the bounds) whose SAD is sad when it is cheaper than the
 * best so far; returns 1 when it became the best. */
static int take_int(search_t *s, int x, int y, int sad) {
  int cost = sad + mv_cost(s, x * 4, y * 4);
  if (cost < s->best_cost) {
    s->best_cost = cost;
    s->best_x = x;
    s->best_y = y;
    return 1;
  }
  return 0;
}

/* Evaluates an integer MV (in samples); returns 1 when it became the best. */
static int try_int(search_t *s, int x, int y) {
  if (!in_bounds(s, x, y)) return 0;
  int sad = x == s->known_x && y == s->known_y && s->known_sad >= 0 ? s->known_sad : sad16x16(s->src, s->src_stride, s->ref + y * s->stride + x, s->stride);
  return take_int(s, x, y, sad);
}

/* Hexagon steps until the centre is the best, then the 8 neighbours. After a move in direction k
 * only the three points around k are new: the other three neighbours of the new centre (the old
 * centre and two of its neighbours) are already known to cost more. */
static void hexagon_search(search_t *s) {
  static const int hex[6][2] = {{-2, 0}, {-1, -2}, {1, -2}, {2, 0}, {1, 2}, {-1, 2}}; /* in circular order */
  int dir = -1, cx = s->best_x, cy = s->best_y;
  for (int k = 0; k < 6; k++)
    if (try_int(s, cx + hex[k][0], cy + hex[k][1])) dir = k;
  for (int iter = 0; dir >= 0 && iter < 32; iter++) {
    int from = dir;
    cx = s->best_x, cy = s->best_y, dir = -1;
    for (int j = 5; j <= 7; j++) {
      int k = (from + j) % 6;
      if (try_int(s, cx + hex[k][0], cy + hex[k][1])) dir = k;
    }
  }
  cx = s->best_x, cy = s->best_y;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      if (dx || dy) try_int(s, cx + dx, cy + dy);
}

/* Cost of a quarter-sample MV: SAD or SATD of the (never stored) prediction plus the MV bits. */
static int subpel_cost(const search_t *s, int qx, int qy, int satd) {
  const u8 *a, *b;
  luma_qpel_planes(s->pic, s->stride, s->px, s->py, qx, qy, &a, &b);
  int d;
  if (a == b) d = satd ? satd16x16(s->src, s->src_stride, a, s->stride) : sad16x16(s->src, s->src_stride, a, s->stride);
  else d = satd ? satd16x16_avg(s->src, s->src_stride, a, b, s->stride) : sad16x16_avg(s->src, s->src_stride, a, b, s->stride);
  return d + mv_cost(s, qx, qy);
}

/* Moves (bx, by) to the cheapest neighbour in `pattern` (quarter-sample offsets) until none improves. */
static void refine(const search_t *s, const int (*pattern)[2], int n, int iterations, int satd, int *bx, int *by, int *best) {
  for (int iter = 0; iter < iterations; iter++) {
    int cx = *bx, cy = *by;
    for (int k = 0; k < n; k++) {
      int qx = cx + pattern[k][0], qy = cy + pattern[k][1];
      if (!mv_in_range(s->e, s->px >> 4, s->py >> 4, qx, qy)) continue;
      int c = subpel_cost(s, qx, qy, satd);
      if (c < *best) *best = c, *bx = qx, *by = qy;
    }
    if (*bx == cx && *by == cy) break;
  }
}

static void search_init(search_t *s, encoder_t *e, const mb_t *mb) {
  const picture_t *ref = &e->pic[e->cur ^ 1];
  s->e = e;
  s->pic = ref;
  s->px = mb->x * 16;
  s->py = mb->y * 16;
  s->src = e->src_y + mb->y * 16 * e->coded_w + mb->x * 16;
  s->src_stride = e->coded_w;
  s->stride = e->stride_y;
  s->ref = ref->y + mb->y * 16 * s->stride + mb->x * 16;
  s->mvp[0] = mb->mvp[0];
  s->mvp[1] = mb->mvp[1];
  mv_bounds(e, mb->x, mb->y, &s->xmin, &s->xmax, &s->ymin, &s->ymax);
  s->best_cost = 0x7fffffff;
  s->best_x = s->best_y = 0;
  s->known_sad = -1;
}

/* Start candidates, rounded to whole samples: median prediction, zero, the co-located vector of the
 * previous picture and the left, upper and upper-right neighbours' vectors. */
static void start_candidates(search_t *s, const encoder_t *e, const mb_t *mb) {
  int cand[8][2], n = 0;
  cand[n][0] = mb->mvp[0], cand[n][1] = mb->mvp[1], n++;
  cand[n][0] = 0, cand[n][1] = 0, n++;
  int idx = mb->y * e->mb_w + mb->x;
  cand[n][0] = e->prev_mv[idx][0], cand[n][1] = e->prev_mv[idx][1], n++;
  if (mb->x > 0) cand[n][0] = e->mbs[idx - 1].mv[0], cand[n][1] = e->mbs[idx - 1].mv[1], n++;
  if (mb->y > 0) {
    cand[n][0] = e->mbs[idx - e->mb_w].mv[0], cand[n][1] = e->mbs[idx - e->mb_w].mv[1], n++;
    if (mb->x + 1 < e->mb_w) cand[n][0] = e->mbs[idx - e->mb_w + 1].mv[0], cand[n][1] = e->mbs[idx - e->mb_w + 1].mv[1], n++;
  }
  int tried[8][2];
  for (int k = 0; k < n; k++) {
    int x = clip3(s->xmin, s->xmax, (cand[k][0] + 2) >> 2), y = clip3(s->ymin, s->ymax, (cand[k][1] + 2) >> 2), seen = 0;
    for (int j = 0; j < k; j++) seen |= tried[j][0] == x && tried[j][1] == y;
    tried[k][0] = x, tried[k][1] = y;
    if (!seen) try_int(s, x, y);
  }
}

/* Returns the cost (SATD + MV bits) of the chosen quarter-sample MV written to mv. */
int motion_search(encoder_t *e, mb_t *mb, int mv[2]) {
  search_t s;
  search_init(&s, e, mb);
  start_candidates(&s, e, mb);
  hexagon_search(&s);

  /* Sub-sample refinement around the best integer position. */
  static const int square[8][2] = {{-2, -2}, {0, -2}, {2, -2}, {-2, 0}, {2, 0}, {-2, 2}, {0, 2}, {2, 2}};
  static const int diamond[4][2] = {{0, -1}, {-1, 0}, {1, 0}, {0, 1}};
  int bx = s.best_x * 4, by = s.best_y * 4;
  int best = subpel_cost(&s, bx, by, 0);
  refine(&s, square, 8, HPEL_ITERATIONS, 0, &bx, &by, &best);
  refine(&s, diamond, 4, QPEL_ITERATIONS, 0, &bx, &by, &best);
  mv[0] = bx;
  mv[1] = by;
  return subpel_cost(&s, bx, by, 1); /* mode decision compares SATD costs */
}

/*
 * The fast preset's search (x264 ultrafast's "dia" with subme 0, roughly): the same start
 * candidates, then small-diamond steps at whole samples, at most FAST_DIAMOND_STEPS of them, and
 * no sub-sample refinement unless half_pel (one square step on the half-sample planes). Costs are
 * SAD + lambda * mvd bits throughout, and that is what it returns: the fast mode decision never
 * computes a SATD.
 */
#define FAST_DIAMOND_STEPS 8

/* known, when not NULL: the SAD known[2] of the whole-sample position (known[0], known[1]),
 * measured already (the P_Skip probe, whose vector is usually the median prediction, the first
 * start candidate); it is not measured again. */
int motion_search_fast(encoder_t *e, mb_t *mb, int mv[2], int half_pel, const int known[3]) {
  search_t s;
  search_init(&s, e, mb);
  if (known) s.known_x = known[0], s.known_y = known[1], s.known_sad = known[2];
  start_candidates(&s, e, mb);
  /* dia[3 - k] is the opposite of dia[k]: after a move in direction k, the point in direction
   * 3 - k is the old centre, which already lost (a tie does not move), so it is not measured again. */
  static const int dia[4][2] = {{0, -1}, {-1, 0}, {1, 0}, {0, 1}};
  int came_from = -1;
  for (int step = 0; step < FAST_DIAMOND_STEPS; step++) {
    int cx = s.best_x, cy = s.best_y, moved = -1;
    if (in_bounds(&s, cx - 1, cy - 1) && in_bounds(&s, cx + 1, cy + 1)) {
      /* all four points inside: their SADs in one pass (the old centre's is measured but unused),
       * then the same comparisons in the same order as below */
      const u8 *c = s.ref + cy * s.stride + cx, *const pts[4] = {c - s.stride, c - 1, c + 1, c + s.stride};
      int sad[4];
      sad16x16_x4(s.src, s.src_stride, pts, s.stride, sad);
      for (int k = 0; k < 4; k++)
        if (k != came_from && take_int(&s, cx + dia[k][0], cy + dia[k][1], sad[k])) moved = k;
    } else {
      for (int k = 0; k < 4; k++)
        if (k != came_from && try_int(&s, cx + dia[k][0], cy + dia[k][1])) moved = k;
    }
    if (moved < 0) break;
    came_from = 3 - moved;
  }
  int bx = s.best_x * 4, by = s.best_y * 4, best = s.best_cost;
  if (half_pel) {
    static const int square[8][2] = {{-2, -2}, {0, -2}, {2, -2}, {-2, 0}, {2, 0}, {-2, 2}, {0, 2}, {2, 2}};
    refine(&s, square, 8, 1, 0, &bx, &by, &best);
  }
  mv[0] = bx;
  mv[1] = by;
  return best;
}
