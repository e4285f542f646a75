/*
 * Portable 4-wide float vectors. The kernels are written once with GCC/Clang vector extensions, so the
 * same source builds to wasm32 + SIMD128 (clang -msimd128 lowers these to v128 ops) and natively with
 * gcc -O3 -march=native (the benchmark's native baseline runs exactly the same code). Four lanes is
 * the SIMD128 width; the native build keeps it, so the comparison measures the WebAssembly engine,
 * not a wider vector unit.
 */
#ifndef KINO_SIMD_H
#define KINO_SIMD_H

#include <stdint.h>
#include <stddef.h>

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint16_t v4h __attribute__((vector_size(8)));
/* Same types with 4-byte alignment: for loads and stores at any float address. */
typedef float v4f_u __attribute__((vector_size(16), aligned(4)));
typedef uint16_t v4h_u __attribute__((vector_size(8), aligned(2)));

static inline v4f vload(const float *p) { return *(const v4f_u *)p; }
static inline void vstore(float *p, v4f v) { *(v4f_u *)p = v; }
static inline v4f vsplat(float x) { return (v4f){x, x, x, x}; }
static inline float vsum(v4f v) { return v[0] + v[1] + v[2] + v[3]; }
/* Lane select by a comparison mask (all ones / all zeros per lane); C has no vector ?: in clang. */
static inline v4f vselect(v4i mask, v4f a, v4f b) { return (v4f)((mask & (v4i)a) | (~mask & (v4i)b)); }
static inline v4f vmax(v4f a, v4f b) { return vselect(a > b, a, b); }
static inline v4f vmin(v4f a, v4f b) { return vselect(a < b, a, b); }
static inline v4f vbits(v4u u) { return (v4f)u; }
static inline v4u vubits(v4f f) { return (v4u)f; }

#endif
