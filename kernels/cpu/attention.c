/*
 * Attention: out = softmax(scale · q·kᵀ + bias, masked) · v, flash-attention style: keys are
 * visited in blocks of KB and each query keeps a running max m, a running sum l and an unnormalised
 * output row, rescaled when the max grows (online softmax). The full [Lq, Lk] score matrix never
 * exists, so memory stays O(tile) for 32k-token sequences.
 *
 * Both products run on the GEMM micro-kernel: scores = Q tile [MR queries] × K block packed as
 * [D][NR-key panels], then output += P [KB][MR] × V rows (read in place, row stride H·D).
 * A unit of work is (batch, head, chunk of QC queries); threads take contiguous ranges of units.
 * Masks in this API always leave each query a prefix of the keys visible (kvLen, block-causal), so a
 * mask is a per-query key limit, and key blocks past the last query's limit are never touched.
 */
#include "gemm.h"
#include "kmath.h"
#include "scratch.h"

/* Queries per work unit and keys per block. Each key block is packed once per unit, so a larger QC
 * amortises the packing (128 measured faster than 64); QC·D accumulators, the packed queries and a
 * KB×D key block stay in L2 for D ≤ 512. KB is a whole number of NR-key panels. */
#define QC 128
#define KB (NR * (64 / NR))
#define D_MAX 512 /* checked on the TypeScript side (op-params.ts) */

_Static_assert(((size_t)(2 * QC + KB) * D_MAX + 2 * MR * KB + KB * NR + 2 * QC) * sizeof(float) <= SCRATCH_BYTES,
               "attention tiles exceed the scratch block");

typedef struct {
  const float *q, *k, *v, *bias;
  float *out;
  int Lq, Lk, kv_len, H, D, block, q_offset;
  float scale;
} attn_args;

static int visible(const attn_args *a, int i) {
  if (a->block <= 0) return a->kv_len;
  int lim = ((a->q_offset + i) / a->block + 1) * a->block;
  return lim < a->kv_len ? lim : a->kv_len;
}

/* Softmax bookkeeping for one query row over the scores s[0..lim) of this key block; writes the
 * probabilities into column r of pp ([KB][MR]) and rescales the row's accumulator. */
static void online_softmax_row(float *s, int lim, int kb, float *m, float *l, float *acc, int D, float *pp, int r) {
  float mx = *m;
  for (int j = 0; j < lim; j++) mx = s[j] > mx ? s[j] : mx;
  float corr = kexp(*m - mx), sum = 0.0f;
  int j = 0;
  for (; j + 4 <= lim; j += 4) {
    v4f p = vexp(vload(s + j) - vsplat(mx));
    sum += vsum(p);
    pp[j * MR + r] = p[0], pp[(j + 1) * MR + r] = p[1], pp[(j + 2) * MR + r] = p[2], pp[(j + 3) * MR + r] = p[3];
  }
  for (; j < lim; j++) sum += pp[j * MR + r] = kexp(s[j] - mx);
  for (; j < kb; j++) pp[j * MR + r] = 0.0f;
  if (corr != 1.0f)
    for (int d = 0; d < D; d++) acc[d] *= corr;
  *m = mx;
  *l = *l * corr + sum;
}

