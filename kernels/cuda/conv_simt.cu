// Convolution on f32 FMA (exact products; reference and promise: conv.cuh): the exact path, and the
// one for devices older than sm_80 and for the calls conv.cu does not give to the tensor cores.
//
// 64 output channels × 64 positions per 256-thread block, 16 k per step, each thread 4×4 outputs,
// like gemm_simt.cu. Each thread gathers a fixed output position (decomposed once) for 4 different k
// per step, so the gather's divisions stay out of the inner loop.
#include "conv.cuh"

namespace {
constexpr int TILE = 64, TK = 16, THREADS = 256;

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }

template <typename TW>
__global__ void __launch_bounds__(THREADS) conv3d_kernel(float* __restrict__ out, const float* __restrict__ x,
                                                       const float* __restrict__ prev, const TW* __restrict__ w,
                                                       const float* __restrict__ bias, const float* __restrict__ residual,
                                                       ConvGeom g) {
  __shared__ float Ws[TK][TILE + 1];
  __shared__ float Xs[TK][TILE + 1];
  const int b = blockIdx.z;
  const int co0 = blockIdx.y * TILE;
  const int64_t P = (int64_t)g.To * g.Ho * g.Wo;
  const int64_t p0 = (int64_t)blockIdx.x * TILE;
  const int K = g.Cin * g.kt * g.kh * g.kw, kwin = g.kt * g.kh * g.kw, khw = g.kh * g.kw;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

  // This thread's gather position (fixed for the whole kernel) and its first input coordinates.
  const int gp = threadIdx.x % TILE, gk = threadIdx.x / TILE;  // gk: 0..3, +4 per repeat
  const int64_t pos = p0 + gp;
  const bool pos_ok = pos < P;
  const int xo = pos_ok ? (int)(pos % g.Wo) : 0;
  const int yo = pos_ok ? (int)((pos / g.Wo) % g.Ho) : 0;
  const int to = pos_ok ? (int)(pos / ((int64_t)g.Wo * g.Ho)) : 0;
  const int t0 = to * g.st - g.time_pad, y0 = yo * g.sh - g.top, x0 = xo * g.sw - g.left;
  const int64_t plane = (int64_t)g.H * g.W;
  const float* xb = x + (int64_t)b * g.Cin * g.T * plane;
  const float* pb = prev ? prev + (int64_t)b * g.Cin * g.time_pad * plane : nullptr;

  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += TK) {
#pragma unroll
    for (int i = 0; i < TILE * TK / THREADS; i++) {
      // Weights: row co, column k (K-major, contiguous).
      int idx = threadIdx.x + i * THREADS, r = idx / TK, c = idx % TK;
      int co = co0 + r, k = k0 + c;
      Ws[c][r] = (co < g.Cout && k < K) ? widen(w[(int64_t)co * K + k]) : 0.f;
      // Input patch element (k = k0 + gk + 4i, this thread's position).
      int kk = gk + 4 * i, kx = k0 + kk;
      float v = 0.f;
      if (pos_ok && kx < K) {
        int ci = kx / kwin, rem = kx % kwin, a = rem / khw, rq = rem % khw;
        int t = t0 + a, y = y0 + rq / g.kw, xx = x0 + rq % g.kw;
        // planted 43: the right edge's padding read as the next row's first value
        if (y >= 0 && y < g.H && xx >= 0 && (xx < g.W || (KC_PLANTED(43) && xx == g.W && y + 1 < g.H))) {
          if (t >= 0) v = xb[((int64_t)ci * g.T + t) * plane + (int64_t)y * g.W + xx];
          else if (pb && t + g.time_pad >= 0) v = pb[((int64_t)ci * g.time_pad + g.time_pad + t) * plane + (int64_t)y * g.W + xx];
        }
      }
      Xs[kk][gp] = v;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TK; k++) {
      float wv[4], xv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) wv[i] = Ws[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; j++) xv[j] = Xs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(wv[i], xv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int co = co0 + ty + 16 * i;
    if (co >= g.Cout) continue;
    const int64_t row = ((int64_t)b * g.Cout + co) * P;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      int64_t p = p0 + tx + 16 * j;
      if (p < P) out[row + p] = kc_conv_out(acc[i][j], bias, residual, co, row + p);
    }
  }
}
}  // namespace

int kc_conv3d_simt_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                          const float* bias, const float* residual, int B, const ConvGeom& g) {
  const int64_t P = (int64_t)g.To * g.Ho * g.Wo;
  if ((P + TILE - 1) / TILE > 0x7fffffff || B > 65535 || (g.Cout + TILE - 1) / TILE > 65535)
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "output too large for one launch");
  dim3 grid((unsigned)((P + TILE - 1) / TILE), (g.Cout + TILE - 1) / TILE, B);
  switch (w_dt) {
    case KC_F32: KC_LAUNCH(conv3d_kernel<float>, grid, THREADS, 0, ctx->stream)(out, x, prev, (const float*)w, bias, residual, g); break;
    case KC_BF16:
      KC_LAUNCH(conv3d_kernel<__nv_bfloat16>, grid, THREADS, 0, ctx->stream)(out, x, prev, (const __nv_bfloat16*)w, bias, residual, g);
      break;
    case KC_F16: KC_LAUNCH(conv3d_kernel<__half>, grid, THREADS, 0, ctx->stream)(out, x, prev, (const __half*)w, bias, residual, g); break;
    default: return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "weights must be f32, bf16 or f16");
  }
  return kc_launched(ctx, "conv3d_kernel");
}
