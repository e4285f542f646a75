// Causal Conv3d on tensor cores (sm_80+): an implicit GEMM with M = output voxels (the batch folded
// in), N = Cout, K = the kt·kh·kw taps × Cin channels. Reference and precision promise: conv.cuh.
//
// Two repacking passes run first, into scratch memory (conv_pack.cu, shared with conv_wgmma.cu):
//   x (and prev) f32 [B, Cin, ·, H, W] → xc bf16 [B, F, H, W, CP], channels-last, channels padded to
//     CP (a multiple of 32), the causal window's frames in order;
//   w [Cout, Cin, kt, kh, kw] (f32/bf16/f16) → wp bf16 [Cout, taps, CP]: K ordered tap-major.
// With K in that order a 32-deep K tile is 32 channels of one tap, and a row of the A tile (one output
// voxel) is 64 contiguous bytes of xc at the voxel's input position moved by the tap: four 16-byte
// cp.async copies, zero-filled where the tap lands in the padding. That is the whole im2col gather —
// one bounds test per copy; each thread copies the same rows for the whole K loop, so it decomposes
// its voxels once, and the tap advances by counters, without divisions. The B tile is rows of wp,
// loaded as the GEMM loads its weights, and the multiply is the GEMM's (mma_tile.cuh).
//
// Tile shapes, chosen per Cout: 128 voxels × 128 channels (8 warps of 64×32), 128 × 96 (8 warps of
// 32×48) where 96 wastes less of the last column tile (Cout 96, 192), and 256 × 16 (8 warps of 32×16)
// for the Wan-VAE's 3-channel output conv.
#include "conv.cuh"
#include "mma_tile.cuh"

namespace {
constexpr int STAGES = 4, BK = KC_MMA_BK;

struct ConvMmaArgs {
  float* out;
  const uint16_t* xc;
  const uint16_t* wp;
  const float* bias;
  int M, P;             // output voxels in all (B·P), per batch item (To·Ho·Wo)
  int Cout, CP, ktiles, n_tiles;
  int F, H, W, kh, kw, st, sh, sw, top, left, Ho, Wo;
  int first_frame;      // the causal window's frame that is xc's frame 0 (0 with prev, else timePad)
};

template <int WARPS_M, int WARPS_N, int MI, int NJ>
struct ConvTile {
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  static constexpr int BM = WARPS_M * MI * 16, BN = WARPS_N * NJ * 8;
  static constexpr int A_BYTES = BM * KC_MMA_ROW_BYTES, STAGE_BYTES = (BM + BN) * KC_MMA_ROW_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
  static constexpr int A_ROWS = BM * KC_MMA_CHUNKS / THREADS;  // A-tile rows each thread copies
  static_assert(BM * KC_MMA_CHUNKS % THREADS == 0, "whole A rows per thread");
};

template <int WARPS_M, int WARPS_N, int MI, int NJ>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N) conv_mma_kernel(const ConvMmaArgs p) {
  using T = ConvTile<WARPS_M, WARPS_N, MI, NJ>;
  const uint32_t base = kc_smem_addr(kc_dynamic_smem());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  // Column tiles vary fastest, so the blocks that share an A tile run together and it stays in L2.
  const int m0 = (int)(blockIdx.x / p.n_tiles) * T::BM, n0 = (int)(blockIdx.x % p.n_tiles) * T::BN;
  const int K = p.ktiles * BK;

  // The A rows this thread copies (row threadIdx.x / 4 + i · THREADS / 4, chunk threadIdx.x % 4): the
  // xc offset of the voxel's first tap, and its first input frame, row and column for the bounds test.
  const int chunk = threadIdx.x % KC_MMA_CHUNKS;
  int64_t row_off[T::A_ROWS];
  int row_t[T::A_ROWS], row_y[T::A_ROWS], row_x[T::A_ROWS];
#pragma unroll
  for (int i = 0; i < T::A_ROWS; i++)
    kc_conv_voxel_origin(p, m0 + threadIdx.x / KC_MMA_CHUNKS + i * (T::THREADS / KC_MMA_CHUNKS), chunk, row_off[i],
                         row_t[i], row_y[i], row_x[i]);

  auto stage_a = [&](int s) { return base + s * T::STAGE_BYTES; };
  auto stage_b = [&](int s) { return base + s * T::STAGE_BYTES + T::A_BYTES; };
  // The next K tile to load as (tap a, r, q; channel c0): load_stage runs for kt = 0, 1, 2, ... in turn.
  int ld_a = 0, ld_r = 0, ld_q = 0, ld_c0 = 0;
  auto load_stage = [&](int kt) {
    if (kt < p.ktiles) {
      const int s = kt % STAGES;
      const int64_t tap_off = (((int64_t)ld_a * p.H + ld_r) * p.W + ld_q) * p.CP + ld_c0;
#pragma unroll
      for (int i = 0; i < T::A_ROWS; i++) {
        const bool ok = (unsigned)(row_t[i] + ld_a) < (unsigned)p.F && (unsigned)(row_y[i] + ld_r) < (unsigned)p.H &&
                        (unsigned)(row_x[i] + ld_q) < (unsigned)p.W;
        const int row = threadIdx.x / KC_MMA_CHUNKS + i * (T::THREADS / KC_MMA_CHUNKS);
        kc_cp_async16(stage_a(s) + kc_mma_swizzle(row, chunk), ok ? p.xc + row_off[i] + tap_off : p.xc, ok ? 16 : 0);
      }
      kc_mma_load_rows<T::BN, T::THREADS>(stage_b(s), p.wp, n0, p.Cout, kt * BK, K);
      if ((ld_c0 += BK) == p.CP) {
        ld_c0 = 0;
        if (++ld_q == p.kw) {
          ld_q = 0;
          if (++ld_r == p.kh) ld_r = 0, ld_a++;
        }
      }
    }
    kc_cp_async_commit();
  };

  float acc[MI][NJ][4] = {};
  kc_mma_pipeline<STAGES>(p.ktiles, load_stage, [&](int s) {
    kc_mma_warp_stage<MI, NJ, false>(stage_a(s), stage_b(s), wm * MI * 16, wn * NJ * 8, lane, acc);
  });

  // Fragment layout of m16n8: c0,c1 at (row lane/4, cols 2·(lane%4), +1), c2,c3 eight rows below.
  // Rows are voxels, columns channels: out[b, n, pos]; the 8 lanes that share lane%4 store 8
  // consecutive voxels of one channel, 32 contiguous bytes.
#pragma unroll
  for (int mi = 0; mi < MI; mi++) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int m = m0 + wm * MI * 16 + mi * 16 + lane / 4 + half * 8;
      if (m >= p.M) continue;
      const int b = m / p.P;
      float* o = p.out + (int64_t)b * p.Cout * p.P + (m - b * p.P);
#pragma unroll
      for (int nj = 0; nj < NJ; nj++) {
        const int n = n0 + wn * NJ * 8 + nj * 8 + (lane % 4) * 2;
        if (n < p.Cout) o[(int64_t)n * p.P] = acc[mi][nj][half * 2] + (p.bias ? p.bias[n] : 0.f);
        if (n + 1 < p.Cout) o[(int64_t)(n + 1) * p.P] = acc[mi][nj][half * 2 + 1] + (p.bias ? p.bias[n + 1] : 0.f);
      }
    }
  }
}

