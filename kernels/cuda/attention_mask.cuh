// The keys a query row of kc_attention may see (attention.cu's header: the masks), shared by the
// kernels, the host-side model of the mma.sync kernel's waves (attention_mma_tiles.cuh) and the Hopper
// kernel's stream-K schedule (attention_split.cuh). Plain C++ where CUDA is absent, so that the tests of
// the model and the schedule compile it with the host compiler.
#pragma once

#if defined(__CUDACC__)
#define KC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define KC_HOST_DEVICE inline
#endif

// The keys query row i may see are the prefix [0, n) with this n: every key below kv_len, or under a
// block-causal mask only the keys of its own and earlier blocks.
KC_HOST_DEVICE int kc_visible_keys(int i, int kv_len, int block_size, int q_offset) {
  if (block_size <= 0) return kv_len;
  long long lim = ((long long)(q_offset + i) / block_size + 1) * block_size;
  return lim < kv_len ? (int)lim : kv_len;
}
// The keys some row of the query tile [q0, q0 + rows) sees: its last row's, since n grows with the row.
KC_HOST_DEVICE int kc_tile_keys(int q0, int rows, int Lq, int kv_len, int block_size, int q_offset) {
  return kc_visible_keys((q0 + rows < Lq ? q0 + rows : Lq) - 1, kv_len, block_size, q_offset);
}
