// The TMA-store epilogue of the persistent wgmma GEMM (gemm_wgmma_persistent.cu with TMA_OUT; gemm path
// 6, KINO_CUDA_GEMM=wgmma-persistent-tma): every op of the register epilogue (kc_wgmma_gemm_store,
// gemm_wgmma.cuh; gemm_epilogue.cuh: bias, GELU-tanh, gated residual, split; f32 or bf16 out) applied
// to the accumulator registers as there, the results staged in shared memory and written out by TMA.
//
// Why: in the persistent kernel both consumer warpgroups store each tile before either starts the next
// tile's mainloop, so the store is on the tensor cores' critical path. The register epilogue writes
// 8-byte pairs (4 for bf16) scattered over 16 rows per warp instruction and must issue every one of
// them; here each thread writes its results to shared memory (a few cycles, conflict-free below), one
// thread issues one TMA store per 64 × 128-byte chunk, and the global writes drain while the consumers
// already multiply the next tile. The residual, where there is one, is still read from global memory
// as in the register epilogue (each thread reads exactly the elements it then stages).
//
// Chunks: a consumer's 64 × BN results leave in chunks of 64 rows × 128 bytes (32 f32 or 64 bf16
// columns), staged in the consumer's two 8 KiB buffers in turn, with the 128-byte swizzle: the 16-byte
// chunk x of row r at x ^ (r % 8). With the accumulator layout (gemm_wgmma.cuh: lane = 4g + q holds
// rows g and g + 8, columns 2q, 2q + 1 of each group of 8) a warp's store of one column group covers
// rows g = 0..7, so the XOR spreads them over all 32 banks: one wavefront per 128 bytes (bf16: 4-byte
// pairs, 8 rows × 16 bytes) or two per 256 (f32: 8-byte pairs). bf16 at BN = 224 is 3.5 chunks: the
// last 32 columns (64-byte rows) go through a second map without a swizzle (`tail`; a 128-byte swizzle
// needs 128-byte box rows), whose writes conflict 4 ways — one chunk in seven.
//
// Per chunk, the consumer's 128 threads (the issuer: its thread 0, which owns the bulk async-groups):
//   1. write the chunk into buffer (chunk count & 1) with st.shared;
//   2. fence.proxy.async.shared::cta, each thread after its own writes (TMA reads through the async
//      proxy, which sees generic-proxy writes in order only after such a fence);
//   3. the issuer waits until the store of the chunk before has read its buffer (wait_group.read 0),
//      while the others are at 4 — so that store's read overlapped this chunk's writes;
//   4. named barrier STAGING + c: every write fenced, and the other buffer free for the next chunk;
//   5. the issuer stores the chunk and commits it as one bulk async-group.
// The last chunk of a tile stays in flight into the next tile's mainloop; the buffer alternation runs
// on across tiles (the count), and before exiting the issuer waits for all its stores (the block's
// shared memory must outlive their reads).
//
// The output is a 3-d tensor [parts, M, S] to TMA (S = split, or N with one part): a chunk that spans
// parts of a split is stored once per part it touches, at column n0 − p·S of part p, and TMA cuts each
// store to its part (columns < 0 and ≥ S); rows past M and columns past N are cut the same way, so no
// bounds checks guard the stores, only the residual reads.
#pragma once
#include "gemm_wgmma.cuh"

// The output's two tensor maps: 128-byte chunks with the 128-byte swizzle, and the 64-byte tail chunk of
// bf16 at BN = 224 (unused elsewhere).
struct KcGemmOutMaps {
  CUtensorMap full, tail;
};

constexpr int KC_GEMM_STAGING_BUF = 64 * 128;                     // one chunk: 64 rows × 128 bytes
constexpr int KC_GEMM_STAGING_BYTES = 2 * 2 * KC_GEMM_STAGING_BUF;  // two consumers × two buffers: 32 KiB
constexpr int KC_GEMM_STAGING_BAR = 1;  // named barrier 1 + c: consumer c's staging (0 is __syncthreads)

#ifdef KC_HAS_WGMMA
template <typename TO>
__device__ __forceinline__ void kc_st_shared_pair(uint32_t addr, float a, float b) {
  if constexpr (sizeof(TO) == 4) {
    kc_st_shared_v2_f32(addr, a, b);
  } else {
    const __nv_bfloat162 p = __floats2bfloat162_rn(a, b);  // round to nearest even, as kc_put2
    uint32_t u;
    memcpy(&u, &p, 4);
    kc_st_shared_b32(addr, u);
  }
}

