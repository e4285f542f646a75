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
// copied as the GEMM copies its weights, and the ring and the warps' multiply are the GEMM's
// (mma_ring.cuh: fragments double-buffered across k steps).
//
// Four block tiles (conv_mma_tiles.cuh), one picked per call by a model of the GPU's waves:
//   128×192, 6 warps of 64×64 (4×8 m16n8 fragments), 80 KiB;
//   256×96 and 128×96, 8 and 4 warps of 64×48 (4×6), 88 and 56 KiB: a 96-wide tile takes the Wan-VAE's
//     Cout of 96, 192 and 384 without padding, and 128×96 runs two blocks an SM on A100/H100;
//   256×16, 8 warps of 32×16, 68 KiB: the narrow tile, the only one for Cout ≤ 16 (the 3-channel head).
// As in the GEMM (gemm_mma.cu's header), mma.sync on A100-class parts is bound by shared memory unless
// each ldmatrix'd fragment feeds enough MMAs. Per 32-deep K step (shared memory moving 128 B a cycle;
// an m16n8k16 taking 2 tensor cycles on A100, 1 on H100, 4 or more on sm_86/sm_89), each warp reads 2 k16
// × (MI + NJ/2) ldmatrix.x4 of 512 B and the stage takes (BM + BN) · 64 B of cp.async writes:
//   128×192: 48 + 20 KiB = 544 cycles per 384 MMAs (0.71 of the tensor time on A100; 1.42 on H100);
//   256×96:  56 + 22 KiB = 624 cycles per 384 MMAs (0.81; 1.63);
//   128×96:  28 + 14 KiB = 336 cycles per 192 MMAs (0.88; 1.75);
//   256×16:  24 + 17 KiB = 328 cycles per 64 MMAs (bound by shared memory everywhere);
// against, as designs, 8 warps of 64×32 on 128×128 (48 + 16 KiB = 512 cycles per 256 MMAs: 1.0 on A100,
// 2.0 on H100) and of 32×48 on 128×96 (40 + 14 KiB = 432 per 192: 1.13; 2.25).
// Registers (test/runtime/cuda-ptx.test.ts holds them to the model's table; none spills): 255 / 255 for
// 128×192 (sm_80 / sm_90a), 224 / 215 for 256×96, 215 / 211 for 128×96, 93 for 256×16.
//
// Which tile: the model (conv_mma_tiles.cuh) takes a call's time as waves · blocks per SM · a block's
// cycles per K step (the greater of its tensor and shared-memory cycles above), over M = output voxels
// and N = Cout. Waves of 128×192 / 256×96 / 128×96 at the Wan2.1 VAE decoder's 3³ convs at 832x480 (a
// chunk's frames at each level; tools/gpu-check-conv.py times them), the pick (ᵗ: a tie, which goes to
// the earlier of 128×192, 256×96, 128×96) and the model's gain over the better of the two 8-warp designs
// above (test/runtime/cuda-conv-mma-tiles.test.ts asserts the picks):
//                          A100, 108 SMs              H100/H200, 132            L40S, 142 (1 block an SM)   A10, 72 (1 block an SM)
//   384→384 104x60 T1      1/1/1 128×192ᵗ 1.33×       1/1/1 128×192 1.88×       1/1/2 128×192ᵗ 1.33×        2/2/3 128×96 1.33×
//   384→384 208x120 T2     8/8/8 128×192ᵗ 1.00×       6/6/6 128×192 1.57×       6/6/11 128×96 1.09×         11/11/22 128×192ᵗ 1.03×
//   192→192 416x240 T4     29/29/29 128×192ᵗ 1.13×    24/24/24 128×192 1.59×    22/22/44 128×192ᵗ 1.00×     44/44/87 128×96 1.00×
//   96→96 832x480 T4       116/58/58 256×96ᵗ 1.13×    95/48/48 256×96 1.38×     88/44/88 256×96ᵗ 1.00×      174/87/174 256×96ᵗ 1.00×
//   96→3 head              256×16 on every GPU: the same tile, the same model figure (the fragments' double buffering is what changes)
// On H100/H200 every level gains, shared memory being the bound there; on the parts bound by their tensor
// cores the gains are where the tiles' waves quantize better. These are predictions: an H200
// (tools/gpu-check-conv.py, every tile forced beside the pick) can check the 132-SM column only.
// KINO_CUDA_CONV_MMA_TILE=128x192|256x96|128x96|256x16 forces a tile (tests, the device check).
#include "conv.cuh"
#include "conv_mma_tiles.cuh"
#include "mma_ring.cuh"

