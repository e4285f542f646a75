/*
 * A 128-bit integer vector layer over WebAssembly SIMD128 and x86 SSE4.1, so each kernel is
 * written once and runs on both builds. Every operation has one exact meaning (given in its
 * comment) that both targets implement, so a kernel computes the same numbers on either; the
 * scalar references in pixel.c, transform.c, ... remain the specification and h264_selftest checks
 * every kernel against them. Without either instruction set H264_SIMD is 0 and the encoder uses
 * the scalar references (e.g. a native build on another architecture).
 *
 * Lane types are in the names: 8/16/32/64 = lane width, u/i where signedness matters.
 */
#ifndef KINO_H264_SIMD_H
#define KINO_H264_SIMD_H
#include "common.h"

#if defined(__wasm_simd128__)
#define H264_SIMD 1
#include <wasm_simd128.h>
typedef v128_t vec;
#define V_INLINE static inline __attribute__((always_inline))

V_INLINE vec v_load(const void *p) { return wasm_v128_load(p); }
V_INLINE void v_store(void *p, vec v) { wasm_v128_store(p, v); }
V_INLINE vec v_load64(const void *p) { return wasm_v128_load64_zero(p); } /* low 8 bytes, rest 0 */
V_INLINE void v_store64(void *p, vec v) { wasm_v128_store64_lane(p, v, 0); }
V_INLINE void v_store64_hi(void *p, vec v) { wasm_v128_store64_lane(p, v, 1); } /* high 8 bytes */
V_INLINE vec v_load32(const void *p) { return wasm_v128_load32_zero(p); }
V_INLINE void v_store32(void *p, vec v) { wasm_v128_store32_lane(p, v, 0); }
V_INLINE vec v_load_u8_u16(const void *p) { return wasm_u16x8_load8x8(p); } /* 8 bytes zero-extended */
/* 8 bytes from p in the low half, 8 from q in the high half; the same 8 bytes in both halves; the
 * 4 bytes at p in 32-bit lane 0 and those at q in lane 2 (rest 0). Lane loads rather than a
 * shuffle of two loads: see V_SHUFFLE8 for what a shuffle costs. */
V_INLINE vec v_load64x2(const void *p, const void *q) { return wasm_v128_load64_lane(q, wasm_v128_load64_zero(p), 1); }
V_INLINE vec v_load64_dup(const void *p) { return wasm_v128_load64_splat(p); }
V_INLINE vec v_load32x2(const void *p, const void *q) { return wasm_v128_load32_lane(q, wasm_v128_load32_zero(p), 2); }
V_INLINE vec v_zero(void) { return wasm_i64x2_const(0, 0); }
V_INLINE vec v_splat8(int x) { return wasm_i8x16_splat((i8)x); }
V_INLINE vec v_splat16(int x) { return wasm_i16x8_splat((i16)x); }
V_INLINE vec v_splat32(int x) { return wasm_i32x4_splat(x); }

V_INLINE vec v_add8(vec a, vec b) { return wasm_i8x16_add(a, b); }
V_INLINE vec v_sub8(vec a, vec b) { return wasm_i8x16_sub(a, b); }
V_INLINE vec v_subs_u8(vec a, vec b) { return wasm_u8x16_sub_sat(a, b); } /* max(a - b, 0) */
V_INLINE vec v_avg_u8(vec a, vec b) { return wasm_u8x16_avgr(a, b); }     /* (a + b + 1) >> 1 */
V_INLINE vec v_min_u8(vec a, vec b) { return wasm_u8x16_min(a, b); }
V_INLINE vec v_max_u8(vec a, vec b) { return wasm_u8x16_max(a, b); }
V_INLINE vec v_eq8(vec a, vec b) { return wasm_i8x16_eq(a, b); }

V_INLINE vec v_add16(vec a, vec b) { return wasm_i16x8_add(a, b); }
V_INLINE vec v_sub16(vec a, vec b) { return wasm_i16x8_sub(a, b); }
V_INLINE vec v_mul16(vec a, vec b) { return wasm_i16x8_mul(a, b); } /* low 16 bits of the product */
V_INLINE vec v_shl16(vec a, int n) { return wasm_i16x8_shl(a, n); }
V_INLINE vec v_sra16(vec a, int n) { return wasm_i16x8_shr(a, n); }
V_INLINE vec v_srl16(vec a, int n) { return wasm_u16x8_shr(a, n); }
V_INLINE vec v_abs16(vec a) { return wasm_i16x8_abs(a); } /* -32768 stays -32768 */
V_INLINE vec v_max16(vec a, vec b) { return wasm_i16x8_max(a, b); }
V_INLINE vec v_min16(vec a, vec b) { return wasm_i16x8_min(a, b); }
V_INLINE vec v_eq16(vec a, vec b) { return wasm_i16x8_eq(a, b); }
V_INLINE vec v_gt16(vec a, vec b) { return wasm_i16x8_gt(a, b); }

