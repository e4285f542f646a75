// The mma.sync (sm_80+) attention kernel, FlashAttention-2 style, and its launch; attention.cu's header
// says what it computes, why these tiles, and when kc_attention takes which.
//
// A block of 4 warps owns BQ query rows of one head, 16·MI rows per warp (MI = 2: 128-row blocks; MI = 1:
// 64-row ones), and streams the keys past them in tiles of 64. S = Q·Kᵀ and O += P·V are mma.sync
// m16n8k16 on bf16 with f32 accumulators; the online softmax runs in f32 on the S fragments (exp2
// domain) and P is re-packed to bf16 straight from them. With MI = 2 every K and V fragment a warp
// loads with ldmatrix feeds two MMAs (two 16-row slices), which halves the shared-memory reads per
// FLOP against 16 rows per warp.
//
// Shared memory: the block's Q tile, then a ring of three slots of one 64-key half-tile each (K tile t
// is item 2t, V tile t item 2t + 1, item i in slot i % 3). Each item is one cp.async group, issued two
// items ahead: while a warp multiplies K tile t, K tile t + 1 and V tile t are in flight, the same
// lead a two-stage ring of whole K+V tiles gives, in three quarters of its space (D 128: 32 + 48 KiB).
#pragma once
#include "attention.cuh"
#include "attention_mma_tiles.cuh"

