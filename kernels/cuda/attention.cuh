// Attention pieces shared by attention.cu (kc_attention, the mma.sync and SIMT kernels) and
// attention_wgmma.cu (the Hopper kernel). Semantics, reference formula and each kernel's precision
// promise: attention.cu's header.
#pragma once
#include "attention_mask.cuh"
#include "common.cuh"
#include "attention_split.cuh"

constexpr float KC_LOG2E = 1.4426950408889634f;

// KINO_CUDA_ATTENTION_BKV (kc_create reads it into ctx->attention_bkv): "176" gives the wgmma kernel
// 176-key tiles at D 128 (FlashAttention-3's forward tile for D 128 without causal masks); anything
// else keeps 128. Not chosen by auto: tools/gpu-check.sh times both.
static inline int kc_attention_bkv_setting(const char* value) {
  return value != nullptr && value[0] == '1' && value[1] == '7' && value[2] == '6' && value[3] == 0 ? 176 : 128;
}

// KINO_CUDA_ATTENTION_PARTS (kc_create reads it into ctx->attention_parts): "1" … "8" forces the
// mma.sync kernel to split each block's keys into that many parts (1: none); anything else lets the
// model choose (attention_mma_tiles.cuh). tools/gpu-check.sh times the pick beside 1.
static inline int kc_attention_parts_setting(const char* value) {
  return value != nullptr && value[0] >= '1' && value[0] <= '8' && value[1] == 0 ? value[0] - '0' : 0;
}

// KINO_CUDA_ATTENTION_BQ (kc_create reads it into ctx->attention_bq): "64" or "128" forces the mma.sync
// kernel's query rows per block; anything else lets kc_attention choose by shape (attention.cu).
// tools/gpu-check.sh times both.
static inline int kc_attention_bq_setting(const char* value) {
  if (value == nullptr) return 0;
  if (value[0] == '6' && value[1] == '4' && value[2] == 0) return 64;
  return value[0] == '1' && value[1] == '2' && value[2] == '8' && value[3] == 0 ? 128 : 0;
}

// The Hopper kernel runs only on sm_90 with the driver's tensor-map encoder, for D 64 and 128.
bool kc_attention_wgmma_supported(const KcContext* ctx, int D);
// ... and reads q, k, v with TMA, which (with its 128-byte swizzle) needs them 128-byte aligned.
static inline bool kc_attention_wgmma_aligned(const void* q, const void* k, const void* v) {
  return (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) & 127) == 0;
}
// bf16 q [B, Lq, H, D], k and v [B, Lkv, H, D] (keys from kv_len on are never read), f32 or bf16 out
// (out_bf16); fails with KC_E_UNSUPPORTED where kc_attention_wgmma_supported is false or a buffer is
// misaligned (kc_attention_wgmma_aligned, out 8-byte aligned).
int kc_attention_wgmma_launch(KcContext* ctx, void* out, bool out_bf16, const void* q, const void* k, const void* v,
                              const float* bias, int B, int Lq, int Lkv, int kv_len, int H, int D, float scale,
                              int block_size, int q_offset);
// The stream-K combine (attention_combine.cu): merges the slots of `partial` into the rows of every item
// `split` cut, for a launch of bq-row query tiles over q_tiles per head.
int kc_attention_combine_launch(KcContext* ctx, void* out, bool out_bf16, const float* partial, const KcAttentionSplit& split,
                                int bq, int q_tiles, int Lq, int H, int D);
// ... and for attention split into `splits` parts over its keys (the mma.sync kernel): every item's parts
// in slots item · splits + part, items numbered as kc_attention_item numbers them.
int kc_attention_combine_parts_launch(KcContext* ctx, void* out, bool out_bf16, const float* partial, int splits, int bq,
                                      int q_tiles, int B, int Lq, int H, int D);

// KINO_CUDA_ATTENTION_SPLIT (kc_create reads it into ctx->attention_split): the Hopper attention's
// stream-K schedule (attention_split.cuh) where it saves at least KC_SPLIT_MIN_GAIN key tiles (1, the
// default); "0" walks items whole always (tools/gpu-check.sh times both); "always" splits wherever a
// range boundary cuts an item (2: the emulator's small cases, which would not pay on a GPU).
static inline int kc_attention_split_setting(const char* value) {
  if (value == nullptr) return 1;
  if (value[0] == '0' && value[1] == 0) return 0;
  const char* always = "always";
  for (int i = 0;; i++) {
    if (value[i] != always[i]) return 1;
    if (!value[i]) return 2;
  }
}
// The least gain (in key tiles of the busiest block) stream-K needs under a setting; 0 for off.
static inline int kc_attention_split_min_gain(int setting) {
  return setting == 0 ? 0 : setting == 2 ? 1 : KC_SPLIT_MIN_GAIN;
}
