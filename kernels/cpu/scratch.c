/* Registry of the per-thread scratch blocks (see scratch.h). */
#include "scratch.h"

static char *scratch_base;

void KINO_EXPORT(kino_set_scratch)(char *base) { scratch_base = base; }

size_t KINO_EXPORT(kino_scratch_bytes)(void) { return SCRATCH_BYTES; }

float *thread_scratch(int tid) { return (float *)(scratch_base + (size_t)tid * SCRATCH_BYTES); }