namespace kc_attention_mma {
constexpr int WARPS = KC_ATTENTION_MMA_WARPS, BKV = KC_ATTENTION_MMA_BKV, SLOTS = KC_ATTENTION_MMA_SLOTS;

template <int D, int MI>
struct Tile {
  static constexpr int ROWS = 16 * MI;                        // query rows per warp
  static constexpr int BQ = WARPS * ROWS;                     // query rows per block
  // Q's A fragments stay in registers across key tiles where they fit beside O and S (MI·D/4 of them);
  // at D 128 with 32 rows a warp re-reads them from shared memory for every key tile, as FlashAttention-2.
  static constexpr bool Q_IN_REGISTERS = MI * D <= 128;
  static constexpr int CHUNKS = D / 8;                        // 16-byte chunks per row
  static constexpr int XOR = CHUNKS >= 8 ? 7 : CHUNKS - 1;    // swizzle: chunk ^ (row & XOR)
  static constexpr int BYTES_Q = BQ * D * 2, BYTES_ITEM = BKV * D * 2;
  static constexpr int SMEM = BYTES_Q + SLOTS * BYTES_ITEM;
  static_assert(BQ == WARPS * 16 * MI && SMEM == (BQ + SLOTS * BKV) * D * 2 && Q_IN_REGISTERS == (MI * D <= 128),
                "the tiling is the one attention_mma_tiles.cuh models");
  __device__ static uint32_t at(int row, int chunk) { return (uint32_t)(row * D * 2 + ((chunk ^ (row & XOR)) << 4)); }
  // at(row, 2·kk + c) for c < 2 is at(row, c) ^ (kk << 5): the swizzle flips chunk bits only, within the row.
  __device__ static uint32_t step(uint32_t at_c, int kk) { return at_c ^ (uint32_t)(kk << 5); }
};

// Stages ROWS rows (from `base`) of one head of a [B, L, H, D] bf16 tensor; rows ≥ limit are zero-filled
// so that masked keys contribute exactly 0 · 0 (never 0 · garbage) and padding query rows stay finite.
// A thread copies the same 16-byte chunk of every ROW_STEP-th row; walking one pointer down the rows
// (instead of a fresh 64-bit offset per row) keeps the copies' addresses out of the registers.
template <int D, int MI, int ROWS>
__device__ __forceinline__ void load_rows(uint32_t dst, const __nv_bfloat16* base, int limit, int H) {
  using T = Tile<D, MI>;
  constexpr int ROW_STEP = WARPS * 32 / T::CHUNKS;
  static_assert(ROWS % ROW_STEP == 0 && ROW_STEP % (T::XOR + 1) == 0, "a thread's rows share one swizzle");
  const int row0 = threadIdx.x / T::CHUNKS, chunk = threadIdx.x % T::CHUNKS;
  const int64_t stride = (int64_t)ROW_STEP * H * D;
  const __nv_bfloat16* src = base + (int64_t)row0 * H * D + chunk * 8;
  dst += T::at(row0, chunk);
#pragma unroll
  for (int i = 0; i < ROWS / ROW_STEP; i++, src += stride) {
    const bool ok = row0 + i * ROW_STEP < limit;
    kc_cp_async16(dst + i * ROW_STEP * D * 2, ok ? src : base, ok ? 16 : 0);
  }
}

template <int D, int MI, typename TO>
__global__ void __launch_bounds__(WARPS * 32, 2)
    attention_mma_kernel(TO* __restrict__ out, const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                         const __nv_bfloat16* __restrict__ v, const float* __restrict__ bias, int Lq, int Lkv,
                         int kv_len, int H, float scale, int block_size, int q_offset, int splits,
                         float* __restrict__ partial) {
  using T = Tile<D, MI>;
  const uint32_t sq = kc_smem_addr(kc_dynamic_smem());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Query tiles last-first: under a block-causal mask the later tiles see the most keys, so the longest
  // blocks of each head start first and the short ones fill the last wave (attention_mma_tiles.cuh).
  const int q0 = ((int)gridDim.x - 1 - (int)blockIdx.x) * T::BQ, h = blockIdx.y;
  // Split over the keys (splits > 1): grid.z runs over batch item × part, each part takes an equal share
  // of the block's key tiles and leaves its unnormalized rows for attention_combine.cu. (The epilogue
  // derives both again from kc_ctaid_z: at D 128 the kernel has no register to keep them in.)
  const int b = (int)blockIdx.z / splits, part = (int)blockIdx.z % splits;
  const __nv_bfloat16* qb = q + ((int64_t)b * Lq * H + h) * D;
  const __nv_bfloat16* kb = k + ((int64_t)b * Lkv * H + h) * D;
  const __nv_bfloat16* vb = v + ((int64_t)b * Lkv * H + h) * D;

  // Visible keys grow with the query row (attention_mask.cuh), so the block's last row bounds the tiles
  // the block loads, a warp's last row the tiles it multiplies, and its first row the tiles that need no
  // mask. (Planted 36: the block's tiles counted from its index rather than its query tile.)
  const int tile0 = KC_PLANTED(36) ? (int)blockIdx.x * T::BQ : q0;
  const int kv_end = kc_visible_keys(min(tile0 + T::BQ, Lq) - 1, kv_len, block_size, q_offset);
  const int ntiles = (kv_end + BKV - 1) / BKV;
  const int t_begin = KC_PLANTED(37) ? 0 : part * ntiles / splits, t_end = (part + 1) * ntiles / splits;  // planted: every part from tile 0
  const int w0 = q0 + warp * T::ROWS;
  const int warp_end = w0 < Lq ? kc_visible_keys(min(w0 + T::ROWS, Lq) - 1, kv_len, block_size, q_offset) : 0;
  const int warp_full = w0 < Lq ? kc_visible_keys(w0, kv_len, block_size, q_offset) : 0;
  // The rows this thread accumulates: fragment rows lane/4 (half 0) and lane/4 + 8 (half 1) of each
  // 16-row slice mi; rows past Lq see no key.
  int lim[MI][2];
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int half = 0; half < 2; half++) {
      int row = w0 + mi * 16 + half * 8 + lane / 4;
      lim[mi][half] = row < Lq ? kc_visible_keys(row, kv_len, block_size, q_offset) : 0;
    }
  const float sl2 = scale * KC_LOG2E;
  // This lane's ldmatrix offsets at k step 0 (T::step moves them along D): its Q row, K row, V row.
  const uint32_t q_at = T::at(warp * T::ROWS + (lane % 16), lane / 16);
  const uint32_t k_at = T::at((lane % 8) + (lane / 16) * 8, (lane / 8) % 2);
  const uint32_t v_at = T::at((lane % 8) + (KC_PLANTED(5) ? lane / 16 : (lane / 8) % 2) * 8, lane / 16);

