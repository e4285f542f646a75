// The combine step of the Hopper attention's stream-K schedule (attention_split.cuh): for every work
// item that range boundaries cut into parts, merges the parts' slots into the item's output rows,
// exactly as the online softmax merges key tiles: with M the largest of the parts' row maxima (log2
// units), out = Σ 2^(m_j − M) · o_j / Σ 2^(m_j − M) · l_j, zeros for a row no part gave a key.
// One block per range boundary; the block of an item's first interior boundary does the item.
#include "attention.cuh"
#include "attention_split.cuh"

namespace {
constexpr int THREADS = 256;

template <typename TO>
__global__ void __launch_bounds__(THREADS)
    attention_combine_kernel(TO* __restrict__ out, const float* __restrict__ partial, KcAttentionSplit split, int bq,
                             int q_tiles, int Lq, int H, int D) {
  int64_t item;
  int last;
  if (!kc_split_combine_item(split, blockIdx.x + 1, &item, &last)) return;
  const int first = blockIdx.x;  // the block whose range holds the item's first key tile
  const KcAttentionItem w = kc_attention_item(item, q_tiles, H, bq);
  const int rows = min(bq, Lq - w.q0);
  const int64_t slot_floats = kc_split_slot_floats(bq, D);
  auto slot = [&](int c) { return partial + kc_split_slot(c, c == first ? 0 : 1) * slot_floats; };
  for (int e = threadIdx.x; e < rows * D; e += THREADS) {
    const int r = e / D, d = e % D;
    float M = -INFINITY;
    const int end = KC_PLANTED(35) ? last : last + 1;  // planted: the item's last part left out
    for (int c = first; c < end; c++) M = fmaxf(M, slot(c)[(int64_t)bq * D + r]);
    float o = 0.f, l = 0.f;
    if (M != -INFINITY) {
      for (int c = first; c < end; c++) {
        const float* s = slot(c);
        const float f = exp2f(s[(int64_t)bq * D + r] - M);
        o += f * s[(int64_t)r * D + d];
        l += f * s[(int64_t)bq * D + bq + r];
      }
    }
    kc_put(out + (((int64_t)w.b * Lq + w.q0 + r) * H + w.h) * D + d, l > 0.f ? o / l : 0.f);
  }
}
}  // namespace

int kc_attention_combine_launch(KcContext* ctx, void* out, bool out_bf16, const float* partial, const KcAttentionSplit& split,
                                int bq, int q_tiles, int Lq, int H, int D) {
  if (split.grid < 2) return 0;
  const unsigned grid = (unsigned)(split.grid - 1);
  if (out_bf16)
    KC_LAUNCH(attention_combine_kernel<__nv_bfloat16>, grid, THREADS, 0, ctx->stream)(
        (__nv_bfloat16*)out, partial, split, bq, q_tiles, Lq, H, D);
  else
    KC_LAUNCH(attention_combine_kernel<float>, grid, THREADS, 0, ctx->stream)((float*)out, partial, split, bq, q_tiles, Lq, H, D);
  return kc_launched(ctx, "attention_combine_kernel");
}
