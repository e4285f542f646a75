// The conv's fused input normalisation (conv.cuh ConvNormSilu): silu(X · scale / max(‖X‖₂, eps) · gamma)
// per input voxel X, over its channels.
//
// Why a factor pass, then the repack: the repack (conv_pack.cu) transposes 32 channels at a time, so it
// cannot sum a voxel's squares over all Cin channels itself. The factor pass reads the activations once
// and writes one float per voxel (1/Cin of them); the repack then reads them once more and writes bf16.
// Against l2NormChannels (read twice, write), silu (read, write) and the repack (read, write half) as
// separate ops, a voxel's f32 values cross memory 2 times instead of 6 (the bf16 write is common to both).
// At the Wan-VAE decoder's 832x480 level a chunk's activations are 96 × 12 frames × 480 × 832 f32 =
// 1.8 GB, so each residual conv there saves about 7 GB of traffic.
#include "conv.cuh"

namespace {
constexpr int THREADS = 256;

// One thread per voxel of the causal window's frames [first, timePad + T): frames below timePad are
// prev's. Channels are a frame's H·W·(frames of its tensor) apart; a warp reads 32 neighbouring voxels
// of one channel at a time (coalesced).
__global__ void norm_factors_kernel(float* __restrict__ inv, const float* __restrict__ x, const float* __restrict__ prev,
                                    int Cin, int T, int64_t HW, int time_pad, int first, int F, int64_t n, float eps,
                                    float scale) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t pos = i % HW, bf = i / HW;
    const int f = (int)(bf % F), b = (int)(bf / F), s = f + first;
    const float* p = s < time_pad ? prev + ((int64_t)b * Cin * time_pad + s) * HW + pos
                                  : x + ((int64_t)b * Cin * T + (s - time_pad)) * HW + pos;
    inv[i] = kc_l2_inv(p, Cin, (s < time_pad ? time_pad : T) * HW, eps, scale);
  }
}

// out = silu(n(x)) over [B, C, S], as l2_norm_channels_kernel (norm.cu) then the silu op would write it.
__global__ void norm_silu_kernel(float* __restrict__ out, const float* __restrict__ x, int C, int64_t S, int64_t n,
                                 float eps, float scale, const float* __restrict__ gamma) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / S, s = i % S;
    const float* xp = x + b * C * S + s;
    float* yp = out + b * C * S + s;
    const float inv = kc_l2_inv(xp, C, S, eps, scale);
    for (int c = 0; c < C; c++) yp[c * S] = kc_silu(xp[c * S] * inv * (gamma ? gamma[c] : 1.f));
  }
}
}  // namespace

int kc_conv3d_norm_factors(KcContext* ctx, float* inv, const float* x, const float* prev, int B, const ConvGeom& g,
                           int first, int F, const ConvNormSilu& ns) {
  const int64_t HW = (int64_t)g.H * g.W, n = (int64_t)B * F * HW;
  if (n <= 0) return 0;
  KC_LAUNCH(norm_factors_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(inv, x, prev, g.Cin, g.T, HW, g.time_pad,
                                                                              first, F, n, ns.eps, ns.scale);
  return kc_launched(ctx, "norm_factors_kernel");
}

int kc_conv3d_norm_silu_f32(KcContext* ctx, float* out, const float* x, int B, int C, int64_t S, const ConvNormSilu& ns) {
  const int64_t n = (int64_t)B * S;
  if (n <= 0 || C <= 0) return 0;
  KC_LAUNCH(norm_silu_kernel, kc_grid_for(ctx, n), THREADS, 0, ctx->stream)(out, x, C, S, n, ns.eps, ns.scale, ns.gamma);
  return kc_launched(ctx, "norm_silu_kernel");
}
