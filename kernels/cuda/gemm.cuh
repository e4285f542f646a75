// The GEMM family: out[M, N] = a[M, K] · w[N, K]ᵀ (+ bias[N]), f32 accumulation, f32 or bf16 out, then
// the epilogue (gemm_epilogue.cuh: GELU, a gated residual or a split) on each element as it is stored.
// Both operands are K-major (rows of K contiguous elements), which is how activations and PyTorch
// Linear weights are stored, so no kernel here ever transposes.
//
// CPU reference (what every kernel below computes, up to the rounding of its inputs):
//   for m < M, n < N:  out[m*N + n] = (bias ? bias[n] : 0) + Σ_k a[m*K + k] · w[n*K + k]
//
// Kernels (gemm.cu picks one per call):
//   gemm_wgmma.cu  sm_90a: TMA loads + wgmma, warp-specialized, 128×256×64 tiles, 4-stage pipeline.
//   gemm_wgmma_persistent.cu  the same on a persistent grid (one block per multiprocessor walking the
//                  tiles), 128×256 or 128×224 tiles chosen per shape against wave quantization; with
//                  the register epilogue, or the TMA-store one (gemm_epilogue_tma.cuh: the results
//                  staged in shared memory, written out by TMA under the next tile's mainloop).
//   gemm_wgmma_pingpong.cu  persistent too, each consumer warpgroup on a 128×112 tile of its own,
//                  the two taking turns on the tensor cores so that one's epilogue hides behind the
//                  other's mainloop.
//   gemm_mma.cu    sm_80+: cp.async + ldmatrix + mma.sync m16n8k16, 128×256, 128×192 or 128×128 block
//                  tiles (per call, by a model of the GPU's waves: gemm_mma_tiles.cuh), 64×64 per warp,
//                  K steps of 32 through 4 stages.
//   gemm_simt.cu   any dtype mix and any K: f32 FMA tiles; the path for f32 weights.
// The tensor-core kernels take a and w in the same 16-bit type (bf16 or f16); gemm.cu first rounds
// f32 activations to that type (round-to-nearest-even), so their products carry bf16/f16 input error.
//
// Precision promises, per element, against the exact (f64) result on the inputs as given (w as stored):
//   tensor-core paths (wgmma, mma.sync):  |out − ref| ≤ (u_a + K · 2^-23) · Σ_k |a[m,k] · w[n,k]|
//     u_a = 2^-8 when f32 a is rounded to bf16, 2^-11 when rounded to f16 (|a| must stay below 65504),
//     0 when a already is bf16/f16; products of 16-bit values are exact in f32, the sum is f32.
//   SIMT path (f32 weights, KINO_CUDA_GEMM=simt, exact mode):  |out − ref| ≤ K · 2^-24 · Σ_k |a · w|
//     (f32 FMA chains; bf16/f16 weights widen to f32 exactly).
// The bias is added in f32 (one more rounding of |out|, 2^-24 · |out|), and so is the epilogue.
// A bf16 output adds its one rounding: ≤ 2^-8 · |out| more (round-to-nearest-even of the f32 value).
// a may be f32 or bf16 (an activation stored bf16 by the op before), w f32, bf16 or f16.
#pragma once
#include <string.h>
#include "common.cuh"
#include "gemm_epilogue.cuh"

// `out_bf16`: out is __nv_bfloat16 instead of float (never with a residual).
int kc_gemm_simt_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, int a_dt, const void* w, int w_dt,
                        const KcGemmEpilogue& epi, int M, int N, int K);
int kc_gemm_mma_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                       const KcGemmEpilogue& epi, int M, int N, int K);
// KINO_CUDA_GEMM_MMA_TILE (kc_create reads it into ctx->gemm_mma_tile): "128x128", "128x192" or "128x256"
// forces the mma.sync kernel's block tile (its width); anything else lets the model choose per call
// (gemm_mma_tiles.cuh). tools/gpu-check.sh times each.
static inline int kc_gemm_mma_tile_setting(const char* value) {
  if (value == nullptr) return 0;
  if (strcmp(value, "128x128") == 0) return 128;
  if (strcmp(value, "128x192") == 0) return 192;
  return strcmp(value, "128x256") == 0 ? 256 : 0;
}
int kc_gemm_wgmma_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                         const KcGemmEpilogue& epi, int M, int N, int K);
// `tma_out`: the TMA-store epilogue (gemm_epilogue_tma.cuh; the output must pass kc_gemm_tma_store_fits).
int kc_gemm_wgmma_persistent_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                                    const KcGemmEpilogue& epi, int M, int N, int K, bool tma_out);
// Whether the TMA-store epilogue can write this output (gemm_epilogue_tma.cuh).
bool kc_gemm_wgmma_tma_out_fits(const void* out, bool out_bf16, int N, int split);
int kc_gemm_wgmma_pingpong_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, bool f16,
                                  const KcGemmEpilogue& epi, int M, int N, int K);
