/*
 * What every kernel file shares: the export macro and the thread split.
 *
 * Threading model: the TypeScript side (src/runtime/backends/wasm-pool.ts) cuts an op into nth slices
 * and the threads of the pool, over one shared memory, claim them: each run of the exported function
 * gets (tid = the slice's index, nth = the slice count) first and picks its own part of the work from
 * those two numbers, so there is no scheduler in C and no synchronisation inside a kernel: slices
 * never write the same bytes, and any thread may run any slice. nth = 1 is the single-threaded path
 * (no shared memory, or a small op not worth waking the pool for).
 */
#ifndef KINO_COMMON_H
#define KINO_COMMON_H

#include "simd.h"

#ifdef __wasm__
#define KINO_EXPORT(name) __attribute__((export_name(#name))) name
#else
#define KINO_EXPORT(name) __attribute__((visibility("default"))) name
#endif

/* Fully unroll the next loop (constant trip count: keeps register-tile arrays in registers). */
#ifdef __clang__
#define KINO_UNROLL _Pragma("unroll")
#else
#define KINO_UNROLL _Pragma("GCC unroll 16")
#endif

typedef struct {
  size_t lo, hi;
} range_t;

/* Thread tid's share of n items, split into contiguous, nearly equal pieces. */
static inline range_t split_range(size_t n, int tid, int nth) {
  size_t base = n / (size_t)nth, extra = n % (size_t)nth, t = (size_t)tid;
  range_t r;
  r.lo = t * base + (t < extra ? t : extra);
  r.hi = r.lo + base + (t < extra ? 1 : 0);
  return r;
}

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

#endif