  auto slot = [&](int item) { return sq + T::BYTES_Q + (uint32_t)(item % SLOTS) * T::BYTES_ITEM; };
  // One cp.async group per ring item (item 2t: K tile t, 2t + 1 its V tile; the ring is modular, so a
  // part starts it wherever its first tile falls), empty past the part's last tile so that the wait
  // counts stay uniform.
  auto issue = [&](int item) {
    const int t = item / 2;
    if (t < t_end) load_rows<D, MI, BKV>(slot(item), (item & 1 ? vb : kb) + (int64_t)t * BKV * H * D, kv_end - t * BKV, H);
    kc_cp_async_commit();
  };
  load_rows<D, MI, T::BQ>(sq, qb + (int64_t)q0 * H * D, Lq - q0, H);
  issue(2 * t_begin);  // one group with Q
  issue(2 * t_begin + 1);

  constexpr int QF = T::Q_IN_REGISTERS ? MI : 1, QK = T::Q_IN_REGISTERS ? D / 16 : 1;
  uint32_t qf[QF][QK][4];
  float o[MI][D / 8][4] = {};
  float m[MI][2], l[MI][2];  // per row: running max (log2 units) and partial sum of this thread's columns
#pragma unroll
  for (int mi = 0; mi < MI; mi++) m[mi][0] = m[mi][1] = -INFINITY, l[mi][0] = l[mi][1] = 0.f;

  for (int t = t_begin; t < t_end; t++) {
    const bool active = t * BKV < (KC_PLANTED(30) ? warp_full : warp_end);  // warp-uniform: a row of this warp sees a key of tile t
    const bool edge = (t + 1) * BKV > warp_full;  // ... and some key of it is hidden from some row
    if (KC_PLANTED(29)) kc_cp_async_wait<2>();
    else kc_cp_async_wait<1>();  // K tile t (with the first: Q) landed for this thread's copies,
    __syncthreads();        // for everyone's; and every warp is done with V tile t - 1, whose slot this refills
    issue(2 * t + 2);
    if constexpr (T::Q_IN_REGISTERS) {
      if (t == t_begin) {
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
          for (int kk = 0; kk < D / 16; kk++) {
            kc_ldmatrix_x4(sq + T::step(q_at, kk) + mi * 16 * D * 2, qf[mi][kk][0], qf[mi][kk][1], qf[mi][kk][2], qf[mi][kk][3]);
          }
      }
    }

    float s[MI][BKV / 8][4] = {};
    if (active) {
      // S = Q · Kᵀ: ROWS rows × 64 keys, eight 8-key fragments per 16-row slice.
      const uint32_t ks = slot(2 * t);
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        uint32_t qs[MI][4];
        if constexpr (!T::Q_IN_REGISTERS) {
#pragma unroll
          for (int mi = 0; mi < MI; mi++) {
            kc_ldmatrix_x4(sq + T::step(q_at, kk) + mi * 16 * D * 2, qs[mi][0], qs[mi][1], qs[mi][2], qs[mi][3]);
          }
        }
#pragma unroll
        for (int p = 0; p < BKV / 16; p++) {
          uint32_t kf[2][2];
          kc_ldmatrix_x4(ks + T::step(k_at, kk) + p * 16 * D * 2, kf[0][0], kf[0][1], kf[1][0], kf[1][1]);
#pragma unroll
          for (int mi = 0; mi < MI; mi++) {
            const uint32_t* a;
            if constexpr (T::Q_IN_REGISTERS) a = qf[mi][kk];
            else a = qs[mi];
            kc_mma_16816<false>(s[mi][2 * p], a, kf[0]);
            kc_mma_16816<false>(s[mi][2 * p + 1], a, kf[1]);
          }
        }
      }

      // Scale, bias and (on a tile some row cannot wholly see) mask in the log2 domain, then the
      // online-softmax update of each row.
#pragma unroll
      for (int mi = 0; mi < MI; mi++) {
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < BKV / 8; j++) {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int half = e / 2, col = t * BKV + j * 8 + (lane % 4) * 2 + (e & 1), lm = lim[mi][half];
            float x = s[mi][j][e] * sl2;
            if (bias && col < lm)
              x += bias[((int64_t)h * Lq + w0 + mi * 16 + half * 8 + lane / 4) * kv_len + col] * KC_LOG2E;
            if (edge && !(KC_PLANTED(4) ? col <= lm : col < lm)) x = -INFINITY;
            s[mi][j][e] = x;
            mx[half] = fmaxf(mx[half], x);
          }
        }
        float alpha[2], base[2];
#pragma unroll
        for (int half = 0; half < 2; half++) {
          mx[half] = fmaxf(mx[half], __shfl_xor_sync(0xffffffffu, mx[half], 1));
          mx[half] = fmaxf(mx[half], __shfl_xor_sync(0xffffffffu, mx[half], 2));
          const float next = fmaxf(m[mi][half], mx[half]);
          // A row with nothing visible yet keeps max -inf; subtracting 0 instead keeps exp2 at 0, not NaN.
          base[half] = next == -INFINITY ? 0.f : next;
          alpha[half] = kc_exp2_ftz(m[mi][half] - base[half]);
          m[mi][half] = next;
          l[mi][half] *= alpha[half];
        }
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
          o[mi][j][0] *= alpha[0];
          o[mi][j][1] *= alpha[0];
          o[mi][j][2] *= KC_PLANTED(6) ? alpha[0] : alpha[1];
          o[mi][j][3] *= alpha[1];
        }
