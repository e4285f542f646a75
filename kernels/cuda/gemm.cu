// kc_gemm: picks the GEMM kernel for a call (semantics and kernels: gemm.cuh).
//
//   w f32, or K % 8 != 0 (K = 0 too), or a device older than sm_80  → SIMT (exact f32 products)
//   w bf16/f16: a of another type (f32; bf16 a with f16 w) is first rounded to w's type in scratch
//   memory, then
//     sm_90 (+ driver tensor-map entry point), N (and a split's part) even, out 8-byte aligned, a (as
//     rounded) and w 128-byte aligned                  → wgmma + TMA: one block per tile (gemm_wgmma.cu),
//                                                        or the ping-pong kernel (gemm_wgmma_pingpong.cu)
//                                                        once GEMM_PINGPONG_VERIFIED, else the persistent
//                                                        grid with the TMA-store epilogue once
//                                                        GEMM_PERSISTENT_TMA_VERIFIED where the output
//                                                        allows it (kc_gemm_wgmma_tma_out_fits), else the
//                                                        persistent grid (gemm_wgmma_persistent.cu) once
//                                                        GEMM_PERSISTENT_VERIFIED (below)
//     otherwise                                       → mma.sync
// KINO_CUDA_GEMM=mma, =simt, =wgmma, =wgmma-persistent, =wgmma-pingpong or =wgmma-persistent-tma (read
// at kc_create), or kc_set_paths (gemm path 1 … 6), forces a path: mma.sync to compare against, SIMT
// for exact f32 products, a wgmma kernel (sm_90 only) to test or time it where the shape allows wgmma
// (the TMA-store epilogue where the output allows it too, else the persistent grid's register one).
// ctx->last_gemm names the kernel each call ran.
#include "gemm.cuh"

static bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }
// TMA with the 128-byte swizzle reads from 128-byte aligned global memory only (the CUDA programming
// guide's TMA swizzle requirements; the driver's encoder itself checks for 16): a view that starts
// elsewhere goes to mma.sync.
static bool aligned128(const void* p) { return ((uintptr_t)p & 127) == 0; }

// The epilogue (gemm_epilogue.cuh): gelu, or residual [M, N] (may be out) with gate [B, G, N] (or null)
// whose row for output row m is (m / L)·G + (m % L) / (L / G), or split > 0: out is [N / split, M, split].
// a_dt f32 or bf16 (f16 with f16 w), out_dt f32 or bf16 (f32 with a residual).
// The persistent kernel has not yet run on a GPU: auto keeps the one-block-per-tile kernel until the
// device check (tools/gpu-check-kernels.py persistent, which forces it: KINO_CUDA_GEMM=wgmma-persistent)
// passed on an H200 and measured it faster at the Wan shapes. Set to true then.
constexpr bool GEMM_PERSISTENT_VERIFIED = false;
// The ping-pong kernel likewise (tools/gpu-check-kernels.py pingpong, KINO_CUDA_GEMM=wgmma-pingpong):
// true once it passed on an H200 and measured faster than the kernel auto picks at the Wan shapes.
constexpr bool GEMM_PINGPONG_VERIFIED = false;
// The persistent kernel with the TMA-store epilogue likewise (tools/gpu-check-kernels.py persistent-tma,
// KINO_CUDA_GEMM=wgmma-persistent-tma): true once it passed on an H200 and measured faster than the
// kernel auto picks at the Wan shapes.
constexpr bool GEMM_PERSISTENT_TMA_VERIFIED = false;

