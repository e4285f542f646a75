// Causal Conv3d on Hopper tensor cores (sm_90a): the implicit GEMM of conv_mma.cu — M = output voxels
// (the batch folded in), N = Cout, K = taps × CP channels, tap-major, on the operands conv_pack.cu
// repacks (xc channels-last bf16, wp [Cout, taps, CP] bf16) — multiplied with wgmma. Reference and
// precision promise: conv.cuh (the rounding is conv_mma.cu's, so the promise is too).
//
// One 384-thread block computes 128 voxels × BN channels:
//   warpgroup 0 (producer): per K step of 64 (two 32-channel slices, each of one tap) every thread
//     copies its 4 voxel rows' 16-byte chunks of xc with cp.async into the stage's A tile, laid out as
//     the 128-byte swizzle wants it (chunk c of row r at c ^ (r % 8)), zero-filled where the tap lands in
//     the padding, outside the frames or past K — the whole im2col gather, one bounds test per copy,
//     taps advanced by counters; thread 0 also has TMA bring the stage's BN rows of wp (zeros past
//     Cout and K). cp.async lands through the generic proxy and wgmma reads through the async proxy, so
//     a thread announces a stage on its "full" mbarrier only after cp.async.wait_group shows its
//     copies landed and fence.proxy.async made them visible there; it keeps LAG stages of copies in
//     flight before waiting. "full" completes with 128 such arrivals + thread 0's expect_tx arrival
//     and the TMA bytes; "empty" with the 256 consumer threads' arrivals.
//   warpgroups 1, 2 (consumers): 64 voxels × BN each, four wgmma m64nBNk16 per stage straight from
//     shared memory, one batch in flight (a stage is released once the next batch was issued and the
//     previous one retired), then bias + f32 stores: the 8 lanes of a quad column write 8 consecutive
//     voxels of one channel, 32 contiguous bytes of out[b, n, ·].
// Tile widths per Cout: 192, 128 or 96 channels, whichever pads Cout least (ties: the wider), so the
// Wan-VAE's 384, 192 and 96 channels fill whole tiles. Stages: 5 × (16 KiB + BN · 128 B) ≤ 200 KiB.
#include "conv.cuh"
#include "hopper.cuh"

namespace {
constexpr int BM = 128, BK = 64, THREADS = 384, STAGES = 5;
// Stages of copies a producer thread keeps in flight before announcing the oldest. At most STAGES - 2:
// the producer refills stage kt only after the consumers released kt - STAGES, which they do after
// starting on kt - STAGES + 1, which it must have announced by then (at kt - STAGES + 1 + LAG < kt).
constexpr int LAG = 3;
static_assert(LAG <= STAGES - 2, "the producer must announce a stage before it waits on the one after it");
constexpr int A_STAGE = BM * BK * 2;  // bytes: 128 rows of 128
constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;  // 128 · 56 + 256 · 224 ≤ 64 Ki

struct ConvWgmmaArgs {
  float* out;
  const uint16_t* xc;
  const float* bias;
  const float* residual;  // out's shape, or null (kc_conv_out)
  int M, P;              // output voxels in all (B·P), per batch item (To·Ho·Wo)
  int Cout, CP, slices;  // slices: 32-channel K slices in all (taps · CP / 32)
  int n_tiles;
  int F, H, W, kh, kw, st, sh, sw, top, left, Ho, Wo;
  int first_frame;       // the causal window's frame that is xc's frame 0
};

template <int BN>
struct ConvWgmmaTile {
  static constexpr int B_STAGE = BN * BK * 2;
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) + 1024;  // + slack to align to 1024 (swizzle atom)
  static_assert(B_STAGE % 1024 == 0 && SMEM_BYTES <= 227 * 1024, "stages on 1024-byte atoms, within what a Hopper block may have");
};

