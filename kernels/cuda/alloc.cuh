// The caching allocator's state (alloc.cu), shared with the stream capture of graph.cu, which needs
// to steer allocations into a graph's own pool while it records.
#pragma once
#include "common.cuh"
#include <map>
#include <unordered_map>

// Blocks that belong to one user (a CUDA graph): handed out only while the pool is active, and given
// back to the pool, never to the general cache, when freed — a graph's kernels keep reading and
// writing the addresses they were recorded with, so nobody else may hold them in between.
struct KcPool {
  std::multimap<size_t, void*> free_blocks;  // rounded size → block not in use
  size_t bytes = 0;                          // held by the pool, free or live
};

struct KcBlock {
  size_t size;
  KcPool* pool;  // null: the general cache
};

struct KcAllocator {
  std::multimap<size_t, void*> free_blocks;        // the general cache: rounded size → block
  std::unordered_map<void*, KcBlock> live_blocks;
  KcPool* active = nullptr;   // while set, allocations come from (and belong to) this pool
  bool capturing = false;     // a stream capture is open (graph.cu): no cudaFree, nothing synchronous
  size_t in_use = 0, cached = 0, peak = 0;
  size_t mallocs = 0;         // cudaMalloc calls: what a steady state must not make
  size_t allocs = 0;          // blocks handed out (kc_alloc and every kernel's scratch)
  size_t pooled = 0;          // bytes held by pools
};

// Frees every block, live, cached or pooled (kc_destroy, after the stream is idle).
void kc_alloc_destroy(KcContext* ctx);
