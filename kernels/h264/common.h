/*
 * Shared types and tiny helpers for kino's H.264 encoder.
 *
 * The encoder is built for wasm32 without a C library (see tools/build/h264.ts), so this header
 * defines the fixed-width types and the handful of helpers every file needs.
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
typedef __SIZE_TYPE__ size_t;

#define NULL ((void *)0)
#define EXPORT(name) __attribute__((export_name(name), visibility("default")))

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int iabs(int a) { return a < 0 ? -a : a; }
static inline int clip3(int lo, int hi, int v) { return v < lo ? lo : v > hi ? hi : v; }
static inline u8 clip_pixel(int v) { return (u8)(v < 0 ? 0 : v > 255 ? 255 : v); }
static inline int median3(int a, int b, int c) { return a + b + c - imin(a, imin(b, c)) - imax(a, imax(b, c)); }

/* memory.c: the C library pieces clang may call, and a bump allocator over memory.grow. */
void *memset(void *dst, int value, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
/* 64-byte aligned, zero-filled; never freed (each encoder owns a whole wasm instance). NULL when out of memory. */
void *arena_alloc(size_t bytes);

#endif
