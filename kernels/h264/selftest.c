/*
 * Checks every SIMD kernel (and the table-driven intra 4x4 prediction) against its scalar
 * reference on pseudo-random inputs, llm.c style: the reference is the specification. Decisions-only kernels (SAD, SATD)
 * would still produce valid streams if they drifted, so nothing else would notice; kernels that
 * shape the reconstruction are also covered end to end by decoding with ffmpeg.
 */
#include "encoder.h"

static u32 rng_state;

static u32 next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

/* Random pixels; every other trial uses a narrow range so small differences are exercised too. */
static void fill_pixels(u8 *p, int n, int narrow) {
  u8 base = (u8)next_random();
  for (int i = 0; i < n; i++) p[i] = narrow ? (u8)clip3(0, 255, base + (int)(next_random() % 9) - 4) : (u8)next_random();
}

static int compare_metrics(const u8 *a, const u8 *b) {
  int bad = 0;
  bad += sad16x16(a, 48, b, 48) != sad16x16_ref(a, 48, b, 48);
  bad += satd16x16(a, 48, b, 48) != satd16x16_ref(a, 48, b, 48);
  bad += satd8x8(a + 5, 48, b + 3, 48) != satd8x8_ref(a + 5, 48, b + 3, 48);
  bad += satd4x4(a + 1, 48, b + 2, 48) != satd4x4_ref(a + 1, 48, b + 2, 48);
  return bad;
}

static int compare_transform_quant(const u8 *a, const u8 *b) {
  int bad = 0;
  i16 pair[2][16], single[2][16];
  fdct4x4_pair(pair[0], pair[1], a, 48, b, 48);
  fdct4x4(single[0], a, 48, b, 48);
  fdct4x4(single[1], a + 4, 48, b + 4, 48);
  for (int k = 0; k < 16; k++) bad += (pair[0][k] != single[0][k]) + (pair[1][k] != single[1][k]);
  int qp = (int)(next_random() % 52), intra = (int)(next_random() & 1), first = (int)(next_random() & 1);
  i16 x[16], y[16];
  for (int k = 0; k < 16; k++) x[k] = y[k] = single[0][k];
  if (first) x[0] = y[0] = 0;
  int nx = quant4x4(x, qp, intra, first), ny = quant4x4_ref(y, qp, intra, first);
  bad += nx != ny;
  for (int k = 0; k < 16; k++) bad += x[k] != y[k];
  return bad;
}

static int compare_chroma_mc(const u8 *plane) {
  u8 x[64], y[64];
  int mvx = (int)(next_random() % 64) - 32, mvy = (int)(next_random() % 64) - 32;
  mc_chroma8(x, plane + 20 * 48 + 20, 48, 0, 0, mvx, mvy);
  mc_chroma8_ref(y, plane + 20 * 48 + 20, 48, 0, 0, mvx, mvy);
  int bad = 0;
  for (int k = 0; k < 64; k++) bad += x[k] != y[k];
  return bad;
}

/* Fast intra 4x4 prediction against the spec-literal one, for every mode on a random edge. */
static int compare_intra4x4(void) {
  intra4_edge_t edge;
  for (int k = 0; k < 8; k++) edge.top[k] = (int)(next_random() & 255);
  for (int k = 0; k < 4; k++) edge.left[k] = (int)(next_random() & 255);
  edge.topleft = (int)(next_random() & 255);
  edge.has_top = (int)(next_random() & 1);
  edge.has_left = (int)(next_random() & 1);
  edge.has_topleft = 1;
  int bad = 0;
  for (int mode = 0; mode < 9; mode++) {
    u8 x[16], y[16];
    intra4x4_predict(x, mode, &edge);
    intra4x4_predict_ref(y, mode, &edge);
    for (int k = 0; k < 16; k++) bad += x[k] != y[k];
  }
  return bad;
}

/* Returns the number of mismatching results over a few hundred random trials (0 = all agree). */
EXPORT("h264_selftest")
int h264_selftest(int seed) {
  static u8 a[48 * 48], b[48 * 48];
  rng_state = (u32)seed * 2654435761u + 1;
  quant_init();
  int bad = 0;
  for (int trial = 0; trial < 300; trial++) {
    fill_pixels(a, sizeof(a), trial & 1);
    fill_pixels(b, sizeof(b), trial & 1);
    bad += compare_metrics(a, b) + compare_transform_quant(a, b) + compare_chroma_mc(a) + compare_intra4x4();
  }
  return bad;
}