#pragma unroll
        for (int j = 0; j < BKV / 8; j++) {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            s[mi][j][e] = kc_exp2_ftz(s[mi][j][e] - base[e / 2]);
            l[mi][e / 2] += s[mi][j][e];
          }
        }
      }
    }

    kc_cp_async_wait<1>();  // V tile t landed for this thread's copies,
    __syncthreads();        // for everyone's; and every warp is done with K tile t, whose slot this refills
    issue(2 * t + 3);
    if (active) {
      // O += P · V. The S accumulators of two neighbouring 8-key fragments are exactly the A operand of
      // one 16-key step, so P never leaves registers; each V fragment serves every 16-row slice.
      const uint32_t vs = slot(2 * t + 1);
#pragma unroll
      for (int kstep = 0; kstep < BKV / 16; kstep++) {
        uint32_t pf[MI][4];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
          pf[mi][0] = kc_pack_bf16(s[mi][2 * kstep][0], s[mi][2 * kstep][1]);
          pf[mi][1] = kc_pack_bf16(s[mi][2 * kstep][2], s[mi][2 * kstep][3]);
          pf[mi][2] = kc_pack_bf16(s[mi][2 * kstep + 1][0], s[mi][2 * kstep + 1][1]);
          pf[mi][3] = kc_pack_bf16(s[mi][2 * kstep + 1][2], s[mi][2 * kstep + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
          uint32_t vf[2][2];
          kc_ldmatrix_x4_trans(vs + T::step(v_at, dp) + kstep * 16 * D * 2, vf[0][0], vf[0][1], vf[1][0], vf[1][1]);
#pragma unroll
          for (int mi = 0; mi < MI; mi++) {
            kc_mma_16816<false>(o[mi][2 * dp], pf[mi], vf[0]);
            kc_mma_16816<false>(o[mi][2 * dp + 1], pf[mi], vf[1]);
          }
        }
      }
    }
  }
  kc_cp_async_wait<0>();

  const int z = (int)kc_ctaid_z(), b_out = z / splits, part_out = z % splits;
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int half = 0; half < 2; half++) {
      float sum = l[mi][half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = w0 + mi * 16 + half * 8 + lane / 4;
      if (row >= Lq) continue;
      if (splits > 1) {
        // This part's rows as the combine merges them: unnormalized, with the row's max and sum.
        // the item as kc_attention_item numbers it: the query tiles of a head last-first, as blockIdx.x
        const int64_t item = ((int64_t)b_out * H + h) * gridDim.x + blockIdx.x;
        float* mine = partial + (item * splits + part_out) * kc_split_slot_floats(T::BQ, D);
        const int r = row - q0;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
          kc_put2(mine + r * D + j * 8 + (lane % 4) * 2, o[mi][j][2 * half], o[mi][j][2 * half + 1]);
        if (lane % 4 == 0) mine[T::BQ * D + r] = m[mi][half], mine[T::BQ * D + T::BQ + r] = sum;
        continue;
      }
      const float inv = sum > 0.f ? 1.f / sum : 0.f;  // a row that sees no key: zeros
      TO* dst = out + (((int64_t)b_out * Lq + row) * H + h) * D + (lane % 4) * 2;
#pragma unroll
      for (int j = 0; j < D / 8; j++) kc_put2(dst + j * 8, o[mi][j][2 * half] * inv, o[mi][j][2 * half + 1] * inv);
    }
}

