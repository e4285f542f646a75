/*
 * Data movement: strided row copies (concat, slice, writeSlice — all "copy `rows` runs of bytes
 * between two strides"), permute, nearest upsampling and dtype casts. Shapes and strides of arbitrary
 * rank arrive as small int32 arrays in wasm memory. The generic loops walk the output in order and
 * keep only the innermost dimension as a tight loop.
 */
#include "dtype.h"

void KINO_EXPORT(kino_copy_rows)(int tid, int nth, char *dst, size_t dst_stride, const char *src, size_t src_stride,
                                 size_t row_bytes, size_t rows) {
  if (rows >= (size_t)nth) {
    range_t r = split_range(rows, tid, nth);
    for (size_t i = r.lo; i < r.hi; i++) __builtin_memcpy(dst + i * dst_stride, src + i * src_stride, row_bytes);
  } else { /* a few long rows: split each row instead */
    range_t r = split_range(row_bytes, tid, nth);
    for (size_t i = 0; i < rows; i++)
      __builtin_memcpy(dst + i * dst_stride + r.lo, src + i * src_stride + r.lo, r.hi - r.lo);
  }
}

/* Offset of the start of output row `row` (all dims but the last), given per-dim input strides
 * and optional per-dim divisors (upsampling factors). */
static size_t row_offset(size_t row, int rank, const int32_t *oshape, const int32_t *istride, const int32_t *div) {
  size_t off = 0;
  for (int d = rank - 2; d >= 0; d--) {
    size_t c = row % (size_t)oshape[d];
    row /= (size_t)oshape[d];
    off += (div ? c / (size_t)div[d] : c) * (size_t)istride[d];
  }
  return off;
}

static size_t outer_rows(int rank, const int32_t *oshape) {
  size_t n = 1;
  for (int d = 0; d < rank - 1; d++) n *= (size_t)oshape[d];
  return n;
}

/* out dim d has size oshape[d] and walks the input with stride istride[d] (elements). */
void KINO_EXPORT(kino_permute)(int tid, int nth, char *out, const char *x, int esize, int rank, const int32_t *oshape,
                               const int32_t *istride) {
  const size_t inner = (size_t)oshape[rank - 1], s = (size_t)istride[rank - 1];
  range_t r = split_range(outer_rows(rank, oshape), tid, nth);
  for (size_t row = r.lo; row < r.hi; row++) {
    size_t base = row_offset(row, rank, oshape, istride, 0);
    if (esize == 4) {
      const float *src = (const float *)x + base;
      float *dst = (float *)out + row * inner;
      for (size_t j = 0; j < inner; j++) dst[j] = src[j * s];
    } else if (esize == 2) {
      const uint16_t *src = (const uint16_t *)x + base;
      uint16_t *dst = (uint16_t *)out + row * inner;
      for (size_t j = 0; j < inner; j++) dst[j] = src[j * s];
    } else {
      const uint8_t *src = (const uint8_t *)x + base;
      uint8_t *dst = (uint8_t *)out + row * inner;
      for (size_t j = 0; j < inner; j++) dst[j] = src[j * s];
    }
  }
}

/* out[c] = x[c / factor] per dim; istride = x's contiguous strides. */
void KINO_EXPORT(kino_upsample_nearest)(int tid, int nth, float *out, const float *x, int rank, const int32_t *oshape,
                                        const int32_t *factor, const int32_t *istride) {
  const size_t inner = (size_t)oshape[rank - 1], f = (size_t)factor[rank - 1];
  range_t r = split_range(outer_rows(rank, oshape), tid, nth);
  for (size_t row = r.lo; row < r.hi; row++) {
    const float *src = x + row_offset(row, rank, oshape, istride, factor);
    float *dst = out + row * inner;
    for (size_t j = 0; j < inner; j++) dst[j] = src[j / f];
  }
}

void KINO_EXPORT(kino_cast)(int tid, int nth, void *out, int odt, const void *x, int idt, size_t n) {
  range_t r = split_range(n, tid, nth);
  for (size_t i = r.lo; i < r.hi; i++) {
    float v = load_w1(x, idt, i);
    if (odt == DT_F32) ((float *)out)[i] = v;
    else ((uint16_t *)out)[i] = odt == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
  }
}