template <int BN>
__global__ void __launch_bounds__(THREADS, 1)
    conv_wgmma_kernel(const __grid_constant__ CUtensorMap map_w, const ConvWgmmaArgs p) {
#ifdef KC_HAS_WGMMA
  using T = ConvWgmmaTile<BN>;
  __shared__ __align__(8) uint64_t full_bar[STAGES], empty_bar[STAGES];
  const uint32_t base = (kc_smem_addr(kc_dynamic_smem()) + 1023) & ~1023u;
  auto stage_a = [&](int s) { return base + s * A_STAGE; };
  auto stage_w = [&](int s) { return base + STAGES * A_STAGE + s * T::B_STAGE; };
  auto full = [&](int s) { return kc_smem_addr(&full_bar[s]); };
  auto empty = [&](int s) { return kc_smem_addr(&empty_bar[s]); };
  // Column tiles vary fastest, so the blocks that share an A tile run together and it stays in L2.
  const int m0 = (int)(blockIdx.x / p.n_tiles) * BM, n0 = (int)(blockIdx.x % p.n_tiles) * BN;
  const int ktiles = (p.slices + 1) / 2;
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      kc_mbar_init(full(s), 128 + 1);
      kc_mbar_init(empty(s), 2 * 128);
    }
    kc_fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    kc_setmaxnreg_dec<PRODUCER_REGS>();
    // This thread's chunk (of the four in a 32-channel slice) and rows threadIdx.x / 4 + 32 i: the xc
    // offset of each voxel's first tap and its first input frame, row and column for the bounds test.
    const int chunk = threadIdx.x % 4;
    int64_t row_off[4];
    int row_t[4], row_y[4], row_x[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
      kc_conv_voxel_origin(p, m0 + threadIdx.x / 4 + 32 * i, chunk, row_off[i], row_t[i], row_y[i], row_x[i]);
    // The next slice to load as (tap a, r, q; channel c0), and its number.
    int ld_a = 0, ld_r = 0, ld_q = 0, ld_c0 = 0, slice = 0;
    for (int kt = 0; kt < ktiles; kt++) {
      const int s = kt % STAGES;
      kc_mbar_wait(empty(s), ((kt / STAGES) & 1) ^ 1);  // first round passes: phase "-1" counts as done
      if (threadIdx.x == 0) {
        kc_mbar_expect_tx(full(s), T::B_STAGE);
        kc_tma_load_2d(stage_w(s), &map_w, full(s), kt * BK, n0);
      }
#pragma unroll
      for (int half = 0; half < 2; half++, slice++) {
        const bool live = slice < p.slices;  // the last K step may hold one slice: zeros after it
        const int64_t tap_off = (((int64_t)ld_a * p.H + ld_r) * p.W + ld_q) * p.CP + ld_c0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const bool ok = live && (unsigned)(row_t[i] + ld_a) < (unsigned)p.F &&
                          (unsigned)(row_y[i] + ld_r) < (unsigned)p.H && (unsigned)(row_x[i] + ld_q) < (unsigned)p.W;
          const int row = threadIdx.x / 4 + 32 * i, c = half * 4 + chunk;
          const int at = KC_PLANTED(27) ? c : c ^ (row % 8);
          kc_cp_async16(stage_a(s) + row * 128 + at * 16, ok ? p.xc + row_off[i] + tap_off : p.xc, ok ? 16 : 0);
        }
        if ((ld_c0 += 32) == p.CP) {
          ld_c0 = 0;
          if (++ld_q == p.kw) {
            ld_q = 0;
            if (++ld_r == p.kh) ld_r = 0, ld_a++;
          }
        }
      }
      kc_cp_async_commit();
      if (kt >= LAG) {
        if (!KC_PLANTED(28)) kc_cp_async_wait<LAG>();
        if (!KC_PLANTED(26)) kc_fence_proxy_async();
        kc_mbar_arrive(full((kt - LAG) % STAGES));
      }
    }
    kc_cp_async_wait<0>();
    if (!KC_PLANTED(26)) kc_fence_proxy_async();
    for (int kt = ktiles > LAG ? ktiles - LAG : 0; kt < ktiles; kt++) kc_mbar_arrive(full(kt % STAGES));
  } else {
    kc_setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1;  // this consumer's rows: c*64 .. c*64+63 of the tile
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; kt++) {
      const int s = kt % STAGES;
      kc_mbar_wait(full(s), (kt / STAGES) & 1);
      kc_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        // A K step of 16 bf16 is 32 bytes along the swizzled row: the descriptor start moves by 32 B.
        const uint64_t da = kc_desc_kmajor_sw128(stage_a(s) + c * 64 * 128 + kk * 32);
        const uint64_t dw = kc_desc_kmajor_sw128(stage_w(s) + kk * 32);
        kc_wgmma_ss<BN>(d, da, dw, 1);
      }
      kc_wgmma_commit();
      kc_wgmma_wait<1>();  // the batch issued for kt-1 has retired: its stage can be refilled
      kc_fence_regs(d);
      if (kt > 0) kc_mbar_arrive(empty((kt - 1) % STAGES));
    }
    kc_wgmma_wait<0>();
    kc_fence_regs(d);

    // Accumulator layout (hopper.cuh): d[4j..4j+3] hold (r, 8j + 2q), (r, 8j + 2q + 1), (r + 8, 8j + 2q),
    // (r + 8, 8j + 2q + 1) with r = 16·warp + lane/4, q = lane%4; rows are voxels, columns channels.
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int col0 = n0 + (lane % 4) * 2;
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int m = m0 + c * 64 + warp * 16 + lane / 4 + half * 8;
      if (m >= p.M) continue;
      const int b = m / p.P;
      float* o = p.out + (int64_t)b * p.Cout * p.P + (m - b * p.P);
