// The caching allocator: cudaMalloc/cudaFree are slow and cudaFree synchronizes the device, so freed
// blocks go to free lists keyed by their rounded size and are handed out again. Small requests round
// to 512 B, large ones to 2 MiB; a cached block is reused for a request up to 1/8 smaller than it.
// When cudaMalloc runs out of memory the general cache is returned to the driver and the allocation
// retried once (not while a stream capture is open: cudaFree would break it).
//
// Pools (KcPool, alloc.cuh) set blocks aside for one user, a CUDA graph: while a pool is active every
// allocation — tensors and the kernels' scratch alike — comes from it (its own free blocks first,
// then the general cache, then cudaMalloc) and returns to it when freed. Destroying a pool gives its
// free blocks to the general cache; its blocks still live go there when they are freed.
//
// Stream order makes reuse safe without a sync: one context has one stream, and a block freed after
// the ops that use it were enqueued is only written again by ops enqueued later.
#include "alloc.cuh"
#include "context_lost.cuh"
#include <stdio.h>

static size_t kc_round_size(size_t n) {
  const size_t small = 512, large = 2u << 20;
  if (n == 0) n = 1;
  return n <= (1u << 20) ? (n + small - 1) / small * small : (n + large - 1) / large * large;
}

static void kc_release_cache(KcAllocator* a) {
  for (auto& kv : a->free_blocks) cudaFree(kv.second);
  a->free_blocks.clear();
  a->cached = 0;
}

// A block of `size` (rounded) from a free list: the smallest that is at least size and at most 1/8
// larger. Returns null when none fits; *size becomes the block's size.
static void* kc_take(std::multimap<size_t, void*>& list, size_t* size) {
  auto it = list.lower_bound(*size);
  if (it == list.end() || it->first > *size + *size / 8) return nullptr;
  void* p = it->second;
  *size = it->first;
  list.erase(it);
  return p;
}

static void* kc_alloc_impl(KcContext* ctx, size_t bytes) {
  KcAllocator* a = ctx->alloc;
  KcPool* pool = a->active;
  size_t size = kc_round_size(bytes);
  void* p = pool ? kc_take(pool->free_blocks, &size) : nullptr;
  if (p) {
    a->cached -= size;
  } else if ((p = kc_take(a->free_blocks, &size))) {
    a->cached -= size;
    if (pool) pool->bytes += size, a->pooled += size;
  } else {
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation && !a->capturing) {
      cudaGetLastError();  // clear the error before retrying
      kc_release_cache(a);
      e = cudaMalloc(&p, size);
    }
    // A context lost earlier answers every cudaMalloc with its error: that is no shortage of memory.
    if (kc_code_loses_context(e)) {
      kc_fail(ctx, (int)e, "kc_alloc (cudaMalloc)", cudaGetErrorString(e));
      return nullptr;
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      char detail[160];
      snprintf(detail, sizeof detail, "%s while allocating %zu bytes (%zu in use, %zu cached)",
               cudaGetErrorString(e), size, a->in_use, a->cached);
      kc_fail(ctx, KC_E_OOM, "kc_alloc", detail);
      return nullptr;
    }
    a->mallocs++;
    if (pool) pool->bytes += size, a->pooled += size;
  }
  a->allocs++;
  a->live_blocks[p] = KcBlock{size, pool};
  a->in_use += size;
  if (a->in_use > a->peak) a->peak = a->in_use;
  return p;
}

static int kc_free_impl(KcContext* ctx, void* p) {
  if (!p) return 0;
  KcAllocator* a = ctx->alloc;
  auto it = a->live_blocks.find(p);
  if (it == a->live_blocks.end()) return kc_fail(ctx, KC_E_ARG, "kc_free", "pointer not allocated by this context");
  KcBlock b = it->second;
  a->live_blocks.erase(it);
  a->in_use -= b.size;
  a->cached += b.size;
  (b.pool ? b.pool->free_blocks : a->free_blocks).emplace(b.size, p);
  return 0;
}

void* kc_scratch(KcContext* ctx, size_t bytes) { return kc_alloc_impl(ctx, bytes); }
void kc_scratch_release(KcContext* ctx, void* p) { kc_free_impl(ctx, p); }

void kc_alloc_destroy(KcContext* ctx) {
  KcAllocator* a = ctx->alloc;
  for (auto& kv : a->live_blocks) cudaFree(kv.first);
  a->live_blocks.clear();
  kc_release_cache(a);
  delete a;
  ctx->alloc = nullptr;
}

// out[0..5]: bytes in use, bytes cached in free lists (pools' included), peak bytes in use, cudaMalloc
// calls, blocks handed out (allocations and the kernels' scratch), bytes held by pools.
KC_API void kc_memory_stats(KcContext* ctx, int64_t* out) {
  KcAllocator* a = ctx->alloc;
  out[0] = (int64_t)a->in_use;
  out[1] = (int64_t)a->cached;
  out[2] = (int64_t)a->peak;
  out[3] = (int64_t)a->mallocs;
  out[4] = (int64_t)a->allocs;
  out[5] = (int64_t)a->pooled;
}

// Returns a device pointer of at least `bytes` (256-byte aligned), or null with kc_last_error set.
KC_API void* kc_alloc(KcContext* ctx, uint64_t bytes) { return kc_alloc_impl(ctx, (size_t)bytes); }
KC_API int kc_free(KcContext* ctx, void* p) { return kc_free_impl(ctx, p); }
// Hands every block of the general cache back to the driver (waits for the stream first).
KC_API int kc_empty_cache(KcContext* ctx) {
  if (ctx->alloc->capturing) return kc_fail(ctx, KC_E_ARG, "kc_empty_cache", "not while a graph is being recorded");
  KC_TRY(kc_check(ctx, cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize"));
  kc_release_cache(ctx->alloc);
  return 0;
}

// ---- pools ---------------------------------------------------------------------------------------

KC_API KcPool* kc_pool_create(KcContext*) { return new KcPool(); }

// Makes `pool` the source of every allocation until kc_pool_select(ctx, null).
KC_API int kc_pool_select(KcContext* ctx, KcPool* pool) {
  ctx->alloc->active = pool;
  return 0;
}

// The pool's free blocks join the general cache; its live blocks go there when they are freed. Safe
// while ops that use its blocks are still queued: later users of the blocks are later on the stream.
KC_API void kc_pool_destroy(KcContext* ctx, KcPool* pool) {
  if (!pool) return;
  KcAllocator* a = ctx->alloc;
  if (a->active == pool) a->active = nullptr;
  for (auto& kv : pool->free_blocks) a->free_blocks.emplace(kv.first, kv.second);
  for (auto& kv : a->live_blocks)
    if (kv.second.pool == pool) kv.second.pool = nullptr;
  a->pooled -= pool->bytes;
  delete pool;
}
