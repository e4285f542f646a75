/*
 * MSB-first bit writer for RBSP payloads and the Exp-Golomb codes of H.264 clause 9.1.
 * Inline because every syntax element of every macroblock goes through it.
 */
#ifndef KINO_H264_BITSTREAM_H
#define KINO_H264_BITSTREAM_H
#include "common.h"

typedef struct {
  u8 *start;
  u8 *ptr;
  u64 acc;   /* pending bits, right-aligned; only the low `count` bits are still unwritten */
  i64 count; /* 0..31 between calls; 64-bit so that no u32 store can alias it (see bw_put) */
} bitwriter_t;

/* Output words are stored as this (unaligned) u32 rather than as bytes: a u8 store may alias
 * anything, and would force acc, count and ptr back to memory after every word. */
typedef u32 __attribute__((aligned(1))) u32_unaligned;

static inline void bw_init(bitwriter_t *bw, u8 *buf) {
  bw->start = bw->ptr = buf;
  bw->acc = 0;
  bw->count = 0;
}

/* Appends the low n bits of value (n <= 32); whole 32-bit words go out big-endian, as one store.
 * Without a branch: a word is stored every time and the pointer moves only once 32 bits are
 * complete (an incomplete word is overwritten by the next store). Whether a code completes a word
 * depends on the data, so the branch mispredicted often. Needs 4 bytes of room past the last word. */
/* Both targets are little-endian, so a word goes out byte-swapped. wasm has no byte-swap
 * instruction (clang expands bswap32 into eleven shifts, masks and ors on every code): there the
 * words are stored as they are and bw_trailing turns all of them around in one vector pass. */
#if defined(__wasm__)
#define BW_WORD(x) (x)
#else
#define BW_WORD(x) __builtin_bswap32(x)
#endif

static inline void bw_put(bitwriter_t *bw, u32 value, int n) {
  bw->acc = (bw->acc << n) | (value & (u32)((1ull << n) - 1));
  bw->count += n;
  i64 full = bw->count >= 32;
  bw->count -= full << 5;
  *(u32_unaligned *)bw->ptr = BW_WORD((u32)(bw->acc >> bw->count));
  bw->ptr += full << 2;
}

/* bw_put for a value already below 2^n (table codes): without the mask. */
static inline void bw_put_exact(bitwriter_t *bw, u32 value, int n) {
  bw->acc = (bw->acc << n) | value;
  bw->count += n;
  i64 full = bw->count >= 32;
  bw->count -= full << 5;
  *(u32_unaligned *)bw->ptr = BW_WORD((u32)(bw->acc >> bw->count));
  bw->ptr += full << 2;
}

/* bitstream.c: makes the whole words in [start, end) big-endian where bw_put stored them as they
 * are (wasm); nothing to do elsewhere. */
void bw_words_big_endian(u8 *start, u8 *end);

static inline int ilog2(u32 v) { return 31 - __builtin_clz(v); } /* v > 0 */

/* ue(v): codeNum v as (len-1) zeros followed by v+1 in len bits. */
static inline void bw_ue(bitwriter_t *bw, u32 v) {
  u32 code = v + 1;
  int len = ilog2(code) + 1;
  if (len <= 16) {
    bw_put(bw, code, 2 * len - 1);
  } else {
    bw_put(bw, 0, len - 1);
    bw_put(bw, code, len);
  }
}

/* se(v): 1 -> 1, -1 -> 2, 2 -> 3, ... (Table 9-3). */
static inline u32 se_to_ue(int v) { return v > 0 ? 2u * (u32)v - 1u : 2u * (u32)(-v); }
static inline void bw_se(bitwriter_t *bw, int v) { bw_ue(bw, se_to_ue(v)); }

static inline int ue_bits(u32 v) { return 2 * ilog2(v + 1) + 1; }
static inline int se_bits(int v) { return ue_bits(se_to_ue(v)); }

/* rbsp_trailing_bits(): a stop bit, then zero bits to the byte boundary; flushes every bit. */
static inline void bw_trailing(bitwriter_t *bw) {
  bw_put(bw, 1, 1);
  if (bw->count & 7) bw_put(bw, 0, (int)(8 - (bw->count & 7)));
  bw_words_big_endian(bw->start, bw->ptr); /* the bytes below follow the last whole word */
  while (bw->count >= 8) {
    bw->count -= 8;
    *bw->ptr++ = (u8)(bw->acc >> bw->count);
  }
}

/* Bytes written; complete after bw_trailing. */
static inline int bw_aligned_size(const bitwriter_t *bw) { return (int)(bw->ptr - bw->start); }

/* bitstream.c: wraps an RBSP into a NAL unit (header byte + emulation prevention, clause 7.4.1). */
int nal_wrap(u8 *dst, int header, const u8 *rbsp, int rbsp_size);

#endif