namespace {
constexpr int STAGES = KC_CONV_MMA_STAGES, BK = KC_MMA_BK;
static_assert(KC_MMA_ROW_BYTES == KC_CONV_MMA_ROW_BYTES, "the model's stage rows are the kernel's");

struct ConvMmaArgs {
  float* out;
  const uint16_t* xc;
  const uint16_t* wp;
  const float* bias;
  const float* residual;  // out's shape, or null (kc_conv_out)
  int M, P;             // output voxels in all (B·P), per batch item (To·Ho·Wo)
  int Cout, CP, ktiles, n_tiles;
  int F, H, W, kh, kw, st, sh, sw, top, left, Ho, Wo;
  int first_frame;      // the causal window's frame that is xc's frame 0 (0 with prev, else timePad)
};

// A block tile of the model (conv_mma_tiles.cuh: KC_CONV_MMA_TILES), by its index there.
template <int TILE>
struct ConvTile {
  static constexpr KcConvMmaTile SHAPE = KC_CONV_MMA_TILES[TILE];
  static constexpr int WARPS_N = SHAPE.warps_n, MI = SHAPE.mi, NJ = SHAPE.nj;
  static constexpr int THREADS = SHAPE.threads(), BM = SHAPE.bm(), BN = SHAPE.bn();
  static constexpr int A_BYTES = BM * KC_MMA_ROW_BYTES, STAGE_BYTES = (BM + BN) * KC_MMA_ROW_BYTES;
  static constexpr int SMEM_BYTES = SHAPE.smem();
  // A-tile rows each thread copies: rows threadIdx.x / 4 + i · STEP; where STEP does not divide BM (128
  // rows by the 6-warp tile's 48-row passes) the last pass covers what is left
  static constexpr int STEP = THREADS / KC_MMA_CHUNKS, A_ROWS = (BM + STEP - 1) / STEP;
  static_assert(SMEM_BYTES == STAGES * STAGE_BYTES && STEP % 8 == 0, "the model's tile is the kernel's; one swizzle phase per thread");
  // whether pass i of a thread whose first row is `row` has a row of the tile; planted 40: the last,
  // partial pass left out (the tile's last BM % STEP rows never gathered)
  static __device__ __forceinline__ bool has_row(int row, int i) {
    return BM % STEP == 0 || i < A_ROWS - 1 || (!KC_PLANTED(40) && row + i * STEP < BM);
  }
};

template <int TILE>
__global__ void __launch_bounds__(KC_CONV_MMA_TILES[TILE].threads()) conv_mma_kernel(const ConvMmaArgs p) {
  using T = ConvTile<TILE>;
  constexpr int MI = T::MI, NJ = T::NJ;
  const uint32_t base = kc_smem_addr(kc_dynamic_smem());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / T::WARPS_N, wn = warp % T::WARPS_N;
  // Column tiles vary fastest, so the blocks that share an A tile run together and it stays in L2.
  const int m0 = (int)(blockIdx.x / p.n_tiles) * T::BM, n0 = (int)(blockIdx.x % p.n_tiles) * T::BN;
  const int K = p.ktiles * BK;

  // The A rows this thread copies (row threadIdx.x / 4 + i · STEP, chunk threadIdx.x % 4): the xc
  // offset of the voxel's first tap, and its first input frame, row and column for the bounds test.
  const int chunk = threadIdx.x % KC_MMA_CHUNKS, row0 = threadIdx.x / KC_MMA_CHUNKS;
  int64_t row_off[T::A_ROWS];
  int row_t[T::A_ROWS], row_y[T::A_ROWS], row_x[T::A_ROWS];
#pragma unroll
  for (int i = 0; i < T::A_ROWS; i++)
    if (T::has_row(row0, i)) kc_conv_voxel_origin(p, m0 + row0 + i * T::STEP, chunk, row_off[i], row_t[i], row_y[i], row_x[i]);

  // The B rows: wp's rows as the GEMM copies its weights.
  const KcMmaRowCopier<T::BN, T::THREADS> copy_b(p.wp, n0, p.Cout, K);
  // The K tile that load runs for (it runs for kt = 0, 1, 2, ... in turn) as (tap a, r, q; channel c0).
  int ld_a = 0, ld_r = 0, ld_q = 0, ld_c0 = 0;
  auto load = [&](int kt, uint32_t sa, uint32_t sb) {
    const int64_t tap_off = (((int64_t)ld_a * p.H + ld_r) * p.W + ld_q) * p.CP + ld_c0;
#pragma unroll
    for (int i = 0; i < T::A_ROWS; i++) {
      if (!T::has_row(row0, i)) break;
      const bool ok = (unsigned)(row_t[i] + ld_a) < (unsigned)p.F && (unsigned)(row_y[i] + ld_r) < (unsigned)p.H &&
                      (unsigned)(row_x[i] + ld_q) < (unsigned)p.W;
      kc_cp_async16(sa + kc_mma_swizzle(row0 + i * T::STEP, chunk), ok ? p.xc + row_off[i] + tap_off : p.xc, ok ? 16 : 0);
    }
    copy_b.copy(sb, p.wp, kt * BK, K);
    if ((ld_c0 += BK) == p.CP) {
      ld_c0 = 0;
      if (++ld_q == p.kw) {
        ld_q = 0;
        if (++ld_r == p.kh) ld_r = 0, ld_a++;
      }
    }
  };

  float acc[MI][NJ][4] = {};
  kc_mma_ring<STAGES, T::STAGE_BYTES, T::A_BYTES, MI, NJ, false>(p.ktiles, base, wm * MI * 16, wn * NJ * 8, lane, load, acc);

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
        const int64_t at = o - p.out + (int64_t)n * p.P;
        if (n < p.Cout) o[(int64_t)n * p.P] = kc_conv_out(acc[mi][nj][half * 2], p.bias, p.residual, n, at);
        // planted 41: the odd channels of a fragment pair left without their residual
        if (n + 1 < p.Cout)
          o[(int64_t)(n + 1) * p.P] = kc_conv_out(acc[mi][nj][half * 2 + 1], p.bias, KC_PLANTED(41) ? nullptr : p.residual, n + 1, at + p.P);
      }
    }
  }
}

