// Attention forward: out = softmax(scale · q·kᵀ + bias, masked) · v, per batch item and head.
//
// CPU reference (src/runtime/reference.ts `attention`; layouts [B, L, H, D], row-major):
//   for b, h, i < Lq:
//     n = visible(i)   // kvLen, or min(kvLen, (floor((qOffset + i) / blockSize) + 1) · blockSize)
//     s[j] = scale · Σ_d q[b,i,h,d] · k[b,j,h,d] + bias[h,i,j]     for j < n
//     out[b,i,h,:] = Σ_j softmax(s)[j] · v[b,j,h,:]                 (zeros when n = 0)
// Under every mask we support the visible keys of a query are a prefix [0, n), so a q block only
// visits key tiles below the largest n of its rows (block-causal chunks skip the future).
//
// Kernels:
//   attention_mma_kernel (attention_mma.cuh) bf16 q/k/v (f32 inputs are rounded to bf16 first,
//     kc_attention does it), D ∈ {16, 32, 64, 128}, sm_80 and later (every GPU without a verified wgmma
//     kernel, the H200 included): FlashAttention-2 style. S = Q·Kᵀ and O += P·V with mma.sync m16n8k16,
//     online softmax in f32 on the S fragments (exp2 domain), P re-packed to bf16 straight from the S
//     accumulators. Blocks of 4 warps, two tilings:
//       128 query rows per block, 32 per warp (FlashAttention-2's forward tile at D 128 on A100/H100:
//         128 × 64 keys, 4 warps). Each K and V fragment a warp reads with ldmatrix feeds two MMAs, so
//         its shared-memory reads per FLOP are half those of 16 rows per warp, and each K/V byte
//         staged serves 128 queries. Q's fragments stay in registers at D ≤ 64; at D 128 (O 128 + S 64
//         registers) a warp re-reads them from shared memory per key tile, as FlashAttention-2 does,
//         which brings its reads to 5/8 of 16 rows per warp's.
//       64 query rows per block, 16 per warp, Q in registers: twice the blocks for the same queries.
//     The query tiles of a head and batch item are launched last-first (blockIdx.x counts from the last):
//     under a block-causal mask the later tiles see the most keys, so the longest blocks start first.
//     Keys in tiles of 64; K and V half-tiles through a 3-slot cp.async ring, each issued two halves
//     ahead (a whole tile of lead, as a 2-stage ring of K+V tiles, in 3/4 of its shared memory). A
//     warp skips the key tiles none of its rows sees and masks only the tiles some row sees in part.
//     Resources (ptxas, sm_80 / sm_90a; no spills — test/runtime/cuda-ptx.test.ts; f32 and bf16 out
//     alike), registers and dynamic shared memory:
//                 D 128            D 64             D 32             D 16
//       128 rows  255/255, 80 KiB  231/249, 40 KiB  190/181, 20 KiB  159/160, 10 KiB
//        64 rows  205/207, 64 KiB  149/151, 32 KiB  110/112, 16 KiB  106/107,  8 KiB
//     so 2 blocks (8 warps) per multiprocessor on A100, H100 and H200 (at D 128: 2 × 80 KiB of shared
//     memory fits A100's 164 KiB), 1 on the 100 KiB parts (RTX 4090, L40S) at D 128. The tiling model
//     (attention_mma_tiles.cuh) keeps these registers; test/runtime/cuda-ptx.test.ts holds it to them.
//   attention_wgmma_kernel (attention_wgmma.cu) sm_90a, D ∈ {64, 128}: FlashAttention-3 style — TMA
//     loads, wgmma, a producer and two ping-ponging consumer warpgroups, a persistent grid; 128-key
//     tiles, or at D 128 FlashAttention-3's 176 with KINO_CUDA_ATTENTION_BKV=176 (kc_last_kernel then
//     says "wgmma-bkv176"; auto takes neither until tools/gpu-check.sh has timed both).
//   attention_simt_kernel f32 everything, any D ≤ 512: one warp per query row, lanes split D. The
//     fallback for other head sizes and the exact path (kc_set_paths, KINO_CUDA_ATTENTION=f32).
// Choice (kc_attention): attention path 1 → SIMT for f32 inputs; path 2 (KINO_CUDA_ATTENTION=wgmma) →
// the wgmma kernel, or an error where it cannot run; path 3 → mma.sync where the shape allows; path 0
// (auto) → mma.sync where the shape allows, else SIMT. Auto moves to the wgmma kernel only once
// WGMMA_ATTENTION_VERIFIED (below) is true. KINO_CUDA_ATTENTION_BQ=64|128 forces the mma.sync kernel's
// query rows per block (tools/gpu-check.sh times both beside the pick); otherwise a model of the GPU's
// waves picks them per call (attention_mma_tiles.cuh; kc_attention_mma_rows says the pick):
//   per 64-key tile a block of 128 rows issues 4 warps · 2 · D m16n8k16 (1024 at D 128) and moves through
//   shared memory, at D 128, 4 warps · (32 K + 32 V + 16 Q) ldmatrix.x4 of 512 B and 32 KiB of cp.async:
//   192 KiB, 1536 cycles at 128 B a cycle; a block of 64 rows 512 MMAs and 4 · 64 · 512 B + 32 KiB =
//   160 KiB, 1280 cycles. At 2 cycles an MMA (A100) a tile takes 2048 and 1280 cycles, so 64 rows pay
//   1.25× per query (shared memory bounds them); at 1 (H100, H200) 1536 and 1280, 1.67× per query; at 4
//   (L40S, A10, the RTX parts) 4096 and 2048, the same per query. A block costs its key tiles (up to the
//   visible keys of its last row) · blocks per SM · those cycles; the blocks go in launch order to the
//   SMs · blocks-per-SM slots as they free (waves in closed form where all blocks load the same key
//   tiles, else a simulated list schedule, kept per context: about 0.2 ms for the clip below), and the
//   tiling that ends sooner wins, 128 rows on a tie.
//   Waves of 128 / 64 rows and the pick at Wan2.1-1.3B's self-attention (12 heads × 128, batch 1) and at
//   smaller grids (ᵗ: a tie):
//                                         A100, 108 SMs   H100/H200, 132   L40S, 142 SMs    A10, 72 SMs
//     blocks per SM, 128 / 64 rows        2 / 2           2 / 2            1 / 1            1 / 1
//     Lq 4680, any Lk; a streaming chunk  3 / 5 → 128     2 / 4 → 128      4 / 7 → 64       7 / 13 → 64
//       (444 / 888 blocks; under q_offset and kv_len every row of a chunk sees the same keys)
//     Lq 3120 (300 / 588 blocks)          2 / 3 → 64      2 / 3 → 128      3 / 5 → 64       5 / 9 → 64
//     Lq 1020 (96 / 192 blocks)           1 / 1 → 64      1 / 1 → 64       1 / 2 → 128ᵗ     2 / 3 → 64
//     Lq 1, a decode step (12 blocks)     1 / 1 → 64      1 / 1 → 64       1 / 1 → 64       1 / 1 → 64
//     block-causal clip, Lq = Lk = 18720  6.61 / 7.88     4.06 / 6.39      9.62 / 9.47      18.9 / 18.5
//       in blocks of 4680 (M cycles)      → 128           → 128            → 64             → 64
//   At Lq 4680 the A100 is close (3 waves at 2 · 2048 cycles a key tile against 5 at 2 · 1280: 4 %);
//   the H100 keeps 128 rows for every grid of more than one 128-row block per SM, since 64 rows cost
//   1.67× per query there; the 100 KiB parts, where the tensor cores bound both tilings alike, take
//   whichever fills its waves better. Launching the query tiles last-first shortens the block-causal clip
//   by 4.3 % on A100 (6.91 → 6.61 M cycles) and 5.2 % on H100 (4.28 → 4.06 M): the short blocks come
//   last and even out the last wave. These are predictions: tools/gpu-check-kernels.py bench times both
//   tilings beside the pick at the Wan shapes, 3120 and 1020, which an H200 checks for 132 SMs only.
//   Then, on the tiling taken, the model splits each block's keys into parts (grid.z over batch item ×
//   part; attention_combine.cu merges each item's parts, as the online softmax merges tiles) where every
//   block loads the same key tiles and 2–4 parts cut the waves' time by at least a tenth, each part
//   spanning at least 16 key tiles (attention_mma_tiles.cuh: kc_attention_mma_parts). Wan's streaming
//   chunk at 32760 keys: 444 blocks of 512 key tiles take 3 waves in an A100's 216 slots (1536 tiles a
//   slot), in 4 parts 9 waves of 128 (1152, −25 %); on 132 SMs 2 waves (1024) become 7 of 128 (896,
//   −12.5 %); a decode step's 12 blocks spread over 4 times the SMs. The L40S's 64-row blocks would
//   save 9 %, so they stay whole. KINO_CUDA_ATTENTION_PARTS=1…8 forces the parts, and
//   KINO_CUDA_ATTENTION_SPLIT=0 keeps them whole; gpu-check times the pick beside one part.
//
// Precision promises, per output element out[b,i,h,d], against the exact (f64) result. Notation:
// V = max_{j<n} |v[b,j,h,d]| (the max of |v| over the whole tensor is a valid, looser substitute),
// u = 2^-8 (bf16 unit roundoff), ε = 2.01·u · |scale| · max_{j<n} Σ_d |q[b,i,h,d] · k[b,j,h,d]| (D ≤ 256:
// the 0.01·u also covers the f32 sums of the logits).
//   tensor-core paths (mma.sync, wgmma): f32 q, k, v are rounded to bf16 (round-to-nearest-even); logits
//     accumulate in f32, the softmax is f32 (ex2.approx.ftz, relative error ~2^-22, weights below
//     2^-126 flushed to 0: at most n · 2^-126 · V), P is rounded to bf16 for P·V, which accumulates in f32 and is
//     normalized by the f32 sum of the unrounded P.
//       against the reference computed on bf16-rounded q, k, v:  |out − ref| ≤ 2u · V
//         (P's rounding gives ≤ u · V; the f32 terms lie orders of magnitude below the rest)
//       against the reference on the f32 inputs:                  |out − ref| ≤ (e^{2ε} − 1 + 3u) · V
//         (rounding q and k moves each logit by ≤ ε; rounding v adds u · V)
//     Both are worst-case bounds; on random data the error typically lands over 10 times below them.
//   SIMT path: every operation in f32 (fmaf, expf):  |out − ref| ≤ (2δ + n · 2^-23) · V, where
//     δ = (D + 2) · 2^-23 · max_{j<n} (|scale| · Σ_d |q·k| + |bias[h,i,j]|) bounds each logit's error;
//     on random data the error is below 1e-5 · V (what tools/gpu-check.sh holds it to).
//   Every path may store out as bf16 (the DiT's attention output feeds the O projection, which rounds
//   it to bf16 anyway): the f32 result rounded once more, ≤ 2^-8 · |out| on top of the bounds above.
//   q, k, v may come as bf16 (the DiT stores them so): then "rounded to bf16" costs nothing, and the
//   SIMT path (forced, or a head size without tensor cores) widens them exactly.
#include <string.h>
#include "attention.cuh"
#include "attention_mma.cuh"

