// kc_gemm (kernels/cuda/gemm.cu, the library's own entry point) on the CPU emulator, for
// test/runtime/cuda-emulated-tensor-cores.test.ts and cuda-emulated-wgmma.test.ts: the mma.sync kernel
// (gemm_mma.cu) and the Hopper kernels (gemm_wgmma.cu, gemm_wgmma_persistent.cu, gemm_wgmma_pingpong.cu)
// with their epilogues and both output types, and
// the f32 → bf16/f16 rounding of the activations (elementwise.cu) — each file compiled as it is, one
// translation unit each. The SIMT kernel is not linked: a call that would pick it fails. The context
// is an sm_80 GPU, or an sm_90 one with the driver's tensor-map encoder (host-runtime.h) where the
// path asks for wgmma (3, or 4: the persistent grid, 5: ping-pong, 6: the persistent grid with the
// TMA-store epilogue); two multiprocessors either way,
// so a persistent grid has 2 blocks, each walking several tiles, and the mma.sync kernel's tile model
// (gemm_mma_tiles.cuh) weighs its tiles for an A100 with two SMs (A100's shared memory, registers and
// tensor-core rate).
//
//   gemm IN OUT
//   IN:  int32 M, N, K, a_dt, w_dt, out_dt (0 f32, 1 bf16, 2 f16), has_bias, gelu, residual (0 none,
//        1 an array of its own, 2 the output itself: in place), has_gate, L, G, split, gemm_path
//        (context.cu); then a [M, K] (a_dt), w [N, K] (w_dt), f32 bias [N], f32 residual [M, N] (the
//        output's first contents when in place), f32 gate [M / L · G, N]
//   OUT: out [M, N] (out_dt; a split's parts one after another)
// Prints one line per kernel launch and then `kernel <name>` (what kc_gemm ran); exits 1 with the
// library's message when the call fails. KINO_CUDA_GEMM_MMA_TILE forces the mma.sync kernel's block tile,
// as kc_create reads it (gemm.cuh).
#include "host-runtime.h"
#include "../../../kernels/cuda/gemm.cuh"

int kc_gemm_simt_launch(KcContext* ctx, void*, bool, const void*, int, const void*, int, const KcGemmEpilogue&, int, int, int) {
  return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_gemm", "the SIMT kernel is not part of this emulator build");
}
extern "C" int kc_gemm(KcContext* ctx, void* out, const void* a, int a_dt, const void* w, int w_dt, const float* bias, int M,
                       int N, int K, int gelu, const float* residual, const float* gate, int L, int G, int split, int out_dt);

static size_t elem(int dt) { return dt == KC_F32 ? 4 : 2; }

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: gemm IN OUT");
  kc_emu::Reader in(argv[1]);
  int32_t h[14];
  memcpy(h, in.take(sizeof h), sizeof h);
  const int M = h[0], N = h[1], K = h[2], a_dt = h[3], w_dt = h[4], out_dt = h[5], has_bias = h[6], gelu = h[7];
  const int residual = h[8], has_gate = h[9], L = h[10], G = h[11], split = h[12], path = h[13];
  const void* a = in.take(elem(a_dt) * M * K);
  const void* w = in.take(elem(w_dt) * N * K);
  const float* bias = has_bias ? (const float*)in.take(4 * (size_t)N) : nullptr;
  const size_t out_bytes = elem(out_dt) * M * N;
  void* out;
  const float* res = nullptr;
  if (residual == 2) {
    out = in.take(out_bytes);
    res = (const float*)out;
  } else {
    if (residual == 1) res = (const float*)in.take(4 * (size_t)M * N);
    out = kc_emu::device_alloc(out_bytes);
    memset(out, 0xFF, out_bytes);  // NaN: an output the kernel does not write shows
  }
  const float* gate = has_gate ? (const float*)in.take(4 * (size_t)(M / L) * G * N) : nullptr;
  in.end();

  KcContext ctx{};
  const bool hopper = path >= 3 && path <= 6;
  ctx.sm_major = hopper ? 9 : 8, ctx.sm_count = 2;  // two SMs: the conversion's grid-stride loop takes turns
  ctx.smem_per_sm = 164 * 1024, ctx.smem_optin = 163 * 1024, ctx.smem_reserved = 1024;  // A100's
  ctx.regs_per_sm = 65536, ctx.threads_per_sm = 2048;
  if (hopper) ctx.encode_tensor_map = (void*)&kc_emu_encode_tiled;
  ctx.gemm_path = path;
  ctx.gemm_mma_tile = kc_gemm_mma_tile_setting(getenv("KINO_CUDA_GEMM_MMA_TILE"));
  const int rc = kc_gemm(&ctx, out, a, a_dt, w, w_dt, bias, M, N, K, gelu, res, gate, L, G, split, out_dt);
  if (rc) {
    fprintf(stderr, "kc_gemm: %s (%d)\n", ctx.error, rc);
    return 1;
  }
  printf("kernel %s\n", ctx.last_gemm);
  kc_emu::write_file(argv[2], out, out_bytes);
  return 0;
}