template <int TILE>
int launch_tile(KcContext* ctx, ConvMmaArgs args) {
  using T = ConvTile<TILE>;
  auto kernel = conv_mma_kernel<TILE>;
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

// KINO_CUDA_CONV_MMA_TILE's tile (ctx->conv_mma_tile: its index + 1), else the model's (conv_mma_tiles.cuh).
int tile_for(const KcContext* ctx, int64_t M, int Cout) {
  if (ctx->conv_mma_tile > 0 && ctx->conv_mma_tile <= KC_CONV_MMA_TILE_COUNT) return ctx->conv_mma_tile - 1;
  return kc_conv_mma_pick_tile(kc_mma_gpu(ctx), M, Cout);
}

int launch(KcContext* ctx, const ConvMmaArgs& args) {
  static_assert(KC_CONV_MMA_TILE_COUNT == 4, "an instance per tile of the model");
  switch (tile_for(ctx, args.M, args.Cout)) {
    case 0: return launch_tile<0>(ctx, args);
    case 1: return launch_tile<1>(ctx, args);
    case 2: return launch_tile<2>(ctx, args);
    default: return launch_tile<3>(ctx, args);
  }
}
}  // namespace

int kc_conv3d_mma_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                         const float* bias, const float* residual, int B, const ConvGeom& g, const ConvNormSilu& ns,
                         bool upsample) {
  ConvPacked pk;
  int rc = kc_conv3d_pack(ctx, &pk, x, prev, w, w_dt, B, g, ns, upsample);
  if (!rc) {
    const int P = g.To * g.Ho * g.Wo;
    ConvMmaArgs args{out, pk.xc, pk.wp, bias, residual, B * P, P, g.Cout, pk.CP, pk.taps * pk.CP / BK, 0,
                     pk.F, g.H, g.W, g.kh, g.kw, g.st, g.sh, g.sw, g.top, g.left, g.Ho, g.Wo, pk.first};
    rc = launch(ctx, args);
  }
  kc_conv3d_pack_release(ctx, &pk);
  return rc;
}

// The block tile (rows × channels) that a conv3d of M output voxels (the batch folded in) and Cout
// channels runs on this context's mma.sync kernel: for tools/gpu-check-conv.py to print beside its
// timings of every tile.
KC_API void kc_conv_mma_tile(KcContext* ctx, int64_t M, int Cout, int32_t* bm_bn) {
  const KcConvMmaTile& t = KC_CONV_MMA_TILES[tile_for(ctx, M, Cout)];
  bm_bn[0] = t.bm(), bm_bn[1] = t.bn();
}
