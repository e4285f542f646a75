/*
 * exp and the activations built on it. There is no libm in the wasm build (-nostdlib), and a vector
 * exp is what softmax, SiLU and GELU spend their time in anyway. exp: Cody–Waite range reduction
 * x = n·ln2 + r, |r| ≤ ln2/2, and the Cephes degree-6 polynomial for e^r (relative error ≈ 2e-7),
 * then 2^n through the exponent bits. Rounding n uses the 1.5·2^23 trick, which needs IEEE
 * semantics: never build these files with -ffast-math.
 */
#ifndef KINO_KMATH_H
#define KINO_KMATH_H

#include "simd.h"

#define KINO_EXP_LO (-87.33654f) /* below this e^x is under FLT_MIN: return 0 */
#define KINO_EXP_HI 88.72283f

static inline v4f vexp(v4f x) {
  const v4f magic = vsplat(12582912.0f); /* 1.5 * 2^23 */
  v4f xc = vmin(vmax(x, vsplat(KINO_EXP_LO)), vsplat(KINO_EXP_HI));
  v4f t = xc * vsplat(1.44269504088896341f) + magic;
  v4f n = t - magic;
  v4f r = xc - n * vsplat(0.693359375f);
  r = r - n * vsplat(-2.12194440e-4f);
  v4f p = vsplat(1.9875691500e-4f);
  p = p * r + vsplat(1.3981999507e-3f);
  p = p * r + vsplat(8.3334519073e-3f);
  p = p * r + vsplat(4.1665795894e-2f);
  p = p * r + vsplat(1.6666665459e-1f);
  p = p * r + vsplat(5.0000001201e-1f);
  p = p * (r * r) + r + vsplat(1.0f);
  /* n is integral in [-126, 128]; split the scale in two so 2^128 does not overflow the bits */
  v4i ni = (v4i)vubits(t) - (v4i)vubits(magic);
  v4i half = ni >> 1;
  v4f s1 = vbits((v4u)((half + 127) << 23));
  v4f s2 = vbits((v4u)((ni - half + 127) << 23));
  v4f y = p * s1 * s2;
  return (v4f)((v4i)y & (v4i)(x >= vsplat(KINO_EXP_LO))); /* e^-inf and tiny results → 0 */
}

static inline float kexp(float x) { return vexp(vsplat(x))[0]; }

/* SiLU x·σ(x) = x / (1 + e^-x). */
static inline v4f vsilu(v4f x) { return x / (vsplat(1.0f) + vexp(-x)); }

/* GELU with the tanh approximation, using 0.5·(1 + tanh(u)) = σ(2u): no cancellation near 0. */
static inline v4f vgelu(v4f x) {
  v4f u = vsplat(0.7978845608028654f) * (x + vsplat(0.044715f) * x * x * x);
  return x / (vsplat(1.0f) + vexp(vsplat(-2.0f) * u));
}

/* Exact GELU x·Φ(x), Φ(x) = 1 − erfc(x/√2)/2 for x ≥ 0 and erfc(−x/√2)/2 below. erfc(z), z ≥ 0, is
 * the Chebyshev fit t·e^(−z² + P(t)), t = 1/(1 + z/2), of Numerical Recipes' erfcc: relative error
 * < 1.2e-7 everywhere, so the negative tail keeps its precision (no 1 − erf cancellation). */
static inline v4f vgelu_exact(v4f x) {
  v4f z = vselect(x < vsplat(0.0f), -x, x) * vsplat(0.70710678118654752f);
  v4f t = vsplat(1.0f) / (vsplat(1.0f) + vsplat(0.5f) * z);
  v4f p = vsplat(0.17087277f);
  p = p * t + vsplat(-0.82215223f);
  p = p * t + vsplat(1.48851587f);
  p = p * t + vsplat(-1.13520398f);
  p = p * t + vsplat(0.27886807f);
  p = p * t + vsplat(-0.18628806f);
  p = p * t + vsplat(0.09678418f);
  p = p * t + vsplat(0.37409196f);
  p = p * t + vsplat(1.00002368f);
  p = p * t + vsplat(-1.26551223f);
  v4f half_erfc = vsplat(0.5f) * t * vexp(p - z * z);
  return x * vselect(x < vsplat(0.0f), half_erfc, vsplat(1.0f) - half_erfc);
}

static inline float ksqrt(float x) { return __builtin_sqrtf(x); }

#endif
