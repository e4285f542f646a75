// The context handle and everything that is not a kernel: device discovery, the stream, host↔device
// copies, timing events and error strings (the caching allocator: alloc.cu; graphs: graph.cu).
//
// One context owns one device and one stream; every op of the library is enqueued on that stream, so
// stream order alone makes it safe to hand a freed block to the next allocation without a sync.
// The context is not thread-safe: kino gives each worker process (and so each GPU) one context.
#include "alloc.cuh"
#include "attention.cuh"
#include "context_lost.cuh"
#include "conv.cuh"
#include "gemm.cuh"
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kc_fail(KcContext* ctx, int code, const char* where, const char* detail) {
  if (!ctx) return code;
  snprintf(ctx->error, sizeof ctx->error, "%s: %s (error %d)", where, detail ? detail : "failed", code);
  if (!ctx->lost && kc_code_loses_context(code)) ctx->lost = code;
  return code;
}

// The CUDA error that lost this context for good (every later call fails with it; only a new process
// can use the device again), or 0 while it is usable.
KC_API int kc_context_lost(KcContext* ctx) { return ctx ? ctx->lost : 0; }

// Whether `code` is one of the errors that lose a context (context_lost.cuh), for tests without a GPU.
KC_API int kc_error_loses_context(int code) { return kc_code_loses_context(code) ? 1 : 0; }

// ---- context -------------------------------------------------------------------------------------

static void kc_copy_message(char* dst, int len, const char* msg) {
  if (dst && len > 0) {
    strncpy(dst, msg, (size_t)len - 1);
    dst[len - 1] = 0;
  }
}

// Creates a context on `device`. On failure returns null, stores the CUDA error code in *code and a
// message in err: with no driver or no GPU, cudaGetDeviceCount answers 35 (insufficient driver) or
// 100 (no device) and that is what the caller reports as "no device".
KC_API KcContext* kc_create(int device, int32_t* code, char* err, int err_len) {
  char msg[512];
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (e == cudaSuccess) e = cudaErrorNoDevice;
    snprintf(msg, sizeof msg, "cudaGetDeviceCount: %s (error %d)", cudaGetErrorString(e), (int)e);
    cudaGetLastError();
    if (code) *code = (int32_t)e;
    kc_copy_message(err, err_len, msg);
    return nullptr;
  }
  if (device < 0 || device >= count) {
    snprintf(msg, sizeof msg, "device %d requested but %d device(s) present", device, count);
    if (code) *code = (int32_t)cudaErrorInvalidDevice;
    kc_copy_message(err, err_len, msg);
    return nullptr;
  }
  cudaDeviceProp prop;
  if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
    snprintf(msg, sizeof msg, "cudaSetDevice(%d): %s (error %d)", device, cudaGetErrorString(e), (int)e);
    if (code) *code = (int32_t)e;
    kc_copy_message(err, err_len, msg);
    return nullptr;
  }
  KcContext* ctx = new KcContext();
  memset(ctx->error, 0, sizeof ctx->error);
  ctx->device = device;
  ctx->sm_major = prop.major;
  ctx->sm_minor = prop.minor;
  ctx->sm_count = prop.multiProcessorCount;
  ctx->smem_optin = prop.sharedMemPerBlockOptin;
  ctx->smem_per_sm = (int)prop.sharedMemPerMultiprocessor;
  ctx->smem_reserved = (int)prop.reservedSharedMemPerBlock;
  ctx->regs_per_sm = prop.regsPerMultiprocessor;
  ctx->threads_per_sm = prop.maxThreadsPerMultiProcessor;
  ctx->alloc = new KcAllocator();
  ctx->encode_tensor_map = nullptr;
  ctx->gemm_path = 0;
  ctx->last_gemm = ctx->last_attention = ctx->last_conv = "";
  ctx->timer[0] = ctx->timer[1] = nullptr;
  ctx->lost = 0;
  const char* path = getenv("KINO_CUDA_GEMM");
  if (path && strcmp(path, "mma") == 0) ctx->gemm_path = 1;
  if (path && strcmp(path, "simt") == 0) ctx->gemm_path = 2;
  if (path && strcmp(path, "wgmma") == 0) ctx->gemm_path = 3;
  if (path && strcmp(path, "wgmma-persistent") == 0) ctx->gemm_path = 4;
  if (path && strcmp(path, "wgmma-pingpong") == 0) ctx->gemm_path = 5;
  if (path && strcmp(path, "wgmma-persistent-tma") == 0) ctx->gemm_path = 6;
  const char* attention = getenv("KINO_CUDA_ATTENTION");
  ctx->attention_path = 0;
  if (attention && strcmp(attention, "f32") == 0) ctx->attention_path = 1;
  if (attention && strcmp(attention, "wgmma") == 0) ctx->attention_path = 2;
  ctx->attention_bkv = kc_attention_bkv_setting(getenv("KINO_CUDA_ATTENTION_BKV"));
  ctx->attention_bq = kc_attention_bq_setting(getenv("KINO_CUDA_ATTENTION_BQ"));
  ctx->attention_split = kc_attention_split_setting(getenv("KINO_CUDA_ATTENTION_SPLIT"));
  ctx->attention_parts = kc_attention_parts_setting(getenv("KINO_CUDA_ATTENTION_PARTS"));
  ctx->gemm_mma_tile = kc_gemm_mma_tile_setting(getenv("KINO_CUDA_GEMM_MMA_TILE"));
  const char* conv = getenv("KINO_CUDA_CONV");
  ctx->conv_path = 0;
  if (conv && strcmp(conv, "simt") == 0) ctx->conv_path = 1;
  if (conv && strcmp(conv, "mma") == 0 && ctx->sm_major >= 8) ctx->conv_path = 2;
  if (conv && strcmp(conv, "wgmma") == 0 && ctx->sm_major >= 8) ctx->conv_path = 3;  // mma.sync off sm_90 (conv.cu)
  ctx->conv_mma_tile = kc_conv_mma_tile_setting(getenv("KINO_CUDA_CONV_MMA_TILE"));
  if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    snprintf(msg, sizeof msg, "cudaStreamCreate: %s (error %d)", cudaGetErrorString(e), (int)e);
    if (code) *code = (int32_t)e;
    kc_copy_message(err, err_len, msg);
    delete ctx->alloc;
    delete ctx;
    return nullptr;
  }
  // The sm_90 kernels (GEMM, attention) describe their operands with TMA tensor maps, which only the
  // driver API encodes; the runtime hands out the driver's entry point so the library needs no link
  // against libcuda.
  if (ctx->sm_major == 9) {
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      ctx->encode_tensor_map = fn;
    cudaGetLastError();
  }
  if (code) *code = 0;
  kc_copy_message(err, err_len, "");
  return ctx;
}