namespace {
// ---- SIMT f32 kernel ---------------------------------------------------------------------------------
constexpr int SIMT_MAX_PER_LANE = 16;  // D ≤ 512

template <typename TI, typename TO>
__global__ void __launch_bounds__(128)
    attention_simt_kernel(TO* __restrict__ out, const TI* __restrict__ q, const TI* __restrict__ k,
                          const TI* __restrict__ v, const float* __restrict__ bias, int B, int Lq, int Lk,
                          int kv_len, int H, int D, float scale, int block_size, int q_offset) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;  // over B · H · Lq, query fastest
  if (row >= (int64_t)B * H * Lq) return;
  const int i = (int)(row % Lq), h = (int)((row / Lq) % H), b = (int)(row / ((int64_t)Lq * H));
  const TI* qr = q + (((int64_t)b * Lq + i) * H + h) * D;
  float qv[SIMT_MAX_PER_LANE], acc[SIMT_MAX_PER_LANE];
#pragma unroll
  for (int r = 0; r < SIMT_MAX_PER_LANE; r++) {
    int d = lane + 32 * r;
    qv[r] = d < D ? kc_f32(qr[d]) : 0.f;
    acc[r] = 0.f;
  }
  const int n = kc_visible_keys(i, kv_len, block_size, q_offset);
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j < n; j++) {
    const TI* kr = k + (((int64_t)b * Lk + j) * H + h) * D;
    const TI* vr = v + (((int64_t)b * Lk + j) * H + h) * D;
    float dot = 0.f;
#pragma unroll
    for (int r = 0; r < SIMT_MAX_PER_LANE; r++) {
      int d = lane + 32 * r;
      if (d < D) dot = fmaf(qv[r], kc_f32(kr[d]), dot);
    }
    float s = kc_warp_sum(dot) * scale + (bias ? bias[((int64_t)h * Lq + i) * kv_len + j] : 0.f);
    float nm = fmaxf(m, s), alpha = expf(m - nm), p = expf(s - nm);
    l = l * alpha + p;
    m = nm;
#pragma unroll
    for (int r = 0; r < SIMT_MAX_PER_LANE; r++) {
      int d = lane + 32 * r;
      if (d < D) acc[r] = acc[r] * alpha + p * kc_f32(vr[d]);
    }
  }
  float inv = l > 0.f ? 1.f / l : 0.f;
  TO* o = out + (((int64_t)b * Lq + i) * H + h) * D;
