// The GEMM family: out[M, N] = a[M, K] · w[N, K]ᵀ (+ bias[N]), f32 accumulation, f32 out.
// Both operands are K-major (rows of K contiguous elements), which is how activations and PyTorch
// Linear weights are stored, so no kernel here ever transposes.
//
// CPU reference (what every kernel below computes, up to the rounding of its inputs):
//   for m < M, n < N:  out[m*N + n] = (bias ? bias[n] : 0) + Σ_k a[m*K + k] · w[n*K + k]
//
// Kernels (gemm.cu picks one per call):
//   gemm_wgmma.cu  sm_90a: TMA loads + wgmma, warp-specialized, 128×256×64 tiles, 4-stage pipeline.
//   gemm_mma.cu    sm_80+: cp.async + ldmatrix + mma.sync m16n8k16, 128×128×32 tiles, 4 stages.
//   gemm_simt.cu   any dtype mix and any K: f32 FMA tiles; the path for f32 weights.
// The tensor-core kernels take a and w in the same 16-bit type (bf16 or f16); gemm.cu first rounds
// f32 activations to that type (round-to-nearest-even), so their products carry bf16/f16 input error.
#pragma once
#include "common.cuh"

int kc_gemm_simt_launch(KcContext* ctx, float* out, const void* a, int a_dt, const void* w, int w_dt,
                        const float* bias, int M, int N, int K);
int kc_gemm_mma_launch(KcContext* ctx, float* out, const void* a, const void* w, bool f16, const float* bias,
                       int M, int N, int K);
int kc_gemm_wgmma_launch(KcContext* ctx, float* out, const void* a, const void* w, bool f16, const float* bias,
                         int M, int N, int K);
