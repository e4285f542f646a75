/*
 * Shared types and tiny helpers for kino's H.264 encoder.
 *
 * The same sources build two ways (tools/build/h264.ts): for wasm32 without a C library, and as a
 * native shared library against the system's libc. This header hides the difference: fixed-width
 * types, the memory functions, how entry points are exported, and the allocator (memory.c).
 * Everything else is target-independent integer C, so both builds produce identical bitstreams.
 */
#ifndef KINO_H264_COMMON_H
#define KINO_H264_COMMON_H

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef short i16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

#ifdef __wasm__
typedef __SIZE_TYPE__ size_t;
#define NULL ((void *)0)
#define INT_MAX 0x7fffffff
#define offsetof(type, member) __builtin_offsetof(type, member)
/* memory.c supplies these: clang lowers struct copies and zeroing loops to calls to them. */
void *memset(void *dst, int value, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
#define EXPORT(name) __attribute__((export_name(name), visibility("default")))
#else
#include <limits.h>
#include <stddef.h>
#include <string.h>
/* Native: the library is built with -fvisibility=hidden, so only these symbols are exported. */
#define EXPORT(name) __attribute__((visibility("default")))
#endif

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int iabs(int a) { return a < 0 ? -a : a; }
static inline int clip3(int lo, int hi, int v) { return v < lo ? lo : v > hi ? hi : v; }
static inline u8 clip_pixel(int v) { return (u8)(v < 0 ? 0 : v > 255 ? 255 : v); }
static inline int median3(int a, int b, int c) { return a + b + c - imin(a, imin(b, c)) - imax(a, imax(b, c)); }

/*
 * Every buffer of one encoder comes from its arena and lives as long as the encoder: allocated when
 * it is created, released all at once by arena_release(). In wasm each encoder owns a whole
 * instance, so the arena is a bump pointer over memory.grow and release is a no-op (the host drops
 * the instance); natively it is a list of malloc'd blocks.
 */
typedef struct {
  void *blocks; /* native: the most recent block; each block starts with a link to the previous one */
} arena_t;
/* 64-byte aligned, zero-filled; NULL when out of memory. */
void *arena_alloc(arena_t *arena, size_t bytes);
void arena_release(arena_t *arena);

#endif
