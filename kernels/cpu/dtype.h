/*
 * Weight dtypes. Weights may be stored f32, bf16 or f16 (checkpoints ship bf16; halving the bytes
 * halves the memory traffic of a bandwidth-bound GEMV); every kernel widens them to f32 as it packs
 * or reads them and accumulates in f32. The codes match the TypeScript side (backends/wasm.ts).
 */
#ifndef KINO_DTYPE_H
#define KINO_DTYPE_H

#include "common.h"

enum { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2 };

/* bf16 is the top half of an f32. */
static inline v4f bf16x4_to_f32(v4h h) { return vbits(__builtin_convertvector(h, v4u) << 16); }

/*
 * f16 → f32 without a conversion instruction (SIMD128 has none): move exponent+mantissa into f32
 * position and multiply by 2^112, which rebiases the exponent (15 → 127) and turns f16 subnormals
 * into the right normal f32 values in one step. Inf/NaN get an all-ones exponent explicitly.
 */
static inline v4f f16x4_to_f32(v4h h) {
  v4u u = __builtin_convertvector(h, v4u);
  v4u sign = (u & 0x8000u) << 16;
  v4u em = u & 0x7fffu;
  v4f mag = vbits(em << 13) * vsplat(5.192296858534828e33f); /* 2^112 */
  v4u bits = vubits(mag) | (v4u)((v4i)(em >= 0x7c00u) & (v4i){0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000});
  return vbits(bits | sign);
}

/* Four consecutive weights starting at element i, widened to f32. */
static inline v4f load_w4(const void *w, int dt, size_t i) {
  if (dt == DT_F32) return vload((const float *)w + i);
  v4h h = *(const v4h_u *)((const uint16_t *)w + i);
  return dt == DT_BF16 ? bf16x4_to_f32(h) : f16x4_to_f32(h);
}

static inline float load_w1(const void *w, int dt, size_t i) {
  if (dt == DT_F32) return ((const float *)w)[i];
  v4h h = {((const uint16_t *)w)[i], 0, 0, 0};
  return (dt == DT_BF16 ? bf16x4_to_f32(h) : f16x4_to_f32(h))[0];
}

/* f32 → bf16 / f16 with round-to-nearest-even (cast op). */
static inline uint16_t f32_to_bf16(float f) {
  uint32_t b = ((v4u)vsplat(f))[0];
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static inline uint16_t f32_to_f16(float f) {
  uint32_t b = ((v4u)vsplat(f))[0];
  uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xffu, mant = b & 0x7fffffu;
  if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = 1u << (shift - 1), rest = mant & ((1u << shift) - 1u), h = mant >> shift;
    if (rest > half || (rest == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

#endif
