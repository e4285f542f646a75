/*
 * Memory for the encoder's two builds (see common.h).
 *
 * wasm: there is no C library. memset/memcpy/memmove exist because clang lowers struct copies and
 * zeroing loops to calls to them; with -mbulk-memory the builtins below compile to the
 * memory.fill/memory.copy instructions instead of calling back into these functions. Allocation is
 * a bump pointer: one encoder lives in one instance and is freed by dropping the instance.
 *
 * native: malloc'd blocks chained through their first bytes, freed together by arena_release().
 */
#include "common.h"

#ifdef __wasm__

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

void *arena_alloc(arena_t *arena, size_t bytes) {
  (void)arena;
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

void arena_release(arena_t *arena) { (void)arena; }

#else
#include <stdlib.h>

#define BLOCK_HEADER 64 /* keeps the payload 64-byte aligned */

void *arena_alloc(arena_t *arena, size_t bytes) {
  if (bytes > (size_t)-1 - 2 * BLOCK_HEADER) return NULL;
  size_t size = (bytes + BLOCK_HEADER + 63) & ~(size_t)63;
  u8 *block = (u8 *)aligned_alloc(64, size);
  if (!block) return NULL;
  memset(block, 0, size);
  *(void **)block = arena->blocks;
  arena->blocks = block;
  return block + BLOCK_HEADER;
}

void arena_release(arena_t *arena) {
  void *block = arena->blocks;
  while (block) {
    void *previous = *(void **)block;
    free(block);
    block = previous;
  }
  arena->blocks = NULL;
}

#endif