#pragma unroll
  for (int r = 0; r < SIMT_MAX_PER_LANE; r++) {
    int d = lane + 32 * r;
    if (d < D) kc_put(o + d, acc[r] * inv);
  }
}

template <typename TI, typename TO>
int launch_simt(KcContext* ctx, void* out, const void* q, const void* k, const void* v, const float* bias, int B, int Lq,
                int Lk, int kv_len, int H, int D, float scale, int block_size, int q_offset) {
  const int64_t rows = (int64_t)B * H * Lq;
  ctx->last_attention = "simt";
  auto kernel = attention_simt_kernel<TI, TO>;
  KC_LAUNCH(kernel, (unsigned)((rows + 3) / 4), 128, 0, ctx->stream)(
      (TO*)out, (const TI*)q, (const TI*)k, (const TI*)v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
  return kc_launched(ctx, "attention_simt_kernel");
}

// The SIMT kernel for f32 or bf16 q/k/v (bf16 widened exactly) and f32 or bf16 out.
int launch_simt_any(KcContext* ctx, void* out, bool out_bf16, const void* q, const void* k, const void* v, bool in_bf16,
                    const float* bias, int B, int Lq, int Lk, int kv_len, int H, int D, float scale, int block_size,
                    int q_offset) {
  if (in_bf16)
    return out_bf16 ? launch_simt<__nv_bfloat16, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset)
                    : launch_simt<__nv_bfloat16, float>(ctx, out, q, k, v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
  return out_bf16 ? launch_simt<float, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset)
                  : launch_simt<float, float>(ctx, out, q, k, v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
}

// f32 → bf16 of the first `rows` tokens of each batch item of a [B, L, H, D] tensor (a KV cache is
// converted only up to kvLen). Returns the scratch block or null.
void* to_bf16_rows(KcContext* ctx, const float* src, int B, int L, int rows, int64_t row_elems, int* rc) {
  void* dst = kc_scratch(ctx, (size_t)B * rows * row_elems * 2 + 16);
  if (!dst) {
    *rc = KC_E_OOM;
    return nullptr;
  }
  for (int b = 0; b < B && *rc == 0; b++)
    *rc = kc_convert_launch(ctx, src + (int64_t)b * L * row_elems, KC_F32,
                            (__nv_bfloat16*)dst + (int64_t)b * rows * row_elems, KC_BF16, (int64_t)rows * row_elems);
  return dst;
}
}  // namespace