static void attention_unit(const attn_args *a, int b, int h, int q0, float *scratch) {
  const int D = a->D, HD = a->H * a->D, nq = imin(QC, a->Lq - q0);
  const int ntiles = (nq + MR - 1) / MR;
  float *qp = scratch;                 /* [ntiles][D][MR], pre-scaled */
  float *kp = qp + (size_t)QC * D;     /* [KB/NR][D][NR] */
  float *acc = kp + (size_t)KB * D;    /* [QC][D] */
  float *st = acc + (size_t)QC * D;    /* [MR][KB] scores */
  float *pp = st + MR * KB;            /* [KB][MR] probabilities */
  float *vt = pp + KB * MR;            /* [KB][NR] tail columns of V */
  float *m = vt + KB * NR, *l = m + QC;

  for (int t = 0; t < ntiles; t++)
    for (int r = 0; r < MR; r++) {
      int i = t * MR + r;
      const float *src = a->q + ((size_t)(b * a->Lq + q0 + i) * a->H + h) * D;
      for (int d = 0; d < D; d++) qp[((size_t)t * D + d) * MR + r] = i < nq ? src[d] * a->scale : 0.0f;
    }
  for (int i = 0; i < nq; i++) m[i] = -__builtin_inff(), l[i] = 0.0f;
  for (size_t x = 0; x < (size_t)nq * D; x++) acc[x] = 0.0f;

  const int kmax = visible(a, q0 + nq - 1);
  for (int j0 = 0; j0 < kmax; j0 += KB) {
    const int kb = imin(KB, kmax - j0);
    for (int p = 0; p < kb; p += NR)
      for (int c = 0; c < NR; c++) {
        float *dst = kp + (size_t)p * D + c;
        if (p + c < kb) {
          const float *src = a->k + (size_t)(b * a->Lk + j0 + p + c) * HD + (size_t)h * D;
          for (int d = 0; d < D; d++) dst[d * NR] = src[d];
        } else {
          for (int d = 0; d < D; d++) dst[d * NR] = 0.0f;
        }
      }
    const float *vblock = a->v + (size_t)(b * a->Lk + j0) * HD + (size_t)h * D;
    for (int t = 0; t < ntiles; t++) {
      const int rows = imin(MR, nq - t * MR);
      if (visible(a, q0 + t * MR + rows - 1) <= j0) continue; /* the whole tile is masked here */
      for (int p = 0; p < kb; p += NR) micro_kernel(D, qp + (size_t)t * D * MR, kp + (size_t)p * D, NR, st + p, KB, 0);
      for (int r = 0; r < MR; r++) {
        const int i = t * MR + r;
        int lim = r < rows ? imin(kb, visible(a, q0 + i) - j0) : 0;
        if (lim <= 0) {
          for (int j = 0; j < kb; j++) pp[j * MR + r] = 0.0f;
          continue;
        }
        float *s = st + r * KB;
        if (a->bias) {
          const float *bias = a->bias + ((size_t)h * a->Lq + q0 + i) * a->kv_len + j0;
          for (int j = 0; j < lim; j++) s[j] += bias[j];
        }
        online_softmax_row(s, lim, kb, m + i, l + i, acc + (size_t)i * D, D, pp, r);
      }
      float *arow = acc + (size_t)t * MR * D;
      int d0 = 0;
      for (; d0 + NR <= D; d0 += NR) {
        if (rows == MR) micro_kernel(kb, pp, vblock + d0, HD, arow + d0, D, 1);
        else micro_kernel_edge(kb, pp, vblock + d0, HD, arow + d0, D, rows, NR, 1);
      }
      if (d0 < D) { /* D not a multiple of NR: copy the last columns into a zero-padded panel */
        for (int j = 0; j < kb; j++)
          for (int c = 0; c < NR; c++) vt[j * NR + c] = d0 + c < D ? vblock[(size_t)j * HD + d0 + c] : 0.0f;
        micro_kernel_edge(kb, pp, vt, NR, arow + d0, D, rows, D - d0, 1);
      }
    }
  }
  for (int i = 0; i < nq; i++) {
    float *dst = a->out + ((size_t)(b * a->Lq + q0 + i) * a->H + h) * D;
    float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
    for (int d = 0; d < D; d++) dst[d] = acc[(size_t)i * D + d] * inv;
  }
}

void KINO_EXPORT(kino_attention)(int tid, int nth, float *out, const float *q, const float *k, const float *v,
                                 const float *bias, int B, int Lq, int Lk, int kv_len, int H, int D, float scale,
                                 int block, int q_offset) {
  attn_args a = {q, k, v, bias, out, Lq, Lk, kv_len, H, D, block, q_offset, scale};
  const int chunks = (Lq + QC - 1) / QC;
  range_t r = split_range((size_t)B * H * chunks, tid, nth);
  for (size_t u = r.lo; u < r.hi; u++) {
    int c = (int)(u % chunks), bh = (int)(u / chunks);
    attention_unit(&a, bh / H, bh % H, c * QC, thread_scratch(tid));
  }
}