V_INLINE vec v_add32(vec a, vec b) { return wasm_i32x4_add(a, b); }
V_INLINE vec v_sub32(vec a, vec b) { return wasm_i32x4_sub(a, b); }
V_INLINE vec v_mul32(vec a, vec b) { return wasm_i32x4_mul(a, b); } /* low 32 bits */
V_INLINE vec v_shl32(vec a, int n) { return wasm_i32x4_shl(a, n); }
V_INLINE vec v_sra32(vec a, int n) { return wasm_i32x4_shr(a, n); }
V_INLINE vec v_srl32(vec a, int n) { return wasm_u32x4_shr(a, n); }
V_INLINE vec v_shl64(vec a, int n) { return wasm_i64x2_shl(a, n); }
V_INLINE vec v_srl64(vec a, int n) { return wasm_u64x2_shr(a, n); }

V_INLINE vec v_and(vec a, vec b) { return wasm_v128_and(a, b); }
V_INLINE vec v_or(vec a, vec b) { return wasm_v128_or(a, b); }
V_INLINE vec v_xor(vec a, vec b) { return wasm_v128_xor(a, b); }
V_INLINE vec v_andnot(vec a, vec b) { return wasm_v128_andnot(a, b); }                /* a & ~b */
V_INLINE vec v_select(vec mask, vec a, vec b) { return wasm_v128_bitselect(a, b, mask); } /* mask ? a : b, per bit */

V_INLINE vec v_lo_u8_u16(vec a) { return wasm_u16x8_extend_low_u8x16(a); }
V_INLINE vec v_hi_u8_u16(vec a) { return wasm_u16x8_extend_high_u8x16(a); }
V_INLINE vec v_lo_u16_u32(vec a) { return wasm_u32x4_extend_low_u16x8(a); }
V_INLINE vec v_hi_u16_u32(vec a) { return wasm_u32x4_extend_high_u16x8(a); }
V_INLINE vec v_lo_i16_i32(vec a) { return wasm_i32x4_extend_low_i16x8(a); }
V_INLINE vec v_hi_i16_i32(vec a) { return wasm_i32x4_extend_high_i16x8(a); }
V_INLINE vec v_pack_u8(vec a, vec b) { return wasm_u8x16_narrow_i16x8(a, b); }  /* i16 -> u8, saturating; a low */
V_INLINE vec v_pack_i16(vec a, vec b) { return wasm_i16x8_narrow_i32x4(a, b); } /* i32 -> i16, saturating */
V_INLINE vec v_pack_i8(vec a, vec b) { return wasm_i8x16_narrow_i16x8(a, b); }   /* i16 -> i8, saturating */

V_INLINE vec v_hadd_u8_u16(vec a) { return wasm_u16x8_extadd_pairwise_u8x16(a); } /* a[2k] + a[2k+1] */
V_INLINE vec v_hadd_i16_i32(vec a) { return wasm_i32x4_extadd_pairwise_i16x8(a); }
V_INLINE vec v_madd16(vec a, vec b) { return wasm_i32x4_dot_i16x8(a, b); } /* a[2k]b[2k] + a[2k+1]b[2k+1] */
V_INLINE vec v_mul_lo_i16_i32(vec a, vec b) { return wasm_i32x4_extmul_low_i16x8(a, b); } /* lanes 0-3 widened */
V_INLINE vec v_mul_hi_i16_i32(vec a, vec b) { return wasm_i32x4_extmul_high_i16x8(a, b); }
V_INLINE vec v_mul_lo_u16_u32(vec a, vec b) { return wasm_u32x4_extmul_low_u16x8(a, b); }
V_INLINE vec v_mul_hi_u16_u32(vec a, vec b) { return wasm_u32x4_extmul_high_u16x8(a, b); }