KC_API void kc_destroy(KcContext* ctx) {
  if (!ctx) return;
  cudaStreamSynchronize(ctx->stream);
  kc_alloc_destroy(ctx);
  cudaStreamDestroy(ctx->stream);
  if (ctx->timer[0]) cudaEventDestroy(ctx->timer[0]);
  if (ctx->timer[1]) cudaEventDestroy(ctx->timer[1]);
  delete ctx;
}

// Kernel choice: gemm_path 0 auto / 1 mma.sync / 2 SIMT / 3 wgmma / 4 wgmma on the persistent grid /
// 5 wgmma ping-pong / 6 the persistent grid with the TMA-store epilogue; attention_path 0 auto / 1 f32
// SIMT / 2 wgmma / 3 mma.sync; conv_path 0 auto / 1 SIMT / 2 mma.sync / 3 wgmma. gemm_path 2,
// attention_path 1 and conv_path 1 are the exact ones (f32 products, no bf16 rounding of activations),
// for tests and comparisons; forced tensor-core convs run every call (any shape) on the tensor cores;
// attention_path 2, gemm_path 4, 5 and 6 and conv_path 3 run the Hopper kernels that auto does not
// pick yet (attention.cu, gemm.cu, conv.cu). A forced tensor-core path still falls back where a call's
// shape or dtypes rule the kernel out (kc_last_kernel names what ran), except forced wgmma attention,
// which fails instead; a path this device cannot run at all is refused here.
KC_API int kc_set_paths(KcContext* ctx, int gemm_path, int attention_path, int conv_path) {
  if (gemm_path < 0 || gemm_path > 6 || attention_path < 0 || attention_path > 3 || conv_path < 0 || conv_path > 3)
    return kc_fail(ctx, KC_E_ARG, "kc_set_paths", "gemm_path must be 0..6, attention_path 0..3, conv_path 0..3");
  char why[160];
  if ((gemm_path == 1 || attention_path == 3 || conv_path == 2) && ctx->sm_major < 8) {
    snprintf(why, sizeof why, "mma.sync needs sm_80 or newer, this device is sm_%d%d", ctx->sm_major, ctx->sm_minor);
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_set_paths", why);
  }
  if ((gemm_path >= 3 || attention_path == 2 || conv_path == 3) && (ctx->sm_major != 9 || !ctx->encode_tensor_map)) {
    snprintf(why, sizeof why, "wgmma needs sm_90 and the driver's cuTensorMapEncodeTiled, this device is sm_%d%d%s",
             ctx->sm_major, ctx->sm_minor, ctx->sm_major == 9 ? " without it" : "");
    return kc_fail(ctx, KC_E_UNSUPPORTED, "kc_set_paths", why);
  }
  ctx->gemm_path = gemm_path;
  ctx->attention_path = attention_path;
  ctx->conv_path = conv_path;
  return 0;
}

