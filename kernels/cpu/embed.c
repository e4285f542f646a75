/*
 * Table lookups: token embedding (rows of a [V, C] table, any weight dtype, widened to f32) and the
 * T5 relative position bias. The bias buckets depend only on key − query, so the TypeScript side
 * computes the Lq + Lk − 1 bucket ids once (with T5's float32 log arithmetic, op-params.ts) and
 * this kernel only gathers: out[h, i, j] = table[bucket[j − i + Lq − 1], h].
 */
#include "common.h"
#include "dtype.h"

void KINO_EXPORT(kino_embedding)(int tid, int nth, float *out, const void *table, int dt, const int32_t *ids, int n,
                                 int C) {
  range_t r = split_range((size_t)n, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) {
    size_t row = (size_t)ids[i] * C;
    float *o = out + i * C;
    int c = 0;
    for (; c + 4 <= C; c += 4) vstore(o + c, load_w4(table, dt, row + c));
    for (; c < C; c++) o[c] = load_w1(table, dt, row + c);
  }
}

void KINO_EXPORT(kino_t5_bias)(int tid, int nth, float *out, const float *table, const int32_t *bucket, int H, int Lq,
                               int Lk) {
  range_t r = split_range((size_t)H * Lq, tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    int h = (int)(u / (size_t)Lq), i = (int)(u % (size_t)Lq);
    const int32_t *bk = bucket + (Lq - 1 - i); /* bk[j] = bucket of j − i */
    float *o = out + u * Lk;
    for (int j = 0; j < Lk; j++) o[j] = table[(size_t)bk[j] * H + h];
  }
}
