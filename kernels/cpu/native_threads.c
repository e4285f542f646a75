/*
 * Native builds only (the benchmark's baseline, libkino_cpu.so): run a kernel on nth POSIX threads
 * with the same (tid, nth) split the wasm pool uses, so "native ×2" and "wasm ×2" divide the work
 * identically. Compiled to nothing for wasm32, where the pool lives in TypeScript.
 */
#ifndef __wasm__
#include <pthread.h>
#include <stdlib.h>

#include "gemm.h"
#include "scratch.h"

void kino_attention(int tid, int nth, float *out, const float *q, const float *k, const float *v, const float *bias,
                    int B, int Lq, int Lk, int kv_len, int H, int D, float scale, int block, int q_offset);

#define MAX_THREADS 16

void kino_set_scratch(char *base);

/* Scratch for MAX_THREADS threads, owned by C (memory from JavaScript could be moved or collected). */
int KINO_EXPORT(kino_native_init)(void) {
  static char *block;
  if (!block) block = malloc(SCRATCH_BYTES * MAX_THREADS);
  if (block) kino_set_scratch(block);
  return block != 0;
}

typedef struct {
  int tid, nth, kind;
  float *out;
  const float *a, *k, *v;
  const void *w;
  int wdt, M, N, K, H, D;
  float scale;
} job_t;

static void *run_job(void *p) {
  const job_t *j = p;
  if (j->kind == 0) kino_gemm(j->tid, j->nth, j->out, j->a, j->w, j->wdt, 0, j->M, j->N, j->K, 0, 0, 0, 1, 1);
  else kino_attention(j->tid, j->nth, j->out, j->a, j->k, j->v, 0, 1, j->M, j->N, j->N, j->H, j->D, j->scale, 0, 0);
  return 0;
}

static void run_threads(job_t proto, int nth) {
  pthread_t threads[MAX_THREADS];
  job_t jobs[MAX_THREADS];
  nth = imax(1, imin(nth, MAX_THREADS));
  for (int t = 0; t < nth; t++) jobs[t] = proto, jobs[t].tid = t, jobs[t].nth = nth;
  for (int t = 1; t < nth; t++) pthread_create(&threads[t], 0, run_job, &jobs[t]);
  run_job(&jobs[0]);
  for (int t = 1; t < nth; t++) pthread_join(threads[t], 0);
}

/* out[M, N] = a[M, K] · w[N, K]ᵀ on nth threads. */
void KINO_EXPORT(kino_native_gemm)(int nth, float *out, const float *a, const void *w, int wdt, int M, int N, int K) {
  job_t j = {0, 0, 0, out, a, 0, 0, w, wdt, M, N, K, 0, 0, 0.0f};
  run_threads(j, nth);
}

/* Non-causal attention, batch 1, q/k/v [L, H, D], on nth threads. */
void KINO_EXPORT(kino_native_attention)(int nth, float *out, const float *q, const float *k, const float *v, int Lq,
                                        int Lk, int H, int D, float scale) {
  job_t j = {0, 0, 1, out, q, k, v, 0, 0, Lq, Lk, 0, H, D, scale};
  run_threads(j, nth);
}
#endif