/* Interleave the low (lo) or high (hi) halves of a and b: a0 b0 a1 b1 ... in units of the lane width. */
V_INLINE vec v_zip_lo8(vec a, vec b) { return wasm_i8x16_shuffle(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23); }
V_INLINE vec v_zip_hi8(vec a, vec b) { return wasm_i8x16_shuffle(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31); }
V_INLINE vec v_zip_lo16(vec a, vec b) { return wasm_i16x8_shuffle(a, b, 0, 8, 1, 9, 2, 10, 3, 11); }
V_INLINE vec v_zip_hi16(vec a, vec b) { return wasm_i16x8_shuffle(a, b, 4, 12, 5, 13, 6, 14, 7, 15); }
V_INLINE vec v_zip_lo32(vec a, vec b) { return wasm_i32x4_shuffle(a, b, 0, 4, 1, 5); }
V_INLINE vec v_zip_hi32(vec a, vec b) { return wasm_i32x4_shuffle(a, b, 2, 6, 3, 7); }
V_INLINE vec v_zip_lo64(vec a, vec b) { return wasm_i64x2_shuffle(a, b, 0, 2); }
V_INLINE vec v_zip_hi64(vec a, vec b) { return wasm_i64x2_shuffle(a, b, 1, 3); }
/* Byte k of the result is a[idx[k]] for idx[k] in 0..15 and 0 for idx[k] < 0. */
V_INLINE vec v_swizzle(vec a, vec idx) { return wasm_i8x16_swizzle(a, idx); }
/* The same with constant indices (all in 0..15). JavaScriptCore (x86-64) compiles every
 * i8x16.shuffle, these zips too, into two pshufb (one per operand, with constant masks loaded from
 * memory) and a por, whatever the pattern; V8 matches unpack/pshufd patterns. Hot kernels avoid
 * shuffles in the wasm build where shifts, masks or lane loads do the same (v_transpose_two_4x4). */
#define V_SHUFFLE8(a, ...) wasm_i8x16_shuffle((a), (a), __VA_ARGS__)

/* Byte 2 of each 32-bit lane of a, then of b, in bytes 0-7 (bytes 8-15 unspecified): the value of
 * (x >> 16) where every lane is known to hold 0 <= x < 2^24. One shuffle where shifts and two
 * packs cost ten instructions under JavaScriptCore. */
V_INLINE vec v_bytes2_of_32(vec a, vec b) { return wasm_i8x16_shuffle(a, b, 2, 6, 10, 14, 18, 22, 26, 30, 2, 6, 10, 14, 18, 22, 26, 30); }

V_INLINE int v_lane32(vec a, int k) {
  switch (k) {
  case 0: return wasm_i32x4_extract_lane(a, 0);
  case 1: return wasm_i32x4_extract_lane(a, 1);
  case 2: return wasm_i32x4_extract_lane(a, 2);
  default: return wasm_i32x4_extract_lane(a, 3);
  }
}
V_INLINE int v_any(vec a) { return wasm_v128_any_true(a); }      /* any bit set */
V_INLINE int v_mask8(vec a) { return (int)wasm_i8x16_bitmask(a); } /* bit k = top bit of byte k */

/* Sum of |a - b| over bytes, accumulated into an opaque per-target layout; v_sad_total reads it.
 * Good for up to 64 accumulations (16-bit partial sums here). */
V_INLINE vec v_sad_acc(vec acc, vec a, vec b) {
  return wasm_i16x8_add(acc, wasm_u16x8_extadd_pairwise_u8x16(wasm_v128_or(wasm_u8x16_sub_sat(a, b), wasm_u8x16_sub_sat(b, a))));
}V_INLINE int v_sad_total(vec acc) {
  vec s = wasm_i32x4_extadd_pairwise_i16x8(acc); /* lanes < 2^15: signed and unsigned agree */
  return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1) + wasm_i32x4_extract_lane(s, 2) + wasm_i32x4_extract_lane(s, 3);
}
/* The same split into bytes 0-7 (left) and 8-15 (right). */
V_INLINE void v_sad_halves(vec acc, int *left, int *right) {
  vec s = wasm_i32x4_extadd_pairwise_i16x8(acc);
  *left = wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1);
  *right = wasm_i32x4_extract_lane(s, 2) + wasm_i32x4_extract_lane(s, 3);
}

#elif defined(__SSE4_1__)
#define H264_SIMD 1
#include <smmintrin.h>
typedef __m128i vec;
#define V_INLINE static inline __attribute__((always_inline))