// The wgmma kernel has not yet passed tools/gpu-check.sh on an H200. Until it has, auto (attention
// path 0) keeps choosing the proven mma.sync kernel, and the wgmma kernel runs only where path 2 forces
// it (kc_set_paths, KINO_CUDA_ATTENTION=wgmma). Set to true once that check passed on an H200.
constexpr bool WGMMA_ATTENTION_VERIFIED = false;

namespace {
// The mma.sync kernel's query rows per block: KINO_CUDA_ATTENTION_BQ's (ctx->attention_bq), else the
// model's (attention_mma_tiles.cuh). A pick the model simulates is kept for the next calls of the same
// shape (a DiT's layers repeat it), so that only the first pays for the simulation.
int mma_rows(KcContext* ctx, int B, int Lq, int H, int D, int kv_len, int block_size, int q_offset) {
  if (ctx->attention_bq) return ctx->attention_bq;
  const KcAttentionCall c{B, Lq, H, D, kv_len, block_size, q_offset};
  if (!kc_attention_mma_uneven(c)) return kc_attention_mma_pick_rows(kc_mma_gpu(ctx), c);
  const int key[7] = {B, Lq, H, D, kv_len, block_size, q_offset};
  for (const int* kept : ctx->attention_rows_kept)
    if (kept[7] && memcmp(kept, key, sizeof key) == 0) return kept[7];
  int* slot = ctx->attention_rows_kept[ctx->attention_rows_next];
  constexpr int KEPT = sizeof ctx->attention_rows_kept / sizeof ctx->attention_rows_kept[0];
  ctx->attention_rows_next = (ctx->attention_rows_next + 1) % KEPT;
  memcpy(slot, key, sizeof key);
  return slot[7] = kc_attention_mma_pick_rows(kc_mma_gpu(ctx), c);
}

// The parts the mma.sync kernel splits each block's keys into (attention_mma_tiles.cuh):
// KINO_CUDA_ATTENTION_PARTS's (ctx->attention_parts), none under KINO_CUDA_ATTENTION_SPLIT=0, else the
// model's for the tiling taken.
int mma_parts(KcContext* ctx, int B, int Lq, int H, int D, int kv_len, int block_size, int q_offset, int rows) {
  if (ctx->attention_parts) return ctx->attention_parts;
  if (ctx->attention_split == 0) return 1;
  return kc_attention_mma_parts(kc_mma_gpu(ctx), KcAttentionCall{B, Lq, H, D, kv_len, block_size, q_offset}, rows == 64 ? 1 : 2).parts;
}

// bf16 q, k, v: the tensor-core kernel the attention path asks for.
int launch_tensor_core(KcContext* ctx, void* out, bool out_bf16, const void* q, const void* k, const void* v, const float* bias,
                       int B, int Lq, int Lkv, int kv_len, int H, int D, float scale, int block_size, int q_offset) {
  const bool wgmma = ctx->attention_path == 2 || (ctx->attention_path == 0 && WGMMA_ATTENTION_VERIFIED &&
                                                   kc_attention_wgmma_supported(ctx, D) && kc_attention_wgmma_aligned(q, k, v));
  ctx->last_attention = wgmma ? "wgmma" : "mma.sync";
  if (wgmma)
    return kc_attention_wgmma_launch(ctx, out, out_bf16, q, k, v, bias, B, Lq, Lkv, kv_len, H, D, scale, block_size,
                                     q_offset);
  using namespace kc_attention_mma;
  const int rows = mma_rows(ctx, B, Lq, H, D, kv_len, block_size, q_offset);
  const int parts = mma_parts(ctx, B, Lq, H, D, kv_len, block_size, q_offset, rows);
  if (rows == 64)
    return out_bf16 ? launch_d<1, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, D, scale, block_size, q_offset, parts)
                    : launch_d<1, float>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, D, scale, block_size, q_offset, parts);
  return out_bf16 ? launch_d<2, __nv_bfloat16>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, D, scale, block_size, q_offset, parts)
                  : launch_d<2, float>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, D, scale, block_size, q_offset, parts);
}
}  // namespace

