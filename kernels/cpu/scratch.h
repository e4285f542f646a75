/*
 * Per-thread scratch memory (packed GEMM panels, attention tiles). The TypeScript side allocates one
 * block per pool thread once and registers it with kino_set_scratch; kernels find theirs by tid.
 * SCRATCH_BYTES is the size every kernel fits in (the TS side reads it through kino_scratch_bytes).
 */
#ifndef KINO_SCRATCH_H
#define KINO_SCRATCH_H

#include "common.h"

#define SCRATCH_BYTES ((size_t)1 << 20)

float *thread_scratch(int tid);

#endif
