/*
 * Per-slice scratch memory (packed GEMM panels, attention tiles). The TypeScript side allocates one
 * block per slice an op can be cut into (wasm-pool.ts) once and registers them with kino_set_scratch;
 * a kernel finds its slice's block by tid (two slices never run at once on one block).
 * SCRATCH_BYTES is the size every kernel fits in (the TS side reads it through kino_scratch_bytes).
 */
#ifndef KINO_SCRATCH_H
#define KINO_SCRATCH_H

#include "common.h"

#define SCRATCH_BYTES ((size_t)1 << 20)

float *thread_scratch(int tid);

#endif