KC_API int kc_gemm(KcContext* ctx, void* out, const void* a, int a_dt, const void* w, int w_dt, const float* bias,
                   int M, int N, int K, int gelu, const float* residual, const float* gate, int L, int G, int split,
                   int out_dt) {
  ctx->last_gemm = "";
  if (M <= 0 || N <= 0) return 0;
  if (K < 0) return kc_fail(ctx, KC_E_ARG, "kc_gemm", "K must not be negative");
  if ((out_dt != KC_F32 && out_dt != KC_BF16) || (out_dt == KC_BF16 && residual))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "out must be f32 or bf16, and f32 with a residual");
  if (a_dt != KC_F32 && a_dt != KC_BF16 && !(a_dt == KC_F16 && w_dt == KC_F16))
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "a must be f32 or bf16 (f16 only with f16 weights)");
  const bool out_bf16 = out_dt == KC_BF16;
  if ((gelu && residual) || (gate && (!residual || L <= 0 || G <= 0 || L % G)))
    return kc_fail(ctx, KC_E_ARG, "kc_gemm", "epilogue: GELU or a residual, and a gate needs a residual and G dividing L");
  if (split < 0 || (split && (N % split || gelu || residual)))
    return kc_fail(ctx, KC_E_ARG, "kc_gemm", "split must divide N and comes without GELU or a residual");
  const KcGemmEpilogue epi{bias, residual, gate, gelu, L, G, split, (int64_t)M * split};
  const bool tensor_cores = w_dt != KC_F32 && ctx->gemm_path != 2 && ctx->sm_major >= 8 && K > 0 && K % 8 == 0 &&
                            aligned16(w);
  if (!tensor_cores) {
    ctx->last_gemm = "simt";
    return kc_gemm_simt_launch(ctx, out, out_bf16, a, a_dt, w, w_dt, epi, M, N, K);
  }

  const void* a16 = a;
  void* scratch = nullptr;
  if (a_dt != w_dt || !aligned16(a)) {
    scratch = kc_scratch(ctx, (size_t)M * K * 2);
    if (!scratch) return KC_E_OOM;
    int rc = kc_convert_launch(ctx, a, a_dt, scratch, w_dt, (int64_t)M * K);
    if (rc) {
      kc_scratch_release(ctx, scratch);
      return rc;
    }
    a16 = scratch;
  }
  const bool f16 = w_dt == KC_F16;
  int rc;
  const bool wgmma_path = ctx->gemm_path == 0 || (ctx->gemm_path >= 3 && ctx->gemm_path <= 6);
  if (ctx->sm_major == 9 && ctx->encode_tensor_map && wgmma_path && N % 2 == 0 && split % 2 == 0 &&
      ((uintptr_t)out & 7) == 0 && aligned128(a16) && aligned128(w)) {
    if (ctx->gemm_path == 5 || (ctx->gemm_path == 0 && GEMM_PINGPONG_VERIFIED)) {
      ctx->last_gemm = "wgmma-pingpong";
      rc = kc_gemm_wgmma_pingpong_launch(ctx, out, out_bf16, a16, w, f16, epi, M, N, K);
    } else if ((ctx->gemm_path == 6 || (ctx->gemm_path == 0 && GEMM_PERSISTENT_TMA_VERIFIED)) &&
               kc_gemm_wgmma_tma_out_fits(out, out_bf16, N, split)) {
      ctx->last_gemm = "wgmma-persistent-tma";
      rc = kc_gemm_wgmma_persistent_launch(ctx, out, out_bf16, a16, w, f16, epi, M, N, K, true);
    } else if (ctx->gemm_path == 4 || ctx->gemm_path == 6 || (ctx->gemm_path == 0 && GEMM_PERSISTENT_VERIFIED)) {
      ctx->last_gemm = "wgmma-persistent";
      rc = kc_gemm_wgmma_persistent_launch(ctx, out, out_bf16, a16, w, f16, epi, M, N, K, false);
    } else {
      ctx->last_gemm = "wgmma";
      rc = kc_gemm_wgmma_launch(ctx, out, out_bf16, a16, w, f16, epi, M, N, K);
    }
  } else {
    ctx->last_gemm = "mma.sync";
    rc = kc_gemm_mma_launch(ctx, out, out_bf16, a16, w, f16, epi, M, N, K);
  }
  kc_scratch_release(ctx, scratch);  // stream-ordered: the next user of the block runs after this GEMM
  return rc;
}
