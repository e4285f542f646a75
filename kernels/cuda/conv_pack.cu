// The tensor-core convolutions' operands (conv_mma.cu, conv_wgmma.cu): x (with prev) and w repacked
// into scratch memory as bf16 (round-to-nearest-even, the rounding conv.cuh's promise states), in the
// layouts an implicit GEMM with K ordered tap-major gathers from with 16-byte copies:
//   xc bf16 [B, F, H, W, CP]: channels-last, the frames of the causal window in order (prev's timePad
//     frames, then x's; without prev only x's, and the taps that fall on the missing frames read
//     zeros), channels zero-padded to CP, a multiple of 32;
//   wp bf16 [Cout, taps, CP]: K = taps · CP, ordered tap-major, channels zero-padded likewise.
// A 32-deep K slice is then 32 channels of one tap: 64 contiguous bytes of xc at a voxel's input
// position moved by the tap, and 64 contiguous bytes of a wp row.
#include "conv.cuh"

namespace {
// x (frames [first, timePad)) from prev, the rest from x) → xc [B, F, H·W, CP] bf16, channels padded
// with zeros. A block transposes 32 channels × 64 positions of one frame through shared memory, so
// both the f32 reads (along positions) and the 16-byte bf16 writes (along channels) are coalesced.
// With `inv` (the fused norm and SiLU, conv.cuh ConvNormSilu) each value becomes silu(X · inv · gamma)
// first, inv being its voxel's factor [B·F, H·W]. With `up` (the fused upsample, conv.cuh) x's frames
// are (H/2)·(W/2) and position (y, x) of xc's H·W reads x's (y/2, x/2): the two threads of a column
// pair read one address, and the rows 2k and 2k + 1 read the same x row (blocks W/64 apart in the
// grid: the second read should come from L2).
__global__ void __launch_bounds__(256) pack_input_kernel(uint16_t* __restrict__ xc, const float* __restrict__ x,
                                                         const float* __restrict__ prev, int Cin, int CP, int T,
                                                         int64_t HW, int W, bool up, int time_pad, int first, int F,
                                                         const float* __restrict__ inv, const float* __restrict__ gamma) {
  __shared__ float tile[32][65];
  const int b = blockIdx.z / F, f = blockIdx.z % F, s = f + first;  // s: frame of the causal window
  const int c0 = blockIdx.y * 32;
  const int64_t p0 = (int64_t)blockIdx.x * 64;
  const int tx = threadIdx.x % 64, ty = threadIdx.x / 64;
  const int64_t at = p0 + tx;    // the position this thread reads for its 8 channels
  int64_t src = at, plane = HW;  // where in its frame of x (or prev) that is, and the frame's size
  if (up) {
    const int y = (int)(at / W), xx = (int)(at % W);
    // planted 42: the odd columns read the x column to the right of theirs (the last one clamped)
    const int sx = KC_PLANTED(42) && (xx & 1) ? min(xx / 2 + 1, W / 2 - 1) : xx / 2;
    src = (int64_t)(y / 2) * (W / 2) + sx, plane = HW / 4;
  }
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const int cl = ty + 4 * i, c = c0 + cl;
    float v = 0.f;
    if (c < Cin && at < HW) {
      v = s < time_pad ? prev[(((int64_t)b * Cin + c) * time_pad + s) * plane + src]
                       : x[(((int64_t)b * Cin + c) * T + (s - time_pad)) * plane + src];
      if (inv) {
        const float n = v * inv[(int64_t)blockIdx.z * HW + at] * (gamma ? gamma[c] : 1.f);
        v = KC_PLANTED(39) && s < time_pad ? n : kc_silu(n);
      }
    }
    tile[cl][tx] = v;
  }
  __syncthreads();
  const int pl = threadIdx.x / 4, part = threadIdx.x % 4;  // 8 channels each
  const int64_t pos = p0 + pl;
  if (pos >= HW) return;
  uint32_t v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) v[j] = kc_pack_bf16(tile[part * 8 + 2 * j][pl], tile[part * 8 + 2 * j + 1][pl]);
  *reinterpret_cast<uint4*>(xc + ((int64_t)blockIdx.z * HW + pos) * CP + c0 + part * 8) = make_uint4(v[0], v[1], v[2], v[3]);
}