V_INLINE vec v_load(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
V_INLINE void v_store(void *p, vec v) { _mm_storeu_si128((__m128i *)p, v); }
V_INLINE vec v_load64(const void *p) { return _mm_loadl_epi64((const __m128i *)p); }
V_INLINE void v_store64(void *p, vec v) { _mm_storel_epi64((__m128i *)p, v); }
V_INLINE void v_store64_hi(void *p, vec v) { _mm_storel_epi64((__m128i *)p, _mm_unpackhi_epi64(v, v)); }
V_INLINE vec v_load32(const void *p) {
  int x;
  memcpy(&x, p, 4);
  return _mm_cvtsi32_si128(x);
}
V_INLINE void v_store32(void *p, vec v) {
  int x = _mm_cvtsi128_si32(v);
  memcpy(p, &x, 4);
}
V_INLINE vec v_load_u8_u16(const void *p) { return _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p)); }
V_INLINE vec v_load64x2(const void *p, const void *q) { return _mm_unpacklo_epi64(v_load64(p), v_load64(q)); }
V_INLINE vec v_load64_dup(const void *p) { return _mm_unpacklo_epi64(v_load64(p), v_load64(p)); }
V_INLINE vec v_load32x2(const void *p, const void *q) { return _mm_unpacklo_epi64(v_load32(p), v_load32(q)); }
V_INLINE vec v_zero(void) { return _mm_setzero_si128(); }
V_INLINE vec v_splat8(int x) { return _mm_set1_epi8((char)x); }
V_INLINE vec v_splat16(int x) { return _mm_set1_epi16((short)x); }
V_INLINE vec v_splat32(int x) { return _mm_set1_epi32(x); }

V_INLINE vec v_add8(vec a, vec b) { return _mm_add_epi8(a, b); }
V_INLINE vec v_sub8(vec a, vec b) { return _mm_sub_epi8(a, b); }
V_INLINE vec v_subs_u8(vec a, vec b) { return _mm_subs_epu8(a, b); }
V_INLINE vec v_avg_u8(vec a, vec b) { return _mm_avg_epu8(a, b); }
V_INLINE vec v_min_u8(vec a, vec b) { return _mm_min_epu8(a, b); }
V_INLINE vec v_max_u8(vec a, vec b) { return _mm_max_epu8(a, b); }
V_INLINE vec v_eq8(vec a, vec b) { return _mm_cmpeq_epi8(a, b); }

V_INLINE vec v_add16(vec a, vec b) { return _mm_add_epi16(a, b); }
V_INLINE vec v_sub16(vec a, vec b) { return _mm_sub_epi16(a, b); }
V_INLINE vec v_mul16(vec a, vec b) { return _mm_mullo_epi16(a, b); }
V_INLINE vec v_shl16(vec a, int n) { return _mm_slli_epi16(a, n); }
V_INLINE vec v_sra16(vec a, int n) { return _mm_srai_epi16(a, n); }
V_INLINE vec v_srl16(vec a, int n) { return _mm_srli_epi16(a, n); }
V_INLINE vec v_abs16(vec a) { return _mm_abs_epi16(a); }
V_INLINE vec v_max16(vec a, vec b) { return _mm_max_epi16(a, b); }
V_INLINE vec v_min16(vec a, vec b) { return _mm_min_epi16(a, b); }
V_INLINE vec v_eq16(vec a, vec b) { return _mm_cmpeq_epi16(a, b); }
V_INLINE vec v_gt16(vec a, vec b) { return _mm_cmpgt_epi16(a, b); }

V_INLINE vec v_add32(vec a, vec b) { return _mm_add_epi32(a, b); }
V_INLINE vec v_sub32(vec a, vec b) { return _mm_sub_epi32(a, b); }
V_INLINE vec v_mul32(vec a, vec b) { return _mm_mullo_epi32(a, b); }
V_INLINE vec v_shl32(vec a, int n) { return _mm_slli_epi32(a, n); }
V_INLINE vec v_sra32(vec a, int n) { return _mm_srai_epi32(a, n); }
V_INLINE vec v_srl32(vec a, int n) { return _mm_srli_epi32(a, n); }
V_INLINE vec v_shl64(vec a, int n) { return _mm_slli_epi64(a, n); }
V_INLINE vec v_srl64(vec a, int n) { return _mm_srli_epi64(a, n); }