template <int D, int MI, typename TO>
int launch(KcContext* ctx, void* out, const void* q, const void* k, const void* v, const float* bias, int B, int Lq,
           int Lkv, int kv_len, int H, float scale, int block_size, int q_offset, int splits) {
  using T = Tile<D, MI>;
  static bool configured = false;
  auto kernel = attention_mma_kernel<D, MI, TO>;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM),
                    "cudaFuncSetAttribute(attention_mma_kernel)"));
    configured = true;
  }
  const int q_tiles = (Lq + T::BQ - 1) / T::BQ;
  float* partial = nullptr;
  if (splits > 1) {
    partial = (float*)kc_scratch(ctx, (size_t)q_tiles * H * B * splits * kc_split_slot_floats(T::BQ, D) * sizeof(float));
    if (!partial) return kc_fail(ctx, KC_E_OOM, "kc_attention", "no memory for the split attention's partial results");
  }
  dim3 grid(q_tiles, H, B * splits);
  KC_LAUNCH(kernel, grid, WARPS * 32, T::SMEM, ctx->stream)(
      (TO*)out, (const __nv_bfloat16*)q, (const __nv_bfloat16*)k, (const __nv_bfloat16*)v, bias, Lq, Lkv, kv_len, H, scale,
      block_size, q_offset, splits, partial);
  int rc = kc_launched(ctx, "attention_mma_kernel");
  if (!rc && partial) rc = kc_attention_combine_parts_launch(ctx, out, sizeof(TO) == 2, partial, splits, T::BQ, q_tiles, B, Lq, H, D);
  if (partial) kc_scratch_release(ctx, partial);  // stream-ordered: the next user runs after the combine
  return rc;
}

template <int MI, typename TO>
int launch_d(KcContext* ctx, void* out, const void* q, const void* k, const void* v, const float* bias, int B, int Lq,
             int Lkv, int kv_len, int H, int D, float scale, int block_size, int q_offset, int splits) {
  switch (D) {
    case 16: return launch<16, MI, TO>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset, splits);
    case 32: return launch<32, MI, TO>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset, splits);
    case 64: return launch<64, MI, TO>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset, splits);
    case 128: return launch<128, MI, TO>(ctx, out, q, k, v, bias, B, Lq, Lkv, kv_len, H, scale, block_size, q_offset, splits);
  }
  return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_attention", "tensor-core attention needs D in {16, 32, 64, 128}");
}
}  // namespace kc_attention_mma
