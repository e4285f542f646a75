/*
 * Row reductions shared by the normalisations (norm.c, norm_rope.c): sums over a contiguous row, two
 * vector accumulators wide.
 */
#ifndef KINO_ROW_STATS_H
#define KINO_ROW_STATS_H

#include "common.h"

static inline float row_sum(const float *x, int n) {
  v4f acc0 = {0}, acc1 = {0};
  int i = 0;
  for (; i + 8 <= n; i += 8) acc0 += vload(x + i), acc1 += vload(x + i + 4);
  float s = vsum(acc0 + acc1);
  for (; i < n; i++) s += x[i];
  return s;
}

/* Σ (x − c)²: two passes (mean first) keep the variance accurate when |mean| ≫ std; c = 0 gives the
 * sum of squares of RMSNorm. */
static inline float row_sq_dev(const float *x, int n, float c) {
  v4f acc0 = {0}, acc1 = {0}, vc = vsplat(c);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v4f a = vload(x + i) - vc, b = vload(x + i + 4) - vc;
    acc0 += a * a, acc1 += b * b;
  }
  float s = vsum(acc0 + acc1);
  for (; i < n; i++) s += (x[i] - c) * (x[i] - c);
  return s;
}

#endif