// w [Cout, Cin, taps] → wp [Cout, taps, CP] bf16 (round-to-nearest-even), channels padded with zeros.
__global__ void pack_weights_kernel(uint16_t* __restrict__ wp, const void* __restrict__ w, int w_dt, int Cin, int CP,
                                    int taps, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int c = (int)(i % CP);
    const int64_t rest = i / CP;
    const int tap = (int)(rest % taps);
    const int64_t co = rest / taps;
    const float v = c < Cin ? kc_ld(w, w_dt, (co * Cin + c) * taps + tap) : 0.f;
    wp[i] = __bfloat16_as_ushort(__float2bfloat16(v));
  }
}

}  // namespace

int kc_conv3d_pack(KcContext* ctx, ConvPacked* pk, const float* x, const float* prev, const void* w, int w_dt, int B,
                   const ConvGeom& g, const ConvNormSilu& ns, bool upsample) {
  const int CP = (g.Cin + 31) / 32 * 32, taps = g.kt * g.kh * g.kw;
  const int first = prev ? 0 : g.time_pad;
  const int F = g.time_pad + g.T - first;  // frames xc holds (0: every tap reads padding)
  const int64_t HW = (int64_t)g.H * g.W, P = (int64_t)g.To * g.Ho * g.Wo;
  *pk = ConvPacked{nullptr, nullptr, CP, taps, F, first};
  // 32-bit voxel rows and K slices in the kernels; the input repack's grid.z is B·F
  if ((int64_t)B * P > 0x7fffffff - 256 || (int64_t)taps * CP / 32 > 0x7fffffff || (int64_t)B * F > 65535)
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "too large for the tensor-core kernels");
  const size_t xc_bytes = (size_t)B * F * HW * CP * 2, wp_bytes = (size_t)g.Cout * taps * CP * 2;
  pk->xc = (uint16_t*)kc_scratch(ctx, xc_bytes > 256 ? xc_bytes : 256);
  if (!pk->xc) return KC_E_OOM;
  pk->wp = (uint16_t*)kc_scratch(ctx, wp_bytes);
  if (!pk->wp) {
    kc_conv3d_pack_release(ctx, pk);
    return KC_E_OOM;
  }
  if (F > 0 && HW > 0) {
    float* inv = nullptr;
    if (ns.on) {
      inv = (float*)kc_scratch(ctx, sizeof(float) * (size_t)B * F * HW);
      if (!inv) return KC_E_OOM;
      const int rc = kc_conv3d_norm_factors(ctx, inv, x, prev, B, g, first, F, ns);
      if (rc) {
        kc_scratch_release(ctx, inv);
        return rc;
      }
    }
    dim3 grid((unsigned)((HW + 63) / 64), CP / 32, B * F);
    KC_LAUNCH(pack_input_kernel, grid, 256, 0, ctx->stream)(pk->xc, x, prev, g.Cin, CP, g.T, HW, g.W, upsample, g.time_pad,
                                                           first, F, inv, ns.gamma);
    if (inv) kc_scratch_release(ctx, inv);
    KC_TRY(kc_launched(ctx, "pack_input_kernel"));
  }
  const int64_t wn = (int64_t)g.Cout * taps * CP;
  KC_LAUNCH(pack_weights_kernel, kc_grid_for(ctx, wn), 256, 0, ctx->stream)(pk->wp, w, w_dt, g.Cin, CP, taps, wn);
  return kc_launched(ctx, "pack_weights_kernel");
}

// Stream-ordered: the next user of these blocks runs after the convolution enqueued before this.
void kc_conv3d_pack_release(KcContext* ctx, ConvPacked* pk) {
  if (pk->wp) kc_scratch_release(ctx, pk->wp);
  if (pk->xc) kc_scratch_release(ctx, pk->xc);
  pk->wp = pk->xc = nullptr;
}
