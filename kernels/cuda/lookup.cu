// Table lookups: token embedding and the T5 relative position bias.
//
// CPU reference (src/runtime/reference.ts):
//   embedding        out[i, c] = table[ids[i], c]                 table [V, C] f32/bf16/f16 → f32
//   t5_relative_bias out[h, i, j] = table[bucket[j − i + Lq − 1], h]   table [numBuckets, H]
// The ids and the bucket of every relative position are small host arrays (the bucket function is
// op-params.ts `t5BucketTable`, float32 logs like PyTorch's); they are copied into scratch memory on
// the stream. From pageable host memory cudaMemcpyAsync returns once the bytes are staged, so the
// caller may reuse its array immediately.
#include "common.cuh"

namespace {
__global__ void embedding_kernel(float* out, const void* table, int dt, const int32_t* ids, int64_t n, int C) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / C, c = i % C;
    out[i] = kc_ld(table, dt, (int64_t)ids[r] * C + c);
  }
}

__global__ void t5_bias_kernel(float* out, const float* table, const int32_t* buckets, int H, int Lq, int Lk) {
  const int64_t n = (int64_t)H * Lq * Lk;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int j = (int)(i % Lk), q = (int)((i / Lk) % Lq), h = (int)(i / ((int64_t)Lk * Lq));
    out[i] = table[(int64_t)buckets[j - q + Lq - 1] * H + h];
  }
}

// Copies a host int32 array into scratch; returns null (rc set) on failure.
int32_t* upload_ints(KcContext* ctx, const int32_t* host, int64_t n, int* rc) {
  int32_t* dev = (int32_t*)kc_scratch(ctx, (size_t)n * 4);
  if (!dev) {
    *rc = KC_E_OOM;
    return nullptr;
  }
  *rc = kc_check(ctx, cudaMemcpyAsync(dev, host, (size_t)n * 4, cudaMemcpyHostToDevice, ctx->stream), "upload ids");
  return dev;
}
}  // namespace

// ids: host array of n row indices (the caller checked 0 ≤ id < V).
KC_API int kc_embedding(KcContext* ctx, float* out, const void* table, int dt, const int32_t* ids, int n, int C) {
  if (n <= 0 || C <= 0) return 0;
  int rc = 0;
  int32_t* dev = upload_ints(ctx, ids, n, &rc);
  if (!rc) {
    KC_LAUNCH(embedding_kernel, kc_grid_for(ctx, (int64_t)n * C), 256, 0, ctx->stream)(out, table, dt, dev, (int64_t)n * C, C);
    rc = kc_launched(ctx, "kc_embedding");
  }
  kc_scratch_release(ctx, dev);
  return rc;
}

// buckets: host array of Lq + Lk − 1 bucket indices, index rel + Lq − 1 for rel = j − i.
KC_API int kc_t5_relative_bias(KcContext* ctx, float* out, const float* table, const int32_t* buckets, int H, int Lq,
                               int Lk) {
  if (H <= 0 || Lq <= 0 || Lk <= 0) return 0;
  int rc = 0;
  int32_t* dev = upload_ints(ctx, buckets, (int64_t)Lq + Lk - 1, &rc);
  if (!rc) {
    KC_LAUNCH(t5_bias_kernel, kc_grid_for(ctx, (int64_t)H * Lq * Lk), 256, 0, ctx->stream)(out, table, dev, H, Lq, Lk);
    rc = kc_launched(ctx, "kc_t5_relative_bias");
  }
  kc_scratch_release(ctx, dev);
  return rc;
}