V_INLINE vec v_and(vec a, vec b) { return _mm_and_si128(a, b); }
V_INLINE vec v_or(vec a, vec b) { return _mm_or_si128(a, b); }
V_INLINE vec v_xor(vec a, vec b) { return _mm_xor_si128(a, b); }
V_INLINE vec v_andnot(vec a, vec b) { return _mm_andnot_si128(b, a); }
V_INLINE vec v_select(vec mask, vec a, vec b) { return _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b)); }

V_INLINE vec v_lo_u8_u16(vec a) { return _mm_cvtepu8_epi16(a); }
V_INLINE vec v_hi_u8_u16(vec a) { return _mm_unpackhi_epi8(a, _mm_setzero_si128()); }
V_INLINE vec v_lo_u16_u32(vec a) { return _mm_cvtepu16_epi32(a); }
V_INLINE vec v_hi_u16_u32(vec a) { return _mm_unpackhi_epi16(a, _mm_setzero_si128()); }
V_INLINE vec v_lo_i16_i32(vec a) { return _mm_cvtepi16_epi32(a); }
V_INLINE vec v_hi_i16_i32(vec a) { return _mm_srai_epi32(_mm_unpackhi_epi16(a, a), 16); }
V_INLINE vec v_pack_u8(vec a, vec b) { return _mm_packus_epi16(a, b); }
V_INLINE vec v_pack_i16(vec a, vec b) { return _mm_packs_epi32(a, b); }
V_INLINE vec v_pack_i8(vec a, vec b) { return _mm_packs_epi16(a, b); }

V_INLINE vec v_hadd_u8_u16(vec a) { return _mm_maddubs_epi16(a, _mm_set1_epi8(1)); } /* <= 510: never saturates */
V_INLINE vec v_hadd_i16_i32(vec a) { return _mm_madd_epi16(a, _mm_set1_epi16(1)); }
V_INLINE vec v_madd16(vec a, vec b) { return _mm_madd_epi16(a, b); }
V_INLINE vec v_mul_lo_i16_i32(vec a, vec b) { return _mm_unpacklo_epi16(_mm_mullo_epi16(a, b), _mm_mulhi_epi16(a, b)); }
V_INLINE vec v_mul_hi_i16_i32(vec a, vec b) { return _mm_unpackhi_epi16(_mm_mullo_epi16(a, b), _mm_mulhi_epi16(a, b)); }
V_INLINE vec v_mul_lo_u16_u32(vec a, vec b) { return _mm_unpacklo_epi16(_mm_mullo_epi16(a, b), _mm_mulhi_epu16(a, b)); }
V_INLINE vec v_mul_hi_u16_u32(vec a, vec b) { return _mm_unpackhi_epi16(_mm_mullo_epi16(a, b), _mm_mulhi_epu16(a, b)); }

V_INLINE vec v_zip_lo8(vec a, vec b) { return _mm_unpacklo_epi8(a, b); }
V_INLINE vec v_zip_hi8(vec a, vec b) { return _mm_unpackhi_epi8(a, b); }
V_INLINE vec v_zip_lo16(vec a, vec b) { return _mm_unpacklo_epi16(a, b); }
V_INLINE vec v_zip_hi16(vec a, vec b) { return _mm_unpackhi_epi16(a, b); }
V_INLINE vec v_zip_lo32(vec a, vec b) { return _mm_unpacklo_epi32(a, b); }
V_INLINE vec v_zip_hi32(vec a, vec b) { return _mm_unpackhi_epi32(a, b); }
V_INLINE vec v_zip_lo64(vec a, vec b) { return _mm_unpacklo_epi64(a, b); }
V_INLINE vec v_zip_hi64(vec a, vec b) { return _mm_unpackhi_epi64(a, b); }
V_INLINE vec v_swizzle(vec a, vec idx) { return _mm_shuffle_epi8(a, idx); } /* negative index: top bit set -> 0 */
#define V_SHUFFLE8(a, ...) _mm_shuffle_epi8((a), _mm_setr_epi8(__VA_ARGS__))

V_INLINE vec v_bytes2_of_32(vec a, vec b) {
  return _mm_or_si128(V_SHUFFLE8(a, 2, 6, 10, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1), V_SHUFFLE8(b, -1, -1, -1, -1, 2, 6, 10, 14, -1, -1, -1, -1, -1, -1, -1, -1));
}

