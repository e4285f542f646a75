// The GEMM epilogue (Backend.gemm's GemmEpilogue): what every GEMM kernel (gemm_wgmma.cu,
// gemm_mma.cu, gemm_simt.cu) does to an output y = Σ_k a·w + bias as it leaves the accumulators, so
// that the elementwise op after a linear layer costs no extra pass over memory.
//
// CPU reference (src/runtime/reference.ts gemm), per output (m, n):
//   none      out = y
//   gelu      out = 0.5·y·(1 + tanh(√(2/π)·(y + 0.044715·y³)))           (kc_gelu_tanh)
//   residual  out = residual[m, n] + gate[(m / L)·G + (m % L) / (L / G), n] · y   (gate null: 1)
//   split     out = y, stored at [n / S, m, n % S] instead of [m, n] (S = split columns per part): a
//             fused projection's parts (q|k|v) come out as contiguous [M, S] matrices
// The output is f32, or bf16 (every kernel is instantiated for both, TO = float / __nv_bfloat16) when
// the next op is a tensor-core op that would round it anyway (backend.ts: activations); the epilogue
// computes in f32 and rounds once, when it stores. A residual output stays f32: it is the residual
// stream. GELU, a residual and a split are never combined. The residual may be the output itself (in place): the
// thread that stores (m, n) is the one that read residual (m, n), and the K sum is complete in its
// registers by then.
#pragma once
#include "common.cuh"

struct KcGemmEpilogue {
  const float* bias;      // [N] or null
  const float* residual;  // [M, N] or null
  const float* gate;      // [B, G, N] or null
  int gelu, L, G;
  int split;              // columns per part of a split output, 0: out is [M, N]
  int64_t part_stride;    // M · split: elements between parts
};

// Where output (m, n) is stored: row-major [M, N], or part n / split of a split output. With an even
// split, columns n and n + 1 (n even) stay side by side in one part, so pair stores remain valid.
__device__ __forceinline__ int64_t kc_epi_out(const KcGemmEpilogue& e, int64_t m, int n, int N) {
  return e.split ? (n / e.split) * e.part_stride + m * e.split + n % e.split : m * N + n;
}

// Row m's gate row (null without a gate), looked up once per output row a thread stores.
__device__ __forceinline__ const float* kc_epi_gate_row(const KcGemmEpilogue& e, int64_t m, int N) {
  return e.gate ? e.gate + ((m / e.L) * e.G + (m % e.L) / (e.L / e.G)) * N : nullptr;
}

__device__ __forceinline__ float kc_epi_bias(const KcGemmEpilogue& e, int n) { return e.bias ? e.bias[n] : 0.f; }

// y: the finished sum of (m, n) plus its bias; gate_row from kc_epi_gate_row(m).
__device__ __forceinline__ float kc_epi_apply(const KcGemmEpilogue& e, float y, int64_t m, int n, int N,
                                              const float* gate_row) {
  if (e.gelu) return kc_gelu_tanh(y);
  if (e.residual) return e.residual[m * N + n] + (gate_row ? gate_row[n] : 1.f) * y;
  return y;
}
