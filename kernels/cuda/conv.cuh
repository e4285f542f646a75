// The convolution family: causal Conv3d (and Conv2d, which is Conv3d with one frame, kt = 1 and no
// time padding) as an implicit GEMM: per batch item, out[co, pos] = bias[co] + Σ_k w[co, k] · x̂[k, pos],
// where k = (ci, a, r, q) runs over the kernel window and pos = (to, yo, xo) over the output; x̂ is
// never materialised, each tile of it is gathered from x (or from `prev`, the cached frames before x).
//
// CPU reference (src/runtime/reference.ts `conv3d`): x [B, Cin, T, H, W] f32, w [Cout, Cin, kt, kh, kw]
// (f32/bf16/f16), out [B, Cout, To, Ho, Wo] f32;
//   x̂[k, pos] = X(ci, to·st + a − timePad, yo·sh + r − top, xo·sw + q − left)
//   X(c, t, y, x) = 0 outside [0,H)×[0,W); for t < 0: prev[c, timePad + t, y, x], or 0 without prev.
//
// Kernels (conv.cu picks one per call):
//   conv_mma.cu   sm_80+: x and w repacked to channels-last bf16, then cp.async + ldmatrix + mma.sync
//                 m16n8k16 with f32 accumulation, the im2col gather done by the A-tile loads.
//   conv_wgmma.cu sm_90a: the same repacked operands (conv_pack.cu) and gather, on wgmma: the voxel rows
//                 by cp.async into 128-byte-swizzled stages, the weight rows by TMA, one producer and
//                 two consumer warpgroups; the same rounding, so the same promise as mma.sync.
//   conv_simt.cu  any device: f32 FMA tiles (exact products); the exact path.
//
// Precision promises, per element, against the exact (f64) result on the inputs as given (w as stored),
// with S = Σ_k |x̂[k, pos] · w[co, k]| and K = Cin·kt·kh·kw:
//   tensor cores (mma.sync, wgmma):  |out − ref| ≤ (u_x + u_w + u_x·u_w + K · 2^-23) · S
//     x is f32, rounded to bf16 (round-to-nearest-even): u_x = 2^-8; w is rounded to bf16 too:
//     u_w = 2^-8 for f32 and f16 weights, 0 for bf16 weights (stored exactly). Products of bf16
//     values are exact in f32 and the sum is f32, so against the reference on the rounded x and w
//     what is left is the f32 sum: K · 2^-23 · S (test/runtime/op-precision.ts holds the kernel to that).
//   SIMT:  |out − ref| ≤ K · 2^-24 · S (f32 FMA chains; bf16/f16 weights widen to f32 exactly).
// The bias is added in f32 (one more rounding, 2^-24 · |out|).
#pragma once
#include <stdio.h>
#include <string.h>
#include "common.cuh"
#include "conv_mma_tiles.cuh"

// The call's geometry, in the order of kc_conv3d's `geom` argument.
struct ConvGeom {
  int Cin, Cout, T, H, W, kt, kh, kw, st, sh, sw, time_pad, top, left, To, Ho, Wo;
};

// The Wan-VAE's "RMS_norm, SiLU" in front of a conv, fused into it (kc_conv3d's norm_* arguments): the
// conv reads silu(n(X)) in place of each input voxel X — x's frames and prev's alike, so a streaming
// conv caches raw frames — with n(X)_c = X_c · scale / max(‖X‖₂, eps) · gamma[c] over the voxel's Cin
// channels; padding (spatial, and causal frames without prev) stays zero. The arithmetic is the
// l2NormChannels and silu ops' (kc_l2_inv, kc_silu), in f32: on the tensor cores the repack applies it
// before rounding to bf16 (with a pass that works out each voxel's factor first), so the promise below
// holds for x̂ = silu(n(X)) as the separate ops would have made it; the SIMT kernel gets it as f32
// copies. It saves the separate ops' passes over the activations: at the Wan-VAE decoder's widest
// level, four of the six f32 reads and writes of each voxel a residual conv costs (conv_norm_silu.cu).
struct ConvNormSilu {
  bool on;
  const float* gamma;  // [Cin], or null for 1
  float eps, scale;
};

