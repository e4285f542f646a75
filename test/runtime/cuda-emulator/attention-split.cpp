// The Hopper attention's stream-K schedule (kernels/cuda/attention_split.cuh) walked on the host, for
// test/runtime/cuda-attention-split.test.ts: every block's range as the kernel walks it
// (kc_split_next), and every combine block's item and parts as attention_combine.cu finds them
// (kc_split_combine_item), checked against each other.
//
//   attention-split ITEMS TILES SMS [ITEMS TILES SMS ...]
//     per triple, as kc_attention decides by default: "grid G busiest X whole Y cut C" — G the stream-K
//     grid (0: items walked whole), X the most key tiles one block walks, Y the most one block walks
//     with whole items round-robin, C the items cut into parts
//   attention-split sweep MAX_ITEMS MAX_TILES MAX_SMS
//     every triple up to those, split wherever a boundary cuts an item (KINO_CUDA_ATTENTION_SPLIT=always);
//     prints "checked N split M"
// Checks, exiting 1 with the first violation: each item's key tiles walked exactly once; a part's slot
// -1 exactly when it is the whole item; no slot written twice; each cut item combined by exactly one
// block, from exactly the slots its parts were written to, which cover its tiles in order from 0.
#include <stdio.h>
#include <stdlib.h>
#include <map>
#include <string_view>
#include <vector>
#include "../../../kernels/cuda/attention_split.cuh"

struct Written {
  int64_t item;
  int t0, ntiles;
};

static void fail(const char* what, int64_t items, int tiles, int sms, long long a, long long b) {
  fprintf(stderr, "items %lld tiles %d sms %d: %s (%lld, %lld)\n", (long long)items, tiles, sms, what, a, b);
  exit(1);
}

// Walks and checks one launch; returns the grid and fills the figures.
static int check(int64_t items, int tiles, int sms, int min_gain, long long* busiest, long long* whole, long long* cut) {
  const int64_t rr = items < sms ? items : sms;
  *whole = (items + rr - 1) / rr * tiles;
  const int grid = kc_attention_split_grid(items, tiles, sms, min_gain);
  *busiest = *whole;
  *cut = 0;
  if (!grid) return 0;
  const KcAttentionSplit s{items * tiles, tiles, grid};
  std::vector<unsigned char> seen((size_t)s.work, 0);
  std::map<int, Written> slots;
  std::map<int64_t, int> cut_items;  // item → tiles in cut parts
  *busiest = 0;
  for (int c = 0; c < grid; c++) {
    int64_t pos = kc_split_begin(s, c);
    const int64_t end = kc_split_begin(s, c + 1);
    if (end - pos > *busiest) *busiest = end - pos;
    while (pos < end) {
      const KcSplitPart p = kc_split_next(s, c, &pos, end);
      if (p.ntiles <= 0 || p.t0 < 0 || p.t0 + p.ntiles > tiles) fail("a part outside its item", items, tiles, sms, p.t0, p.ntiles);
      for (int t = p.t0; t < p.t0 + p.ntiles; t++)
        if (seen[(size_t)(p.item * tiles + t)]++) fail("a key tile walked twice", items, tiles, sms, p.item, t);
      if ((p.slot < 0) != (p.ntiles == tiles)) fail("slot -1 is not the whole item", items, tiles, sms, p.slot, p.ntiles);
      if (p.slot >= 0) {
        if (p.slot / 2 != c) fail("a slot of another block", items, tiles, sms, p.slot, c);
        if (!slots.emplace(p.slot, Written{p.item, p.t0, p.ntiles}).second) fail("a slot written twice", items, tiles, sms, p.slot, c);
        cut_items[p.item] += p.ntiles;
      }
    }
  }
  for (size_t i = 0; i < seen.size(); i++)
    if (!seen[i]) fail("a key tile never walked", items, tiles, sms, (long long)(i / tiles), (long long)(i % tiles));
  std::map<int64_t, bool> combined;
  for (int b = 1; b < grid; b++) {
    int64_t item;
    int last;
    if (!kc_split_combine_item(s, b, &item, &last)) continue;
    if (combined[item]) fail("an item combined twice", items, tiles, sms, item, b);
    combined[item] = true;
    int next = 0;  // the parts must cover the item's tiles in order
    for (int c = b - 1; c <= last; c++) {
      const auto it = slots.find(kc_split_slot(c, c == b - 1 ? 0 : 1));
      if (it == slots.end() || it->second.item != item) fail("a combine reads a slot that is not its item's", items, tiles, sms, item, c);
      if (it->second.t0 != next) fail("the parts do not follow each other", items, tiles, sms, item, it->second.t0);
      next += it->second.ntiles;
    }
    if (next != tiles) fail("the parts do not make the whole item", items, tiles, sms, item, next);
  }
  for (const auto& [item, n] : cut_items)
    if (!combined[item]) fail("a cut item no block combines", items, tiles, sms, item, n);
  *cut = (long long)cut_items.size();
  return grid;
}

int main(int argc, char** argv) {
  long long busiest, whole, cut;
  if (argc == 5 && std::string_view(argv[1]) == "sweep") {
    const int mi = atoi(argv[2]), mt = atoi(argv[3]), ms = atoi(argv[4]);
    long long n = 0, split = 0;
    for (int i = 1; i <= mi; i++)
      for (int t = 1; t <= mt; t++)
        for (int s = 1; s <= ms; s++, n++) split += check(i, t, s, 1, &busiest, &whole, &cut) != 0;
    printf("checked %lld split %lld\n", n, split);
    return 0;
  }
  if (argc < 4 || (argc - 1) % 3) {
    fprintf(stderr, "usage: attention-split ITEMS TILES SMS [...] | sweep MAX_ITEMS MAX_TILES MAX_SMS\n");
    return 2;
  }
  for (int a = 1; a < argc; a += 3) {
    const int grid = check(atoll(argv[a]), atoi(argv[a + 1]), atoi(argv[a + 2]), KC_SPLIT_MIN_GAIN, &busiest, &whole, &cut);
    printf("grid %d busiest %lld whole %lld cut %lld\n", grid, busiest, whole, cut);
  }
  return 0;
}
