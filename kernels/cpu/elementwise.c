/*
 * Elementwise ops and the DiT's per-block arithmetic (modulation, gated residual). All are bound by
 * memory bandwidth, so they are written as one vectorised pass each; the threads split the elements
 * (or rows) into contiguous ranges. In place is allowed everywhere: each element is read before its
 * slot is written.
 */
#include "common.h"
#include "kmath.h"

/* Thread tid's range of n elements, cut at multiples of 4 so vector loops stay aligned. */
static range_t elem_range(size_t n, int tid, int nth) {
  range_t r = split_range((n + 3) / 4, tid, nth);
  r.lo *= 4, r.hi *= 4;
  if (r.hi > n) r.hi = n;
  if (r.lo > n) r.lo = n;
  return r;
}

#define MAP_UNARY(name, vexpr)                                                                   \
  void KINO_EXPORT(name)(int tid, int nth, float *out, const float *x, size_t n) {               \
    range_t r = elem_range(n, tid, nth);                                                         \
    size_t i = r.lo;                                                                             \
    for (; i + 4 <= r.hi; i += 4) vstore(out + i, vexpr(vload(x + i)));                          \
    for (; i < r.hi; i++) out[i] = vexpr(vsplat(x[i]))[0];                                       \
  }

MAP_UNARY(kino_gelu, vgelu)
MAP_UNARY(kino_silu, vsilu)

void KINO_EXPORT(kino_mul)(int tid, int nth, float *out, const float *a, const float *b, size_t n) {
  range_t r = elem_range(n, tid, nth);
  size_t i = r.lo;
  for (; i + 4 <= r.hi; i += 4) vstore(out + i, vload(a + i) * vload(b + i));
  for (; i < r.hi; i++) out[i] = a[i] * b[i];
}

void KINO_EXPORT(kino_axpby)(int tid, int nth, float *out, const float *a, const float *b, size_t n, float alpha,
                             float beta) {
  range_t r = elem_range(n, tid, nth);
  v4f va = vsplat(alpha), vb = vsplat(beta);
  size_t i = r.lo;
  for (; i + 4 <= r.hi; i += 4) vstore(out + i, va * vload(a + i) + vb * vload(b + i));
  for (; i < r.hi; i++) out[i] = alpha * a[i] + beta * b[i];
}

void KINO_EXPORT(kino_fill)(int tid, int nth, float *out, size_t n, float value) {
  range_t r = elem_range(n, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) out[i] = value;
}

/*
 * Rows of x [B, L, C] against a per-group table [B, G, C]: row (b, l) uses table row
 * b·G + l / per, where per = L / G tokens share one entry (per = L: per sample; per = tokens per
 * frame: per frame; per = 1: per token).
 */
static const float *group_row(const float *table, size_t row, int L, int G, int per, int C) {
  size_t b = row / (size_t)L, l = row % (size_t)L;
  return table + (b * G + l / (size_t)per) * (size_t)C;
}

/* out = x·(1 + scale) + shift */
void KINO_EXPORT(kino_modulate)(int tid, int nth, float *out, const float *x, const float *scale, const float *shift,
                                int B, int L, int C, int G) {
  range_t r = split_range((size_t)B * L, tid, nth);
  const int per = L / G;
  for (size_t row = r.lo; row < r.hi; row++) {
    const float *sc = group_row(scale, row, L, G, per, C), *sh = group_row(shift, row, L, G, per, C);
    const float *xr = x + row * C;
    float *o = out + row * C;
    int c = 0;
    for (; c + 4 <= C; c += 4) vstore(o + c, vload(xr + c) * (vsplat(1.0f) + vload(sc + c)) + vload(sh + c));
    for (; c < C; c++) o[c] = xr[c] * (1.0f + sc[c]) + sh[c];
  }
}

/* out = x + gate·y */
void KINO_EXPORT(kino_gated_add)(int tid, int nth, float *out, const float *x, const float *y, const float *gate, int B,
                                 int L, int C, int G) {
  range_t r = split_range((size_t)B * L, tid, nth);
  const int per = L / G;
  for (size_t row = r.lo; row < r.hi; row++) {
    const float *g = group_row(gate, row, L, G, per, C);
    const float *xr = x + row * C, *yr = y + row * C;
    float *o = out + row * C;
    int c = 0;
    for (; c + 4 <= C; c += 4) vstore(o + c, vload(xr + c) + vload(g + c) * vload(yr + c));
    for (; c < C; c++) o[c] = xr[c] + g[c] * yr[c];
  }
}
