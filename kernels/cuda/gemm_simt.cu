// SIMT GEMM: the fallback for f32 weights, K not a multiple of 8 (or 0), and devices older than sm_80.
// Reference semantics: gemm.cuh. Inputs of any dtype are widened to f32 while staged in shared memory;
// the output is stored f32 or bf16 (kc_put).
//
// 64×64 output tile per 256-thread block, K in steps of 16. Tiles are stored k-major in shared memory
// (transposed while staging) so the inner loop reads 4 consecutive m and 4 consecutive n values; each
// thread owns a 4×4 block of outputs strided by 16 so stores of a warp cover whole rows.
#include "gemm.cuh"

namespace {
constexpr int TILE = 64, TK = 16, THREADS = 256;

template <typename TA, typename TW, typename TO>
__global__ void __launch_bounds__(THREADS) gemm_simt_kernel(TO* __restrict__ out, const TA* __restrict__ a,
                                                          const TW* __restrict__ w, const KcGemmEpilogue epi,
                                                          int M, int N, int K) {
  __shared__ float As[TK][TILE + 1];
  __shared__ float Ws[TK][TILE + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += TK) {
#pragma unroll
    for (int i = 0; i < TILE * TK / THREADS; i++) {
      int idx = threadIdx.x + i * THREADS, r = idx / TK, c = idx % TK;
      int m = m0 + r, n = n0 + r, k = k0 + c;
      As[c][r] = (m < M && k < K) ? kc_f32(a[(int64_t)m * K + k]) : 0.f;
      Ws[c][r] = (n < N && k < K) ? kc_f32(w[(int64_t)n * K + k]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TK; k++) {
      float av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) av[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; j++) wv[j] = Ws[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    const float* gate_row = kc_epi_gate_row(epi, m, N);
#pragma unroll
    for (int j = 0; j < 4; j++) {
      int n = n0 + tx + 16 * j;
      if (n < N) kc_put(out + kc_epi_out(epi, m, n, N), kc_epi_apply(epi, acc[i][j] + kc_epi_bias(epi, n), m, n, N, gate_row));
    }
  }
}

template <typename TA, typename TW, typename TO>
int launch(KcContext* ctx, void* out, const void* a, const void* w, const KcGemmEpilogue& epi, int M, int N, int K) {
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  auto kernel = gemm_simt_kernel<TA, TW, TO>;
  KC_LAUNCH(kernel, grid, THREADS, 0, ctx->stream)((TO*)out, (const TA*)a, (const TW*)w, epi, M, N, K);
  return kc_launched(ctx, "gemm_simt_kernel");
}

template <typename TA, typename TW>
int launch_out(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, const KcGemmEpilogue& epi, int M,
               int N, int K) {
  if (out_bf16) return launch<TA, TW, __nv_bfloat16>(ctx, out, a, w, epi, M, N, K);
  return launch<TA, TW, float>(ctx, out, a, w, epi, M, N, K);
}

template <typename TA>
int launch_w(KcContext* ctx, void* out, bool out_bf16, const void* a, const void* w, int w_dt, const KcGemmEpilogue& epi,
             int M, int N, int K) {
  if (w_dt == KC_F32) return launch_out<TA, float>(ctx, out, out_bf16, a, w, epi, M, N, K);
  if (w_dt == KC_BF16) return launch_out<TA, __nv_bfloat16>(ctx, out, out_bf16, a, w, epi, M, N, K);
  return launch_out<TA, __half>(ctx, out, out_bf16, a, w, epi, M, N, K);
}
}  // namespace

// a f32 or bf16 with w of any type, or f16 a with f16 w; out f32 or bf16.
int kc_gemm_simt_launch(KcContext* ctx, void* out, bool out_bf16, const void* a, int a_dt, const void* w, int w_dt,
                        const KcGemmEpilogue& epi, int M, int N, int K) {
  if (w_dt < KC_F32 || w_dt > KC_F16) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "unsupported weight dtype");
  if (a_dt == KC_F32) return launch_w<float>(ctx, out, out_bf16, a, w, w_dt, epi, M, N, K);
  if (a_dt == KC_BF16) return launch_w<__nv_bfloat16>(ctx, out, out_bf16, a, w, w_dt, epi, M, N, K);
  if (a_dt == KC_F16 && w_dt == KC_F16) return launch_out<__half, __half>(ctx, out, out_bf16, a, w, epi, M, N, K);
  return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "unsupported dtype pair for a and w");
}
