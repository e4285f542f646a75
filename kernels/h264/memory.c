/*
 * Memory for a libc-free wasm module.
 *
 * memset/memcpy/memmove exist because clang lowers struct copies and zeroing loops to calls to
 * them. We build with -mbulk-memory, so __builtin_memset/__builtin_memmove compile to the
 * memory.fill/memory.copy instructions instead of calling back into these functions.
 *
 * Allocation is a bump pointer: one encoder lives in one wasm instance, allocates all its buffers
 * when it is created and frees them by dropping the instance, so nothing is ever freed here.
 */
#include "common.h"

extern u8 __heap_base; /* provided by wasm-ld: first byte after static data and the stack */

static size_t arena_top;

void *memset(void *dst, int value, size_t n) {
  __builtin_memset(dst, value, n);
  return dst;
}

void *memcpy(void *dst, const void *src, size_t n) {
  __builtin_memmove(dst, src, n);
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  __builtin_memmove(dst, src, n);
  return dst;
}

void *arena_alloc(size_t bytes) {
  if (arena_top == 0) arena_top = (size_t)&__heap_base;
  size_t start = (arena_top + 63) & ~(size_t)63;
  size_t end = start + bytes;
  if (end < start) return NULL;
  size_t have = __builtin_wasm_memory_size(0) * 65536;
  if (end > have) {
    size_t pages = (end - have + 65535) / 65536;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return NULL;
  }
  arena_top = end;
  /* Fresh wasm pages are zero and nothing is ever reused, so the block is already zero-filled. */
  return (void *)start;
}
