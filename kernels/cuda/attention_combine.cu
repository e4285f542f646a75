// The combine step of attention split over its keys: for every work item (query tile, head, batch item)
// computed in parts, merges the parts' slots (attention_split.cuh: each part's rows unnormalized, then
// per row its max logit in log2 units and its sum of exp2) into the item's output rows, exactly as the
// online softmax merges key tiles: with M the largest of the parts' row maxima,
// out = Σ 2^(m_j − M) · o_j / Σ 2^(m_j − M) · l_j, zeros for a row no part gave a key.
// Two ways of cutting items call it:
//   the Hopper attention's stream-K (attention_wgmma.cu): one block per range boundary; the block of an
//     item's first interior boundary does the item, its parts in slots found by kc_split_combine_item;
//   the mma.sync attention's split (attention_mma.cuh): every item in `splits` parts, slots
//     item · splits + part; one block per item.
#include "attention.cuh"
#include "attention_split.cuh"

namespace {
constexpr int THREADS = 256;
constexpr int MAX_ROWS = 128;  // query rows of an item: both kernels' tiles are 64 or 128 rows

// Merges parts 0 .. n-1 of item `item` (slot(j) its j-th part's slot) into out. Each row's largest max
// and its normalizer are worked out once, by one thread, for the D threads that write the row.
template <typename TO, typename Slot>
__device__ __forceinline__ void merge(TO* __restrict__ out, int64_t item, int n, Slot slot, int bq, int q_tiles, int Lq,
                                      int H, int D) {
  __shared__ float row_max[MAX_ROWS], row_inv[MAX_ROWS];
  const KcAttentionItem w = kc_attention_item(item, q_tiles, H, bq);
  const int rows = min(bq, Lq - w.q0);
  for (int r = threadIdx.x; r < rows; r += THREADS) {
    float M = -INFINITY, l = 0.f;
    for (int j = 0; j < n; j++) M = fmaxf(M, slot(j)[(int64_t)bq * D + r]);
    if (M != -INFINITY)
      for (int j = 0; j < n; j++) l += exp2f(slot(j)[(int64_t)bq * D + r] - M) * slot(j)[(int64_t)bq * D + bq + r];
    row_max[r] = M;
    row_inv[r] = l > 0.f ? 1.f / l : 0.f;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < rows * D; e += THREADS) {
    const int r = e / D, d = e % D;
    const float M = row_max[r];
    float o = 0.f;
    if (M != -INFINITY)
      for (int j = 0; j < n; j++) o += exp2f(slot(j)[(int64_t)bq * D + r] - M) * slot(j)[(int64_t)r * D + d];
    kc_put(out + (((int64_t)w.b * Lq + w.q0 + r) * H + w.h) * D + d, o * row_inv[r]);
  }
}

template <typename TO>
__global__ void __launch_bounds__(THREADS)
    attention_combine_kernel(TO* __restrict__ out, const float* __restrict__ partial, KcAttentionSplit split, int bq,
                             int q_tiles, int Lq, int H, int D) {
  int64_t item;
  int last;
  if (!kc_split_combine_item(split, blockIdx.x + 1, &item, &last)) return;
  const int first = blockIdx.x;  // the block whose range holds the item's first key tile
  const int64_t slot_floats = kc_split_slot_floats(bq, D);
  // planted: the item's last part left out
  const int parts = KC_PLANTED(35) ? last - first : last - first + 1;
  auto slot = [&](int j) { return partial + kc_split_slot(first + j, j == 0 ? 0 : 1) * slot_floats; };
  merge(out, item, parts, slot, bq, q_tiles, Lq, H, D);
}

template <typename TO>
__global__ void __launch_bounds__(THREADS)
    attention_combine_parts_kernel(TO* __restrict__ out, const float* __restrict__ partial, int splits, int bq,
                                   int q_tiles, int Lq, int H, int D) {
  const int64_t item = blockIdx.x, slot_floats = kc_split_slot_floats(bq, D);
  auto slot = [&](int j) { return partial + (item * splits + j) * slot_floats; };
  merge(out, item, splits, slot, bq, q_tiles, Lq, H, D);
}
}  // namespace

int kc_attention_combine_launch(KcContext* ctx, void* out, bool out_bf16, const float* partial, const KcAttentionSplit& split,
                                int bq, int q_tiles, int Lq, int H, int D) {
  if (split.grid < 2) return 0;
  if (bq > MAX_ROWS) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "the combine takes query tiles of at most 128 rows");
  const unsigned grid = (unsigned)(split.grid - 1);
  if (out_bf16)
    KC_LAUNCH(attention_combine_kernel<__nv_bfloat16>, grid, THREADS, 0, ctx->stream)(
        (__nv_bfloat16*)out, partial, split, bq, q_tiles, Lq, H, D);
  else
    KC_LAUNCH(attention_combine_kernel<float>, grid, THREADS, 0, ctx->stream)((float*)out, partial, split, bq, q_tiles, Lq, H, D);
  return kc_launched(ctx, "attention_combine_kernel");
}

int kc_attention_combine_parts_launch(KcContext* ctx, void* out, bool out_bf16, const float* partial, int splits, int bq,
                                      int q_tiles, int B, int Lq, int H, int D) {
  if (bq > MAX_ROWS) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "the combine takes query tiles of at most 128 rows");
  const unsigned grid = (unsigned)((int64_t)q_tiles * H * B);
  if (out_bf16)
    KC_LAUNCH(attention_combine_parts_kernel<__nv_bfloat16>, grid, THREADS, 0, ctx->stream)(
        (__nv_bfloat16*)out, partial, splits, bq, q_tiles, Lq, H, D);
  else
    KC_LAUNCH(attention_combine_parts_kernel<float>, grid, THREADS, 0, ctx->stream)((float*)out, partial, splits, bq, q_tiles, Lq, H, D);
  return kc_launched(ctx, "attention_combine_parts_kernel");
}