template <int WARPS_M, int WARPS_N, int MI, int NJ>
int launch_tile(KcContext* ctx, ConvMmaArgs args) {
  using T = ConvTile<WARPS_M, WARPS_N, MI, NJ>;
  auto kernel = conv_mma_kernel<WARPS_M, WARPS_N, MI, NJ>;
  static bool configured = false;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM_BYTES),
                    "cudaFuncSetAttribute(conv_mma_kernel)"));
    configured = true;
  }
  args.n_tiles = (args.Cout + T::BN - 1) / T::BN;
  const int64_t blocks = (int64_t)args.n_tiles * ((args.M + T::BM - 1) / T::BM);
  if (blocks > 0x7fffffff) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "output too large for one launch");
  KC_LAUNCH(kernel, (unsigned)blocks, T::THREADS, T::SMEM_BYTES, ctx->stream)(args);
  return kc_launched(ctx, "conv_mma_kernel");
}

// Cout ≤ 16: the narrow tile; otherwise 128 or 96 channels a tile, whichever pads Cout less.
int launch_for_cout(KcContext* ctx, const ConvMmaArgs& args) {
  const int c = args.Cout;
  if (c <= 16) return launch_tile<8, 1, 2, 2>(ctx, args);
  const int pad128 = (c + 127) / 128 * 128 - c, pad96 = (c + 95) / 96 * 96 - c;
  if (pad96 < pad128) return launch_tile<4, 2, 2, 6>(ctx, args);
  return launch_tile<2, 4, 4, 4>(ctx, args);
}
}  // namespace

int kc_conv3d_mma_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                         const float* bias, int B, const ConvGeom& g, const ConvNormSilu& ns) {
  ConvPacked pk;
  int rc = kc_conv3d_pack(ctx, &pk, x, prev, w, w_dt, B, g, ns);
  if (!rc) {
    const int P = g.To * g.Ho * g.Wo;
    ConvMmaArgs args{out, pk.xc, pk.wp, bias, B * P, P, g.Cout, pk.CP, pk.taps * pk.CP / BK, 0,
                     pk.F, g.H, g.W, g.kh, g.kw, g.st, g.sh, g.sw, g.top, g.left, g.Ho, g.Wo, pk.first};
    rc = launch_for_cout(ctx, args);
  }
  kc_conv3d_pack_release(ctx, &pk);
  return rc;
}