// q [B, Lq, H, D], k and v [B, Lk, H, D] of dtype `dt` (f32, or bf16 for the tensor-core kernels
// directly); out [B, Lq, H, D] of out_dt (f32 or bf16). bias [H, Lq, kv_len] f32 or null. block_size 0 =
// no mask. bf16 inputs go to the SIMT kernel (widened exactly) where the exact path is forced or the
// shape rules the tensor cores out.
KC_API int kc_attention(KcContext* ctx, void* out, const void* q, const void* k, const void* v, int dt,
                        const float* bias, int B, int Lq, int Lk, int kv_len, int H, int D, float scale,
                        int block_size, int q_offset, int out_dt) {
  ctx->last_attention = "";
  if (dt != KC_F32 && dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "q/k/v must be f32 or bf16");
  if (out_dt != KC_F32 && out_dt != KC_BF16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "out must be f32 or bf16");
  if (B <= 0 || Lq <= 0 || H <= 0 || D <= 0) return 0;
  // Keys from kv_len on are never read, keys past Lk do not exist: the kernels (and the wgmma kernel's
  // tensor maps, whose rows end at kv_len) would read past k and v. backends/cuda.ts checks this too.
  if (kv_len < 0 || kv_len > Lk) return kc_fail(ctx, KC_E_ARG, "kc_attention", "kv_len must be 0 .. Lk");
  const bool exact = ctx->attention_path == 1, wgmma_forced = ctx->attention_path == 2, out_bf16 = out_dt == KC_BF16;
  if (wgmma_forced && !kc_attention_wgmma_supported(ctx, D))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention",
                   "attention path 2 (wgmma) needs an sm_90 GPU, the driver's cuTensorMapEncodeTiled and D 64 or 128");
  if (kv_len == 0)
    return kc_check(ctx, cudaMemsetAsync(out, 0, (size_t)B * Lq * H * D * (out_bf16 ? 2 : 4), ctx->stream), "kc_attention");
  // The tensor-core kernels store pairs (float2, or two bf16), so out must be 8-byte aligned (a view may
  // not be). A forced wgmma path reports misalignment as an error instead of falling back.
  const bool tc_shape =
      (D == 16 || D == 32 || D == 64 || D == 128) && ctx->sm_major >= 8 && ((uintptr_t)out & 7) == 0;
  if (dt == KC_BF16) {
    const bool tc = tc_shape && !((((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) & 15));
    if (wgmma_forced || (tc && !exact))
      return launch_tensor_core(ctx, out, out_bf16, q, k, v, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
    return launch_simt_any(ctx, out, out_bf16, q, k, v, true, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
  }
  if (exact || (!tc_shape && !wgmma_forced))
    return launch_simt_any(ctx, out, out_bf16, q, k, v, false, bias, B, Lq, Lk, kv_len, H, D, scale, block_size, q_offset);
  int rc = 0;
  const int64_t row = (int64_t)H * D;
  void* q16 = to_bf16_rows(ctx, (const float*)q, B, Lq, Lq, row, &rc);
  void* k16 = rc ? nullptr : to_bf16_rows(ctx, (const float*)k, B, Lk, kv_len, row, &rc);
  void* v16 = rc ? nullptr : to_bf16_rows(ctx, (const float*)v, B, Lk, kv_len, row, &rc);
  if (!rc)
    rc = launch_tensor_core(ctx, out, out_bf16, q16, k16, v16, bias, B, Lq, kv_len, kv_len, H, D, scale, block_size,
                            q_offset);
  kc_scratch_release(ctx, q16);
  kc_scratch_release(ctx, k16);
  kc_scratch_release(ctx, v16);
  return rc;
}

// The query rows per block (128 or 64) the mma.sync kernel takes for such a call on this context (0
// where it does not take D): for tools/gpu-check-kernels.py bench to print beside its timings of both.
KC_API int kc_attention_mma_rows(KcContext* ctx, int B, int Lq, int H, int D, int kv_len, int block_size, int q_offset) {
  if (D != 16 && D != 32 && D != 64 && D != 128) return 0;
  return mma_rows(ctx, B, Lq, H, D, kv_len, block_size, q_offset);
}
// ... and the parts it splits each block's keys into (1: none).
KC_API int kc_attention_mma_parts(KcContext* ctx, int B, int Lq, int H, int D, int kv_len, int block_size, int q_offset) {
  if (D != 16 && D != 32 && D != 64 && D != 128) return 0;
  return mma_parts(ctx, B, Lq, H, D, kv_len, block_size, q_offset, mma_rows(ctx, B, Lq, H, D, kv_len, block_size, q_offset));
}