V_INLINE int v_lane32(vec a, int k) {
  switch (k) {
  case 0: return _mm_cvtsi128_si32(a);
  case 1: return _mm_extract_epi32(a, 1);
  case 2: return _mm_extract_epi32(a, 2);
  default: return _mm_extract_epi32(a, 3);
  }
}
V_INLINE int v_any(vec a) { return !_mm_testz_si128(a, a); }
V_INLINE int v_mask8(vec a) { return _mm_movemask_epi8(a); }

V_INLINE vec v_sad_acc(vec acc, vec a, vec b) { return _mm_add_epi64(acc, _mm_sad_epu8(a, b)); }
V_INLINE int v_sad_total(vec acc) { return _mm_cvtsi128_si32(acc) + _mm_extract_epi32(acc, 2); }
V_INLINE void v_sad_halves(vec acc, int *left, int *right) {
  *left = _mm_cvtsi128_si32(acc);
  *right = _mm_extract_epi32(acc, 2);
}

#else
#define H264_SIMD 0
#endif

/* Partial unrolling of a row loop in the wasm build only. Fully unrolled, clang computes every row's
 * address up front and JavaScriptCore keeps them all live, spilling most of them to the stack (16
 * general registers); a loop unrolled by n keeps a few pointers and steps them. Native code is
 * left to the compiler. */
#if defined(__wasm_simd128__)
#define V_PRAGMA(x) _Pragma(#x)
#define V_WASM_UNROLL(n) V_PRAGMA(clang loop unroll_count(n))
#else
#define V_WASM_UNROLL(n)
#endif

#if H264_SIMD
V_INLINE int v_hsum32(vec a) { return v_lane32(a, 0) + v_lane32(a, 1) + v_lane32(a, 2) + v_lane32(a, 3); }

/* Transposes the two 4x4 blocks of 16-bit lanes held in lanes 0-3 and 4-7 of four rows:
 * afterwards v[j] = [column j of the left block | column j of the right block]. */
#if defined(__wasm_simd128__)
/* With masks and shifts, not zips: 24 one-cycle operations instead of 12 shuffles, which
 * JavaScriptCore turns into 24 pshufb (all on one port) and 12 por (see V_SHUFFLE8). First 2x2
 * blocks of 16-bit lanes inside each 32-bit lane, then 2x2 blocks of 32-bit lanes inside each
 * 64-bit lane. */
V_INLINE void v_transpose_two_4x4(vec v[4]) {
  const vec lo16 = wasm_i32x4_splat(0xffff), lo32 = wasm_i64x2_splat(0xffffffffll);
  vec t0 = v_or(v_and(v[0], lo16), wasm_i32x4_shl(v[1], 16));        /* r0[0] r1[0] r0[2] r1[2] */
  vec t1 = v_or(wasm_u32x4_shr(v[0], 16), v_andnot(v[1], lo16));      /* r0[1] r1[1] r0[3] r1[3] */
  vec t2 = v_or(v_and(v[2], lo16), wasm_i32x4_shl(v[3], 16));        /* r2[0] r3[0] r2[2] r3[2] */
  vec t3 = v_or(wasm_u32x4_shr(v[2], 16), v_andnot(v[3], lo16));      /* r2[1] r3[1] r2[3] r3[3] */
  v[0] = v_or(v_and(t0, lo32), wasm_i64x2_shl(t2, 32));
  v[1] = v_or(v_and(t1, lo32), wasm_i64x2_shl(t3, 32));
  v[2] = v_or(wasm_u64x2_shr(t0, 32), v_andnot(t2, lo32));
  v[3] = v_or(wasm_u64x2_shr(t1, 32), v_andnot(t3, lo32));
}
#else
V_INLINE void v_transpose_two_4x4(vec v[4]) {
  vec lo01 = v_zip_lo16(v[0], v[1]), hi01 = v_zip_hi16(v[0], v[1]);
  vec lo23 = v_zip_lo16(v[2], v[3]), hi23 = v_zip_hi16(v[2], v[3]);
  vec x0 = v_zip_lo32(lo01, lo23), x1 = v_zip_hi32(lo01, lo23);
  vec y0 = v_zip_lo32(hi01, hi23), y1 = v_zip_hi32(hi01, hi23);
  v[0] = v_zip_lo64(x0, y0);
  v[1] = v_zip_hi64(x0, y0);
  v[2] = v_zip_lo64(x1, y1);
  v[3] = v_zip_hi64(x1, y1);
}
#endif
#endif

#endif