// op 0: the kernel the last kc_gemm ran, op 1: the last kc_attention's, op 2: the last kc_conv3d's
// (names: KcContext).
KC_API const char* kc_last_kernel(KcContext* ctx, int op) {
  return op == 0 ? ctx->last_gemm : op == 1 ? ctx->last_attention : op == 2 ? ctx->last_conv : "";
}

KC_API const char* kc_last_error(KcContext* ctx) { return ctx ? ctx->error : "no context"; }

KC_API const char* kc_error_string(int code) {
  switch (code) {
    case KC_E_ARG: return "invalid argument";
    case KC_E_UNSUPPORTED: return "unsupported dtype or shape";
    case KC_E_OOM: return "out of device memory";
    default: return cudaGetErrorString((cudaError_t)code);
  }
}

// A CUDA error's enum name ("cudaErrorIllegalAddress"), for messages an operator searches for.
KC_API const char* kc_error_name(int code) { return cudaGetErrorName((cudaError_t)code); }

// name: the device name; out[0..7]: sm major, sm minor, multiprocessors, total bytes, free bytes,
// shared memory per block (opt-in), driver version, runtime version.
KC_API int kc_device_info(KcContext* ctx, char* name, int name_len, int64_t* out) {
  cudaDeviceProp prop;
  KC_TRY(kc_check(ctx, cudaGetDeviceProperties(&prop, ctx->device), "cudaGetDeviceProperties"));
  kc_copy_message(name, name_len, prop.name);
  size_t free_b = 0, total_b = 0;
  KC_TRY(kc_check(ctx, cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  int64_t v[8] = {prop.major, prop.minor, prop.multiProcessorCount, (int64_t)total_b, (int64_t)free_b,
                  (int64_t)prop.sharedMemPerBlockOptin, drv, rt};
  memcpy(out, v, sizeof v);
  return 0;
}

// The device's PCI bus id ("0000:19:00.0"): which physical GPU this context drives, whatever index
// CUDA_VISIBLE_DEVICES gave it in this process, so a server can show that its workers hold distinct GPUs.
KC_API int kc_device_pci_bus_id(KcContext* ctx, char* out, int len) {
  KC_TRY(kc_check(ctx, cudaDeviceGetPCIBusId(out, len, ctx->device), "cudaDeviceGetPCIBusId"));
  return 0;
}

// Copies are enqueued on the context stream (after every op already enqueued) and waited for, because
// the host side is a JS-owned buffer that must not be touched by the device after we return.
KC_API int kc_upload(KcContext* ctx, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return 0;
  KC_TRY(kc_check(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx->stream), "kc_upload"));
  return kc_check(ctx, cudaStreamSynchronize(ctx->stream), "kc_upload (sync)");
}
KC_API int kc_download(KcContext* ctx, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return 0;
  KC_TRY(kc_check(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream), "kc_download"));
  return kc_check(ctx, cudaStreamSynchronize(ctx->stream), "kc_download (sync)");
}
KC_API int kc_copy(KcContext* ctx, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return 0;
  return kc_check(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream), "kc_copy");
}
KC_API int kc_memset(KcContext* ctx, void* dst, int byte, uint64_t bytes) {
  if (bytes == 0) return 0;
  return kc_check(ctx, cudaMemsetAsync(dst, byte, bytes, ctx->stream), "kc_memset");
}
KC_API int kc_synchronize(KcContext* ctx) {
  return kc_check(ctx, cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize");
}

// Timing for benchmarks: kc_timer_start records an event on the stream; kc_timer_stop records a
// second one, waits for it and returns the elapsed milliseconds (negative on error).
KC_API int kc_timer_start(KcContext* ctx) {
  if (!ctx->timer[0]) {
    KC_TRY(kc_check(ctx, cudaEventCreate(&ctx->timer[0]), "cudaEventCreate"));
    KC_TRY(kc_check(ctx, cudaEventCreate(&ctx->timer[1]), "cudaEventCreate"));
  }
  return kc_check(ctx, cudaEventRecord(ctx->timer[0], ctx->stream), "cudaEventRecord");
}
KC_API double kc_timer_stop(KcContext* ctx) {
  if (!ctx->timer[0] || kc_check(ctx, cudaEventRecord(ctx->timer[1], ctx->stream), "cudaEventRecord")) return -1;
  if (kc_check(ctx, cudaEventSynchronize(ctx->timer[1]), "cudaEventSynchronize")) return -1;
  float ms = 0;
  if (kc_check(ctx, cudaEventElapsedTime(&ms, ctx->timer[0], ctx->timer[1]), "cudaEventElapsedTime")) return -1;
  return ms;
}
