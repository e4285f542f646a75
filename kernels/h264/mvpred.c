/*
 * Motion vector prediction for 16x16 partitions (H.264 clause 8.4.1.3) and the P_Skip motion
 * vector (8.4.1.1). Every inter macroblock here has a single 16x16 partition with ref_idx 0, so
 * the neighbouring "partitions" A, B, C, D are whole macroblocks: left, above, above-right,
 * above-left. Unavailable (outside the picture) and intra neighbours count as refIdx -1, mv 0.
 */
#include "encoder.h"

typedef struct {
  int available; /* inside the picture and already coded */
  int ref;       /* 0 for inter macroblocks, -1 otherwise */
  int mv[2];
} neighbour_t;

static neighbour_t neighbour(const encoder_t *e, int x, int y) {
  neighbour_t n = {0, -1, {0, 0}};
  if (x < 0 || y < 0 || x >= e->mb_w) return n;
  const mb_info_t *m = &e->mbs[y * e->mb_w + x];
  n.available = 1;
  if (m->type == MB_P16 || m->type == MB_PSKIP) {
    n.ref = 0;
    n.mv[0] = m->mv[0];
    n.mv[1] = m->mv[1];
  }
  return n;
}

static void predict(neighbour_t a, neighbour_t b, neighbour_t c, int mvp[2]) {
  /* 8.4.1.3: with neither B nor C available (the first row), A stands in for both. */
  if (!b.available && !c.available && a.available) b = c = a;
  int matches = (a.ref == 0) + (b.ref == 0) + (c.ref == 0);
  if (matches == 1) {
    const neighbour_t *only = a.ref == 0 ? &a : b.ref == 0 ? &b : &c;
    mvp[0] = only->mv[0];
    mvp[1] = only->mv[1];
    return;
  }
  mvp[0] = median3(a.mv[0], b.mv[0], c.mv[0]);
  mvp[1] = median3(a.mv[1], b.mv[1], c.mv[1]);
}

static void neighbours(const encoder_t *e, int mbx, int mby, neighbour_t *a, neighbour_t *b, neighbour_t *c) {
  *a = neighbour(e, mbx - 1, mby);
  *b = neighbour(e, mbx, mby - 1);
  *c = neighbour(e, mbx + 1, mby - 1);
  if (!c->available) *c = neighbour(e, mbx - 1, mby - 1); /* D replaces an unavailable C */
}

void mv_predict16x16(const encoder_t *e, int mbx, int mby, int mvp[2]) {
  neighbour_t a, b, c;
  neighbours(e, mbx, mby, &a, &b, &c);
  predict(a, b, c, mvp);
}

/* 8.4.1.1: zero when A or B is outside the picture or either is a zero-MV ref-0 neighbour. */
void mv_predict_skip(const encoder_t *e, int mbx, int mby, int mv[2]) {
  neighbour_t a, b, c;
  neighbours(e, mbx, mby, &a, &b, &c);
  if (!a.available || !b.available || (a.ref == 0 && a.mv[0] == 0 && a.mv[1] == 0) ||
      (b.ref == 0 && b.mv[0] == 0 && b.mv[1] == 0)) {
    mv[0] = mv[1] = 0;
    return;
  }
  predict(a, b, c, mv);
}