// Stores consumer c's 64 × BN accumulators d of tile (tile_m, tile_n) through the epilogue and TMA.
// `staging`: the consumer's two 1024-byte aligned buffers (2 × KC_GEMM_STAGING_BUF); `chunks`: how many
// chunks it staged before (its buffer alternation), advanced here.
template <int BN, typename TO>
__device__ __forceinline__ void kc_wgmma_gemm_store_tma(const float* d, const KcGemmOutMaps& maps, const KcGemmEpilogue& epi,
                                                        int M, int N, int tile_m, int tile_n, int c, uint32_t staging,
                                                        uint32_t& chunks) {
  constexpr int CW = 128 / (int)sizeof(TO), FULL = BN / CW, TAIL = BN % CW;  // columns per chunk; TAIL: 0 or 32
  static_assert(TAIL == 0 || (sizeof(TO) == 2 && TAIL == 32), "chunks of 128 bytes, or 3.5 of them for bf16 at BN 224");
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, q = lane % 4;
  const int r0 = warp * 16 + lane / 4;  // this thread's rows of the consumer's 64: r0, r0 + 8
  const int m0 = tile_m * KC_GEMM_BM + c * 64;
  const bool issuer = threadIdx.x % 128 == 0;
  if (m0 >= M) return;  // every row of this consumer lies past M (the same for its 128 threads)
  const float* gate_rows[2] = {kc_epi_gate_row(epi, m0 + r0, N), kc_epi_gate_row(epi, m0 + r0 + 8, N)};
  const int S = epi.split ? epi.split : N;
#pragma unroll
  for (int ch = 0; ch < FULL + (TAIL ? 1 : 0); ch++) {
    const bool tail = TAIL && ch == FULL;
    const int n0 = tile_n * BN + ch * CW;  // the chunk's first column
    if (n0 >= N) break;
    const uint32_t buf = staging + (chunks & 1) * KC_GEMM_STAGING_BUF;
#pragma unroll
    for (int jj = 0; jj < (tail ? TAIL : CW) / 8; jj++) {
      const int j = ch * (CW / 8) + jj, n = n0 + jj * 8 + 2 * q;  // accumulator group j: columns 8j .. 8j+7
      // N is even (gemm.cu), so n < N covers n + 1 too
      const float b0 = n < N ? kc_epi_bias(epi, n) : 0.f, b1 = n < N ? kc_epi_bias(epi, n + 1) : 0.f;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const int r = r0 + half * 8, m = m0 + r;
        float v0 = d[4 * j + 2 * half] + b0, v1 = d[4 * j + 2 * half + 1] + b1;
        if (m < M && n < N) {  // what TMA cuts is never read (a residual past M or N does not exist)
          v0 = kc_epi_apply(epi, v0, m, n, N, gate_rows[half]);
          v1 = kc_epi_apply(epi, v1, m, n + 1, N, gate_rows[half]);
        }
        const uint32_t byte = (uint32_t)((jj * 8 + 2 * q) * sizeof(TO));  // within the row
        const uint32_t at = tail ? r * (TAIL * 2) + byte : r * 128 + (byte ^ ((r & 7) << 4));
        kc_st_shared_pair<TO>(buf + at, v0, v1);
      }
    }
    // planted 22: no proxy fence, the TMA may read the buffer without the generic writes
    if (!KC_PLANTED(22)) kc_fence_proxy_async();
    // planted 23: the buffer of the chunk before rewritten while its store may still read it
    if (issuer && !KC_PLANTED(23)) kc_bulk_wait_read<0>();
    kc_bar_sync(KC_GEMM_STAGING_BAR + c, 128);
    if (issuer) {
      const CUtensorMap* map = tail ? &maps.tail : &maps.full;
      const int last = min(n0 + (tail ? TAIL : CW), N) - 1;  // the chunk's last column inside the output
      // planted 24: the box one column tile off
      const int shift = KC_PLANTED(24) ? BN : 0;
      for (int p = n0 / S; p <= last / S; p++) kc_tma_store_3d(map, buf, n0 + shift - p * S, m0, p);
      kc_bulk_commit();
    }
    chunks++;
  }
}
#endif

// The output [parts, M, S] as TMA sees it: boxes of 64 rows × 128 bytes (swizzled), and for bf16 at a
// tile width of 64·k + 32 the 32-column tail box (unswizzled).
static inline int kc_gemm_encode_out(KcContext* ctx, KcGemmOutMaps* maps, void* out, bool out_bf16, int M, int N, int split,
                                     int BN) {
  const int S = split ? split : N, elem = out_bf16 ? 2 : 4, cw = 128 / elem;
  const CUtensorMapDataType type = out_bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const cuuint64_t dims[3] = {(cuuint64_t)S, (cuuint64_t)M, (cuuint64_t)(N / S)};
  const cuuint64_t strides[2] = {(cuuint64_t)S * elem, (cuuint64_t)M * S * elem};
  const cuuint32_t box[3] = {(cuuint32_t)cw, 64, 1};
  memset(maps, 0, sizeof *maps);
  KC_TRY(kc_encode_tma_as(ctx, &maps->full, type, out, 3, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                          "could not describe the GEMM output"));
  if (BN % cw == 0) return 0;
  const cuuint32_t tail[3] = {(cuuint32_t)(BN % cw), 64, 1};
  return kc_encode_tma_as(ctx, &maps->tail, type, out, 3, dims, strides, tail, CU_TENSOR_MAP_SWIZZLE_NONE,
                          "could not describe the GEMM output's tail columns");
}
