// kc_attention (kernels/cuda/attention.cu, the library's own entry point) on the CPU emulator, for
// test/runtime/cuda-emulated-tensor-cores.test.ts and cuda-emulated-wgmma.test.ts: the mma.sync kernel
// and the Hopper kernel (attention_wgmma.cu) with both output types, and the f32 → bf16 rounding of q,
// k, v (elementwise.cu) — each file compiled as it is, one translation unit each. The context is an
// sm_80 GPU, or an sm_90 one with the driver's tensor-map encoder (host-runtime.h) where the path asks
// for wgmma (2); two multiprocessors either way unless KC_EMU_SMS says otherwise (the Hopper kernel's
// persistent grid: a block each), each with an A100's (an H100's) shared memory, registers and threads.
//
//   attention IN OUT
//   IN:  int32 B, Lq, Lk, kv_len, H, D, dt, out_dt (0 f32, 1 bf16), has_bias, block_size, q_offset,
//        attention_path (context.cu); f32 scale; then q [B, Lq, H, D], k and v [B, Lk, H, D] (dt),
//        f32 bias [H, Lq, kv_len]
//   OUT: out [B, Lq, H, D] (out_dt)
// KINO_CUDA_ATTENTION_BKV=176 in the environment gives the wgmma kernel its 176-key tiles at D 128, and
// KINO_CUDA_ATTENTION_SPLIT=0|always its stream-K schedule, as they do for kc_create; KC_EMU_SMS=n makes the
// GPU one of n multiprocessors (2 without it). Prints one line per kernel launch and then `kernel <name>` (what kc_attention
// ran); exits 1 with the library's message when the call fails.
#include "host-runtime.h"
#include "../../../kernels/cuda/attention.cuh"

extern "C" int kc_attention(KcContext* ctx, void* out, const void* q, const void* k, const void* v, int dt, const float* bias,
                            int B, int Lq, int Lk, int kv_len, int H, int D, float scale, int block_size, int q_offset,
                            int out_dt);

int main(int argc, char** argv) {
  if (argc != 3) kc_emu::fail("usage: attention IN OUT");
  kc_emu::Reader in(argv[1]);
  int32_t h[12];
  memcpy(h, in.take(sizeof h), sizeof h);
  float scale;
  memcpy(&scale, in.take(4), 4);
  const int B = h[0], Lq = h[1], Lk = h[2], kv_len = h[3], H = h[4], D = h[5], dt = h[6], out_dt = h[7], has_bias = h[8];
  const size_t e = dt == KC_F32 ? 4 : 2, q_n = (size_t)B * Lq * H * D, kv_n = (size_t)B * Lk * H * D;
  const void* q = in.take(e * q_n);
  const void* k = in.take(e * kv_n);
  const void* v = in.take(e * kv_n);
  const float* bias = has_bias ? (const float*)in.take(4 * (size_t)H * Lq * kv_len) : nullptr;
  in.end();
  const size_t out_bytes = (out_dt == KC_F32 ? 4 : 2) * q_n;
  void* out = kc_emu::device_alloc(out_bytes);
  memset(out, 0xFF, out_bytes);  // NaN: an output the kernel does not write shows

  KcContext ctx{};
  ctx.sm_major = h[11] == 2 ? 9 : 8, ctx.sm_count = getenv("KC_EMU_SMS") ? atoi(getenv("KC_EMU_SMS")) : 2;
  // an A100's (or H100's) figures, which the mma.sync kernel's tiling model reads (attention_mma_tiles.cuh)
  ctx.smem_per_sm = (h[11] == 2 ? 228 : 164) * 1024, ctx.smem_optin = ctx.smem_per_sm - 1024, ctx.smem_reserved = 1024;
  ctx.regs_per_sm = 65536, ctx.threads_per_sm = 2048;
  if (h[11] == 2) ctx.encode_tensor_map = (void*)&kc_emu_encode_tiled;
  ctx.attention_path = h[11];
  ctx.attention_bkv = kc_attention_bkv_setting(getenv("KINO_CUDA_ATTENTION_BKV"));  // as kc_create reads it
  ctx.attention_bq = kc_attention_bq_setting(getenv("KINO_CUDA_ATTENTION_BQ"));
  ctx.attention_split = kc_attention_split_setting(getenv("KINO_CUDA_ATTENTION_SPLIT"));
  ctx.attention_parts = kc_attention_parts_setting(getenv("KINO_CUDA_ATTENTION_PARTS"));
  const int rc = kc_attention(&ctx, out, q, k, v, dt, bias, B, Lq, Lk, kv_len, H, D, scale, h[9], h[10], out_dt);
  if (rc) {
    fprintf(stderr, "kc_attention: %s (%d)\n", ctx.error, rc);
    return 1;
  }
  printf("kernel %s\n", ctx.last_attention);
  kc_emu::write_file(argv[2], out, out_bytes);
  return 0;
}
