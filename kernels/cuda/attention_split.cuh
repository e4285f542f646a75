// How the Hopper attention (attention_wgmma.cu) shares key tiles among its persistent blocks when every
// work item has the same number of them: stream-K, the split of one long list of key tiles into equal
// ranges, one per block, with an item cut by a range boundary finished by a combine kernel
// (attention_combine.cu). The work items' numbering and the slots' layout serve the mma.sync kernel's
// parts over the keys too (attention_mma.cuh). Plain C++ (host and device), so that
// test/runtime/cuda-attention-split.test.ts checks the arithmetic on its own
// (cuda-emulator/attention-split.cpp).
//
// Why: a work item (128 queries of one head) costs the same at every item when the mask leaves every
// query tile the same keys — a streaming chunk over its cache, a clip's bidirectional forward — so the
// items walked whole by G blocks take ⌈items / G⌉ rounds. At Wan2.1-1.3B's streaming chunk (4680
// queries, 12 heads: 444 items) an H200's 132 blocks take 4 rounds where 3.36 would do: 84 % of the
// time is useful. Split into G equal ranges of the 444 · T key tiles, the blocks finish together; an
// item cut by a boundary leaves each part's unnormalized output and softmax statistics in a slot, and
// the combine kernel merges them (exact, as the online softmax merges tiles). Where the ranges fall on
// item boundaries anyway (items a multiple of G) the items are walked whole and nothing changes.
//
// Positions: item i's key tiles are [i·T, (i+1)·T) of the list; block c takes [begin(c), begin(c+1)),
// begin(c) = ⌊c · W / G⌋ with W = items · T. A block's range holds at most two cut parts: its first
// part, when the range starts inside an item (slot 2c), and its last one, when it ends inside an item
// (slot 2c + 1); a range inside one item is one part (slot 2c, as it starts inside). So the combine of
// an item finds its parts without any bookkeeping: the block whose range holds the item's first tile
// wrote slot 2c + 1, each later block whose range starts inside the item wrote slot 2c.
#pragma once
#include <stdint.h>
#include "attention_mask.cuh"

struct KcAttentionSplit {
  int64_t work;  // W: key tiles in all, items · tiles
  int tiles;     // T: key tiles of every item
  int grid;      // G: blocks
};

// Work item `item` (of q_tiles query tiles of bq rows, H heads, then batch items): its first query row,
// head and batch item. Within a head the query tiles go last-first: under a block-causal mask the later
// tiles see the most keys, so walked whole the longest items start in the first round.
struct KcAttentionItem {
  int q0, h, b;
};
KC_HOST_DEVICE KcAttentionItem kc_attention_item(int64_t item, int q_tiles, int H, int bq) {
  const int64_t hb = item / q_tiles;
  return {(int)(q_tiles - 1 - item % q_tiles) * bq, (int)(hb % H), (int)(hb / H)};
}

// A slot holds a cut part's output rows unnormalized (f32, rows × D), then per row the running max of
// the logits in log2 units and the sum of exp2(logit - max): the online softmax's state.
KC_HOST_DEVICE int64_t kc_split_slot_floats(int rows, int D) { return (int64_t)rows * (D + 2); }

KC_HOST_DEVICE int64_t kc_split_begin(const KcAttentionSplit& s, int c) {
  return (int64_t)c * s.work / s.grid;
}
// The slot of a cut part that block c computed, from the part's first key tile within its item (t0).
KC_HOST_DEVICE int kc_split_slot(int c, int t0) { return 2 * c + (t0 > 0 ? 0 : 1); }

// The part of block c's range that starts at *pos (which then moves past it; the range ends at `end`):
// its item, first key tile within the item, tile count, and slot (-1 where it is the whole item).
struct KcSplitPart {
  int64_t item;
  int t0, ntiles, slot;
};
KC_HOST_DEVICE KcSplitPart kc_split_next(const KcAttentionSplit& s, int c, int64_t* pos, int64_t end) {
  KcSplitPart p;
  p.item = *pos / s.tiles;
  const int64_t start = p.item * s.tiles, stop = end < start + s.tiles ? end : start + s.tiles;
  p.t0 = (int)(*pos - start);
  p.ntiles = (int)(stop - *pos);
  p.slot = p.ntiles == s.tiles ? -1 : kc_split_slot(c, p.t0);
  *pos = stop;
  return p;
}

// Stream-K pays where it saves the busiest block at least this many key tiles: each cut item costs
// its parts' slots (64 KiB each at D 128, written and read back) and the call a combine launch, a few
// microseconds in all, while a 128 × 128 key tile takes ~2 µs of an H200 multiprocessor at D 128. So a
// streaming chunk's self-attention splits (37–256 tiles an item), its cross-attention over 512 text
// tokens (4 tiles) does not.
constexpr int KC_SPLIT_MIN_GAIN = 8;

// The grid of a stream-K launch over `items` items of `tiles` key tiles on `sms` multiprocessors (one
// block each), or 0 where the items are better walked whole: where no range boundary would cut an
// item, or the busiest block would walk fewer than `min_gain` key tiles less.
inline int kc_attention_split_grid(int64_t items, int tiles, int sms, int min_gain) {
  if (items <= 0 || tiles <= 1 || sms <= 1) return 0;
  const int64_t work = items * tiles, whole_blocks = items < sms ? items : sms;
  const KcAttentionSplit s{work, tiles, (int)(work < sms ? work : sms)};
  const int64_t whole = (items + whole_blocks - 1) / whole_blocks * tiles, busiest = (work + s.grid - 1) / s.grid;
  if (whole - busiest < min_gain) return 0;
  for (int c = 1; c < s.grid; c++)
    if (kc_split_begin(s, c) % tiles != 0) return s.grid;
  return 0;
}

// The item a combine block finishes: boundary b (1 ≤ b < G) is the first one inside item *item; then
// its parts come from blocks b - 1 (the item's first tiles, slot 2(b-1) + 1) through *last_block (slot
// 2c each). Returns false where boundary b cuts no item, or an earlier boundary cut the same one.
KC_HOST_DEVICE bool kc_split_combine_item(const KcAttentionSplit& s, int b, int64_t* item, int* last_block) {
  const int64_t p = kc_split_begin(s, b), i = p / s.tiles;
  if (p % s.tiles == 0) return false;
  if (kc_split_begin(s, b - 1) > i * s.tiles) return false;
  int c = b;
  while (c + 1 < s.grid && kc_split_begin(s, c + 1) < (i + 1) * s.tiles) c++;
  *item = i;
  *last_block = c;
  return true;
}