#pragma unroll
      for (int j = 0; j < BN / 8; j++) {
        const int n = col0 + j * 8;
        const int64_t at = o - p.out + (int64_t)n * p.P;
        if (n < p.Cout) o[(int64_t)n * p.P] = kc_conv_out(d[4 * j + 2 * half], p.bias, p.residual, n, at);
        if (n + 1 < p.Cout) o[(int64_t)(n + 1) * p.P] = kc_conv_out(d[4 * j + 2 * half + 1], p.bias, p.residual, n + 1, at + p.P);
      }
    }
  }
#endif
}

template <int BN>
int launch_tile(KcContext* ctx, ConvWgmmaArgs args, const uint16_t* wp, int K) {
  using T = ConvWgmmaTile<BN>;
  auto kernel = conv_wgmma_kernel<BN>;
  static bool configured = false;
  if (!configured) {
    KC_TRY(kc_check(ctx, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM_BYTES),
                    "cudaFuncSetAttribute(conv_wgmma_kernel)"));
    configured = true;
  }
  // wp [Cout, K] for TMA: boxes of BN rows × 64 channels (one 128-byte swizzled row each), zeros past
  // Cout and K. K = taps · CP is a multiple of 32, so rows are 64-byte multiples, as TMA needs (16).
  CUtensorMap map_w;
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)args.Cout}, strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t box[2] = {BK, BN};
  KC_TRY(kc_encode_tma(ctx, &map_w, wp, false, 2, dims, strides, box, "could not describe the conv weights"));
  args.n_tiles = (args.Cout + BN - 1) / BN;
  const int64_t blocks = (int64_t)args.n_tiles * ((args.M + BM - 1) / BM);
  if (blocks > 0x7fffffff) return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "output too large for one launch");
  KC_LAUNCH(kernel, (unsigned)blocks, THREADS, T::SMEM_BYTES, ctx->stream)(map_w, args);
  return kc_launched(ctx, "conv_wgmma_kernel");
}

// The tile width that pads Cout least; of equal ones the widest (fewer A tiles gathered per voxel).
int launch_for_cout(KcContext* ctx, const ConvWgmmaArgs& args, const uint16_t* wp, int K) {
  const int c = args.Cout;
  const int pad192 = (c + 191) / 192 * 192 - c, pad128 = (c + 127) / 128 * 128 - c, pad96 = (c + 95) / 96 * 96 - c;
  if (pad192 <= pad128 && pad192 <= pad96) return launch_tile<192>(ctx, args, wp, K);
  if (pad128 <= pad96) return launch_tile<128>(ctx, args, wp, K);
  return launch_tile<96>(ctx, args, wp, K);
}
}  // namespace

int kc_conv3d_wgmma_launch(KcContext* ctx, float* out, const float* x, const float* prev, const void* w, int w_dt,
                           const float* bias, const float* residual, int B, const ConvGeom& g, const ConvNormSilu& ns,
                           bool upsample) {
  ConvPacked pk;
  int rc = kc_conv3d_pack(ctx, &pk, x, prev, w, w_dt, B, g, ns, upsample);
  // TMA with the 128-byte swizzle reads 128-byte aligned memory; scratch blocks start 256-byte aligned
  if (!rc && ((uintptr_t)pk.wp & 127)) rc = kc_fail(ctx, KC_E_UNSUPPORTED, "kc_conv3d", "repacked weights not 128-byte aligned");
  if (!rc) {
    const int P = g.To * g.Ho * g.Wo;
    ConvWgmmaArgs args{out, pk.xc, bias, residual, B * P, P, g.Cout, pk.CP, pk.taps * pk.CP / 32, 0,
                       pk.F, g.H, g.W, g.kh, g.kw, g.st, g.sh, g.sw, g.top, g.left, g.Ho, g.Wo, pk.first};
    rc = launch_for_cout(ctx, args, pk.wp, pk.taps * pk.CP);
  }
  kc_conv3d_pack_release(ctx, &pk);
  return rc;
}
