// Readbacks that overlap the work enqueued after them: a device→host copy on a second stream, so the
// caller's thread goes on enqueuing (the next chunk's DiT) instead of waiting in kc_download's
// cudaStreamSynchronize, and the copy runs beside those kernels.
//
//   main stream:     … [VAE decode i] [RGB→YUV i] (event `ready`) [DiT i+1 …]
//   readback stream:                   wait `ready` → [copy i → pinned staging] (event `done`)
//
// The caller polls `done` with kc_readback_poll (cudaEventQuery: never blocks) and, once it answers 0,
// takes the bytes with kc_readback_finish (pinned staging → its own buffer, on the host). The copy
// lands in page-locked memory because a device→host cudaMemcpyAsync into pageable memory returns only
// when the copy is complete, which would block the caller until the main stream reached `ready`.
//
// The source must stay allocated, and unwritten, until the poll said done: the caching allocator
// hands freed blocks on in main-stream order, which the readback stream is not part of. Slots (an
// event pair and a staging buffer) are kept and reused, so a steady stream of equal readbacks
// allocates nothing. Like the context, not thread-safe.
#include "alloc.cuh"
#include <cstring>
#include <vector>

struct KcReadbackSlot {
  cudaEvent_t ready = nullptr, done = nullptr;
  void* staging = nullptr;  // page-locked host memory
  size_t capacity = 0;
  uint64_t bytes = 0;
  bool busy = false;
};

struct KcReadbacks {
  cudaStream_t stream = nullptr;
  std::vector<KcReadbackSlot> slots;
};

static void kc_readback_slot_release(KcReadbackSlot& s) {
  if (s.ready) cudaEventDestroy(s.ready);
  if (s.done) cudaEventDestroy(s.done);
  if (s.staging) cudaFreeHost(s.staging);
  s = KcReadbackSlot{};
}

// The readback stream of one context; null on failure (kc_last_error says why).
KC_API KcReadbacks* kc_readbacks_create(KcContext* ctx) {
  auto* r = new KcReadbacks();
  if (kc_check(ctx, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "kc_readbacks_create (cudaStreamCreate)")) {
    delete r;
    return nullptr;
  }
  return r;
}

// Waits for copies still in flight, then frees every slot and the stream.
KC_API void kc_readbacks_destroy(KcContext* ctx, KcReadbacks* r) {
  (void)ctx;
  if (!r) return;
  cudaStreamSynchronize(r->stream);
  for (auto& s : r->slots) kc_readback_slot_release(s);
  cudaStreamDestroy(r->stream);
  delete r;
}

// Enqueues the copy of `bytes` (> 0) from device memory `src`, after everything already enqueued on
// the context stream. Returns the slot (≥ 0) to poll and finish, or -1 (kc_last_error says why).
KC_API int kc_readback_start(KcContext* ctx, KcReadbacks* r, const void* src, uint64_t bytes) {
  if (!r || !src || bytes == 0) return kc_fail(ctx, KC_E_ARG, "kc_readback_start", "needs the readbacks, a source and bytes > 0"), -1;
  if (ctx->alloc->capturing)
    return kc_fail(ctx, KC_E_ARG, "kc_readback_start", "a readback cannot be recorded into a graph"), -1;
  int slot = -1;
  for (size_t i = 0; i < r->slots.size() && slot < 0; i++)
    if (!r->slots[i].busy) slot = (int)i;
  if (slot < 0) {
    r->slots.emplace_back();
    slot = (int)r->slots.size() - 1;
  }
  KcReadbackSlot& s = r->slots[slot];
  if (!s.ready) {
    if (kc_check(ctx, cudaEventCreateWithFlags(&s.ready, cudaEventDisableTiming), "kc_readback_start (cudaEventCreate)") ||
        kc_check(ctx, cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "kc_readback_start (cudaEventCreate)")) {
      kc_readback_slot_release(s);
      return -1;
    }
  }
  if (s.capacity < bytes) {
    if (s.staging) cudaFreeHost(s.staging);
    s.staging = nullptr;
    s.capacity = 0;
    if (kc_check(ctx, cudaHostAlloc(&s.staging, bytes, cudaHostAllocDefault), "kc_readback_start (cudaHostAlloc)")) return -1;
    s.capacity = bytes;
  }
  if (kc_check(ctx, cudaEventRecord(s.ready, ctx->stream), "kc_readback_start (cudaEventRecord)") ||
      kc_check(ctx, cudaStreamWaitEvent(r->stream, s.ready, 0), "kc_readback_start (cudaStreamWaitEvent)") ||
      kc_check(ctx, cudaMemcpyAsync(s.staging, src, bytes, cudaMemcpyDeviceToHost, r->stream), "kc_readback_start (cudaMemcpyAsync)") ||
      kc_check(ctx, cudaEventRecord(s.done, r->stream), "kc_readback_start (cudaEventRecord)"))
    return -1;
  s.bytes = bytes;
  s.busy = true;
  return slot;
}

// 0 once the copy of `slot` has landed, cudaErrorNotReady (600) while it is in flight, another error
// code when it failed. Never blocks.
KC_API int kc_readback_poll(KcContext* ctx, KcReadbacks* r, int slot) {
  if (!r || slot < 0 || slot >= (int)r->slots.size() || !r->slots[slot].busy)
    return kc_fail(ctx, KC_E_ARG, "kc_readback_poll", "no readback in flight in this slot");
  cudaError_t e = cudaEventQuery(r->slots[slot].done);
  if (e == cudaErrorNotReady) return (int)e;
  return kc_check(ctx, e, "kc_readback_poll (cudaEventQuery)");
}

// Copies a finished readback's bytes into `dst` (exactly the bytes started; null dst only drops them)
// and frees the slot for the next readback. Waits for the copy if the poll had not yet seen it land.
KC_API int kc_readback_finish(KcContext* ctx, KcReadbacks* r, int slot, void* dst, uint64_t bytes) {
  if (!r || slot < 0 || slot >= (int)r->slots.size() || !r->slots[slot].busy)
    return kc_fail(ctx, KC_E_ARG, "kc_readback_finish", "no readback in flight in this slot");
  KcReadbackSlot& s = r->slots[slot];
  if (dst && bytes != s.bytes) return kc_fail(ctx, KC_E_ARG, "kc_readback_finish", "dst must take exactly the bytes started");
  const int rc = kc_check(ctx, cudaEventSynchronize(s.done), "kc_readback_finish (cudaEventSynchronize)");
  if (!rc && dst) memcpy(dst, s.staging, bytes);
  s.busy = false;
  return rc;
}