// The Wan-VAE decoder's nearest ×2 upsample in front of its 3×3 conv, fused into it (kc_conv3d's
// upsample argument): ConvGeom's H and W are the input as the conv reads it, and x holds [B, Cin, T,
// H/2, W/2] (H and W even; no prev, no norm and SiLU): input voxel (t, y, x) is x's (t, y/2, x/2), what
// the upsampleNearest op would have written. On the tensor cores the repack reads x so, and rounds each
// value to bf16 as it would have rounded the upsampled copy's; the SIMT kernel gets the upsampled f32
// copy (kc_gather, as the op makes it). It saves writing that copy and reading it back: 4 × x's f32
// size each (at the Wan-VAE decoder's last upsample, to 832x480, 3.7 GB each way a chunk).
//
// The tensor-core kernels' operands, repacked to bf16 in scratch memory by kc_conv3d_pack (conv_pack.cu,
// which describes the layouts): xc [B, F, H, W, CP] holds the causal window's frames from `first` on
// (0 with prev, else timePad: the taps before it read zeros), wp [Cout, taps, CP]; CP = Cin rounded up
// to 32. kc_conv3d_pack_release hands both back (stream-ordered), also after a failed pack.
struct ConvPacked {
  uint16_t* xc;
  uint16_t* wp;
  int CP, taps, F, first;
};
int kc_conv3d_pack(KcContext* ctx, ConvPacked* pk, const float* x, const float* prev, const void* w, int w_dt, int B,
                   const ConvGeom& g, const ConvNormSilu& ns, bool upsample);

// For the repack: inv[(b·F + f)·H·W + pos] = scale / max(‖X‖₂, eps) of every voxel of the F frames of
// the causal window from `first` on (conv_norm_silu.cu).
int kc_conv3d_norm_factors(KcContext* ctx, float* inv, const float* x, const float* prev, int B, const ConvGeom& g,
                           int first, int F, const ConvNormSilu& ns);
// For the SIMT kernel: out = silu(n(x)) over x [B, C, S] (S = frames · H · W), f32 (conv_norm_silu.cu).
int kc_conv3d_norm_silu_f32(KcContext* ctx, float* out, const float* x, int B, int C, int64_t S, const ConvNormSilu& ns);
void kc_conv3d_pack_release(KcContext* ctx, ConvPacked* pk);

// An output element as every kernel stores it: the f32 sum, + bias[co], + the element of `residual` at its
// own index in out (a residual connection fused into the conv: kc_conv3d's residual argument), added in
// that order — what the conv and then the axpby op would have made.
__device__ __forceinline__ float kc_conv_out(float sum, const float* bias, const float* residual, int co, int64_t at) {
  return sum + (bias ? bias[co] : 0.f) + (residual ? residual[at] : 0.f);
}

// Where output voxel m's first tap reads xc, for the im2col gather of the tensor-core kernels (p: their
// launch arguments, which share these fields): its input frame t, row y and column x (the taps add to
// them; the bounds test is on the sums) and the xc offset of its 16-byte chunk `chunk`. A voxel past M
// gets a frame no tap can bring into bounds.
template <typename Args>
__device__ __forceinline__ void kc_conv_voxel_origin(const Args& p, int m, int chunk, int64_t& off, int& t, int& y,
                                                     int& x) {
  t = -(1 << 30), y = x = 0, off = 0;
  if (m < p.M) {
    const int b = m / p.P, pos = m - b * p.P;
    const int xo = pos % p.Wo, yo = (pos / p.Wo) % p.Ho, to = pos / (p.Wo * p.Ho);
    t = to * p.st - p.first_frame, y = yo * p.sh - p.top, x = xo * p.sw - p.left;
    off = ((((int64_t)b * p.F + t) * p.H + y) * p.W + x) * p.CP + chunk * 8;
  }
}

// KINO_CUDA_CONV_MMA_TILE (kc_create reads it into ctx->conv_mma_tile): a tile of KC_CONV_MMA_TILES by
// its rows × channels ("128x192", "256x96", "128x96", "256x16") forces the mma.sync kernel's block tile
// for every call; anything else lets the model choose per call (conv_mma_tiles.cuh).
// tools/gpu-check-conv.py times each.
static inline int kc_conv_mma_tile_setting(const char* value) {
  if (value == nullptr) return 0;
  for (int i = 0; i < KC_CONV_MMA_TILE_COUNT; i++) {
    char name[16];
    snprintf(name, sizeof name, "%dx%d", KC_CONV_MMA_TILES[i].bm(), KC_CONV_MMA_TILES[i].bn());
    if (strcmp(value, name) == 0) return i + 1;
  }
  return 0;
}

int kc_conv3d_simt_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                          const float* bias, const float* residual, int B, const ConvGeom& g);
int kc_conv3d_mma_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                         const float* bias, const float* residual, int B, const ConvGeom& g, const ConvNormSilu& ns,
                         bool upsample);
// sm_90 with the driver's tensor-map encoder only (conv.cu checks); Cout ≥ 32.
int kc_conv3d_wgmma_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                           const float* bias, const float* residual, int B, const ConvGeom& g, const ConvNormSilu& ns,
                           bool upsample);
// The upsampleNearest op's gather (copy.cu), which the SIMT path's upsampled copy runs.
KC_API int kc_gather(KcContext* ctx, void* out, const void* x, int elem_bytes, int rank, const int64_t* out_shape,
                     const int64_t* div, const int64_t* in_stride);
