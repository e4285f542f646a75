/*
 * Elementwise ops. All are bound by memory bandwidth, so they are written as one vectorised pass
 * each; the threads split the elements into contiguous ranges. In place is allowed everywhere: each
 * element is read before its slot is written.
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
MAP_UNARY(kino_gelu_exact, vgelu_exact)
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
