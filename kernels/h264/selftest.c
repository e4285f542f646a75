/*
 * Checks every SIMD kernel (and every shortcut that must equal a plainer computation) against its
 * scalar reference on pseudo-random inputs, llm.c style: the reference is the specification.
 * Decision-only kernels (SAD, SATD) would still produce valid streams if they drifted, so nothing
 * else would notice; kernels that shape the reconstruction are also covered end to end by decoding
 * with ffmpeg.
 */
#include "encoder.h"

encoder_t *h264_create(int width, int height, int qp, int keyint, int fps_milli, int rgba);
void h264_destroy(encoder_t *e);

static u32 rng_state;

static u32 next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

static int random_below(int n) { return (int)(next_random() % (u32)n); }

/* Random pixels; every other trial uses a narrow range so small differences are exercised too. */
static void fill_pixels(u8 *p, int n, int narrow) {
  u8 base = (u8)next_random();
  for (int i = 0; i < n; i++) p[i] = narrow ? (u8)clip3(0, 255, base + random_below(9) - 4) : (u8)next_random();
}

static int differ(const u8 *a, const u8 *b, int n) {
  int bad = 0;
  for (int k = 0; k < n; k++) bad += a[k] != b[k];
  return bad;
}

static int compare_metrics(const u8 *a, const u8 *b) {
  int bad = 0;
  bad += sad16x16(a, 48, b, 48) != sad16x16_ref(a, 48, b, 48);
  const u8 *const four[4] = {b + 1, b + 48, b + 50, b + 97};
  int x4[4];
  sad16x16_x4(a, 48, four, 48, x4);
  for (int k = 0; k < 4; k++) bad += x4[k] != sad16x16_ref(a, 48, four[k], 48);
  bad += satd16x16(a, 48, b, 48) != satd16x16_ref(a, 48, b, 48);
  bad += satd8x8(a + 5, 48, b + 3, 48) != satd8x8_ref(a + 5, 48, b + 3, 48);
  bad += satd4x4(a + 1, 48, b + 2, 48) != satd4x4_ref(a + 1, 48, b + 2, 48);
  u8 avg[256];
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) avg[y * 16 + x] = (u8)((b[y * 48 + x] + b[y * 48 + x + 49] + 1) >> 1);
  bad += sad16x16_avg(a, 48, b, b + 49, 48) != sad16x16_ref(a, 48, avg, 16);
  bad += satd16x16_avg(a, 48, b, b + 49, 48) != satd16x16_ref(a, 48, avg, 16);
  bad += sad16x16_vertical(a, 48, b) != sad16x16_vertical_ref(a, 48, b);
  bad += sad16x16_horizontal(a, 48, b + 7, 48) != sad16x16_horizontal_ref(a, 48, b + 7, 48);
  bad += sad16x16_flat(a, 48, b[0]) != sad16x16_flat_ref(a, 48, b[0]);
  bad += ssd(a + 1, 48, b, 48, 37, 20) != ssd_ref(a + 1, 48, b, 48, 37, 20);
  bad += sad8x8(a + 3, 48, b + 1, 48) != sad8x8_ref(a + 3, 48, b + 1, 48);
  int halves[2], halves_ref[2];
  sad16x4_halves(a + 2, 48, b + 5, 48, halves);
  sad16x4_halves_ref(a + 2, 48, b + 5, 48, halves_ref);
  return bad + (halves[0] != halves_ref[0]) + (halves[1] != halves_ref[1]);
}

/* The zero-residual bounds: an inter residual with a SAD just under inter_zero_sad4x4 (4x4) or
 * inter_zero_sad_chroma8x8 (8x8, DC included) must quantise to nothing. */
static int check_zero_bounds(void) {
  int qp = random_below(52), bad = 0;
  int limit4 = inter_zero_sad4x4(qp), limit8 = inter_zero_sad_chroma8x8(qp);
  u8 src[64], pred[64];
  int budget = random_below(2) ? limit4 - 1 : limit8 - 1, spent = 0;
  for (int k = 0; k < 64; k++) {
    int d = random_below(2) ? 1 : -1, m = imin(random_below(12), budget - spent);
    if (m < 0) m = 0;
    spent += m;
    pred[k] = 128;
    src[k] = (u8)(128 + d * m);
  }
  if (budget == limit4 - 1) { /* the first 4x4 block holds the whole budget */
    i16 c[16];
    fdct4x4(c, src, 8, pred, 8);
    bad += quant4x4_ref(c, qp, 0, 0) != 0;
    return bad;
  }
  int dc[4];
  for (int blk = 0; blk < 4; blk++) {
    i16 c[16];
    fdct4x4(c, src + (blk >> 1) * 32 + (blk & 1) * 4, 8, pred + (blk >> 1) * 32 + (blk & 1) * 4, 8);
    dc[blk] = c[0];
    c[0] = 0;
    bad += quant4x4_ref(c, qp, 0, 1) != 0;
  }
  i16 levels[4];
  chroma_dc_forward(dc);
  return bad + (quant_dc(dc, 4, qp, 0, levels) != 0);
}

static int compare_transform_quant(const u8 *a, const u8 *b) {
  int bad = 0;
  i16 pair[2][16], single[2][16];
  fdct4x4_pair(pair[0], pair[1], a, 48, b, 48);
  fdct4x4(single[0], a, 48, b, 48);
  fdct4x4(single[1], a + 4, 48, b + 4, 48);
  for (int k = 0; k < 16; k++) bad += (pair[0][k] != single[0][k]) + (pair[1][k] != single[1][k]);
  int qp = random_below(52), intra = (int)(next_random() & 1), first = (int)(next_random() & 1);
  i16 x[16], y[16];
  for (int k = 0; k < 16; k++) x[k] = y[k] = single[0][k];
  if (first) x[0] = y[0] = 0;
  int nx = quant4x4(x, qp, intra, first), ny = quant4x4_ref(y, qp, intra, first);
  bad += nx != ny;
  for (int k = 0; k < 16; k++) bad += x[k] != y[k];
  /* the fused transform + quantisation, with and without separate DCs */
  i16 fa[2][16], fb[2][16];
  int dca[2] = {0, 0}, dcb[2] = {1, 1};
  int na = fdct_quant_pair(fa[0], fa[1], a + 3, 48, b + 1, 48, qp, intra, first ? dca : NULL);
  int nb = fdct_quant_pair_ref(fb[0], fb[1], a + 3, 48, b + 1, 48, qp, intra, first ? dcb : NULL);
  bad += (na != nb) + (first && (dca[0] != dcb[0] || dca[1] != dcb[1]));
  for (int k = 0; k < 16; k++) bad += (fa[0][k] != fb[0][k]) + (fa[1][k] != fb[1][k]);
  /* reconstruction from levels that real residuals produce, with and without separate DCs */
  quant4x4(pair[0], qp, intra, 0);
  quant4x4(pair[1], qp, intra, 0);
  int dc[2] = {random_below(8192) - 4096, random_below(8192) - 4096};
  u8 ra[4 * 48], rb[4 * 48];
  memcpy(ra, b, sizeof(ra));
  memcpy(rb, b, sizeof(rb));
  recon4x4_pair(ra, 48, pair[0], pair[1], qp, first ? dc : NULL);
  recon4x4_pair_ref(rb, 48, pair[0], pair[1], qp, first ? dc : NULL);
  return bad + differ(ra, rb, sizeof(ra));
}

static int compare_chroma_mc(const u8 *plane) {
  u8 x[64], y[64];
  int mvx = random_below(64) - 32, mvy = random_below(64) - 32;
  mc_chroma8(x, 8, plane + 20 * 48 + 20, 48, 0, 0, mvx, mvy);
  mc_chroma8_ref(y, 8, plane + 20 * 48 + 20, 48, 0, 0, mvx, mvy);
  return differ(x, y, 64);
}

/* Intra 4x4: table-driven prediction against the spec-literal one for every mode, and the
 * transform-domain SATD of V, H and DC against satd4x4 of the formed predictions. */
static int compare_intra4x4(const u8 *src) {
  intra4_edge_t edge;
  for (int k = 0; k < 8; k++) edge.top[k] = (int)(next_random() & 255);
  for (int k = 0; k < 4; k++) edge.left[k] = (int)(next_random() & 255);
  edge.topleft = (int)(next_random() & 255);
  edge.has_top = (int)(next_random() & 1);
  edge.has_left = (int)(next_random() & 1);
  edge.has_topleft = 1;
  int bad = 0, fast[3] = {-1, -1, -1};
  for (int mode = 0; mode < 9; mode++) {
    u8 x[16], y[16];
    intra4x4_predict(x, mode, &edge);
    intra4x4_predict_ref(y, mode, &edge);
    bad += differ(x, y, 16);
  }
  intra4x4_satd_vhd(src, 48, &edge, fast);
  for (int mode = 0; mode < 3; mode++) {
    if (fast[mode] < 0) continue;
    u8 pred[16];
    intra4x4_predict_ref(pred, mode, &edge);
    bad += fast[mode] != satd4x4_ref(src, 48, pred, 4);
  }
  return bad;
}

static int compare_plane(const u8 *rec) {
  u8 x[256], y[256];
  int bad = 0;
  for (int size = 8; size <= 16; size += 8) {
    intra_plane_predict(x, size, rec + 48 + 1, 48);
    intra_plane_predict_ref(y, size, rec + 48 + 1, 48);
    bad += differ(x, y, size * size);
  }
  return bad;
}

/* Whole-picture kernels on a small encoder's own pictures: pic[0] runs the reference, pic[1] the
 * SIMD version, from identical random content. */
static void copy_picture(encoder_t *e, picture_t *dst, const picture_t *src) {
  size_t luma = (size_t)e->stride_y * (size_t)(e->coded_h + 2 * PAD_Y), chroma = (size_t)e->stride_c * (size_t)(e->coded_h / 2 + 2 * PAD_C);
  memcpy(dst->y - PAD_Y * e->stride_y - PAD_Y, src->y - PAD_Y * e->stride_y - PAD_Y, luma);
  memcpy(dst->u - PAD_C * e->stride_c - PAD_C, src->u - PAD_C * e->stride_c - PAD_C, chroma);
  memcpy(dst->v - PAD_C * e->stride_c - PAD_C, src->v - PAD_C * e->stride_c - PAD_C, chroma);
}

static int plane_differs(const u8 *a, const u8 *b, int stride, int x0, int y0, int x1, int y1) {
  int bad = 0;
  for (int y = y0; y < y1; y++) bad += differ(a + y * stride + x0, b + y * stride + x0, x1 - x0);
  return bad;
}

/* Random sample rows; extreme: every row one of the two 6-periodic patterns that drive the
 * half-sample filter's intermediates to their limits (its 16-bit path must fall back exactly). */
static void fill_picture(encoder_t *e, picture_t *p, int extreme) {
  static const u8 high[6] = {255, 0, 255, 255, 0, 255}, low[6] = {0, 255, 0, 0, 255, 0};
  for (int y = 0; y < e->coded_h; y++) {
    const u8 *pattern = (next_random() & 1) ? high : low;
    int narrow = (int)(next_random() & 1);
    for (int x = 0; x < e->coded_w; x++) p->y[y * e->stride_y + x] = extreme ? pattern[x % 6] : (u8)(narrow ? 120 + random_below(16) : random_below(256));
  }
  for (int y = 0; y < e->coded_h / 2; y++)
    for (int x = 0; x < e->coded_w / 2; x++) {
      p->u[y * e->stride_c + x] = (u8)(100 + random_below(40));
      p->v[y * e->stride_c + x] = (u8)next_random();
    }
  picture_extend_edges(e, p);
}

static int compare_pictures(encoder_t *e) {
  picture_t *a = &e->pic[0], *b = &e->pic[1];
  int bad = 0, reach = MV_REACH + HALF_PLANE_MARGIN;
  for (int extreme = 0; extreme < 2; extreme++) {
    fill_picture(e, a, extreme);
    copy_picture(e, b, a);
    interp_half_planes_ref(e, a);
    interp_half_planes(e, b);
    const u8 *planes_a[3] = {a->half_h, a->half_v, a->half_c}, *planes_b[3] = {b->half_h, b->half_v, b->half_c};
    for (int k = 0; k < 3; k++) bad += plane_differs(planes_a[k], planes_b[k], e->stride_y, -reach, -reach, e->coded_w + reach, e->coded_h + reach);
  }
  /* deblocking with random macroblock types, QPs, coefficient counts and motion vectors */
  for (int k = 0; k < e->mb_w * e->mb_h; k++) {
    mb_info_t *m = &e->mbs[k];
    m->type = (u8)random_below(4);
    m->qp = (u8)(random_below(4) ? 16 + random_below(36) : random_below(52));
    m->coded = 0;
    for (int j = 0; j < 16; j++) {
      m->nz[j] = (u8)(m->type == MB_PSKIP || random_below(3) ? 0 : 1 + random_below(4));
      m->coded |= m->nz[j];
    }
    int inter = m->type == MB_P16 || m->type == MB_PSKIP;
    m->mv[0] = (i16)(inter ? random_below(13) - 6 : 0);
    m->mv[1] = (i16)(inter ? random_below(13) - 6 : 0);
  }
  fill_picture(e, a, 0);
  copy_picture(e, b, a);
  for (int y = 0; y < e->mb_h; y++)
    for (int x = 0; x < e->mb_w; x++) {
      deblock_mb(e, a, x, y, 0);
      deblock_mb(e, b, x, y, 1);
    }
  bad += plane_differs(a->y, b->y, e->stride_y, 0, 0, e->coded_w, e->coded_h);
  bad += plane_differs(a->u, b->u, e->stride_c, 0, 0, e->coded_w / 2, e->coded_h / 2);
  bad += plane_differs(a->v, b->v, e->stride_c, 0, 0, e->coded_w / 2, e->coded_h / 2);
  return bad;
}

/* RGB -> I420 on random pixels (the encoder is 80 wide: five 16-pixel steps), rgb24 and rgba. */
static int compare_colour(void) {
  int bad = 0;
  for (int rgba = 0; rgba < 2; rgba++) {
    encoder_t *e = h264_create(80 + 2 * rgba, 18, 26, 0, 24000, rgba);
    if (!e) return 1;
    int n = e->width * e->height * (rgba ? 4 : 3), luma = e->coded_w * e->coded_h;
    for (int k = 0; k < n; k++) e->rgb_in[k] = (u8)next_random();
    rgb_to_i420_ref(e, e->rgb_in);
    static u8 ref[3][96 * 32];
    memcpy(ref[0], e->src_y, (size_t)luma);
    memcpy(ref[1], e->src_u, (size_t)luma / 4);
    memcpy(ref[2], e->src_v, (size_t)luma / 4);
    rgb_to_i420(e, e->rgb_in);
    bad += differ(ref[0], e->src_y, luma) + differ(ref[1], e->src_u, luma / 4) + differ(ref[2], e->src_v, luma / 4);
    h264_destroy(e);
  }
  return bad;
}

/* decimate_score4x4 against x264's definition walked over the zig-zag scan: from the highest
 * frequency down, each +-1 adds a score by the zeros below it; any larger level scores 9. */
static int check_decimate(void) {
  static const int run_score[16] = {3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  i16 levels[16];
  for (int k = 0; k < 16; k++) levels[k] = (i16)(random_below(4) ? 0 : random_below(8) ? random_below(2) * 2 - 1 : random_below(9) - 4);
  int expected = 0, k = 15;
  while (k >= 0 && levels[zigzag4x4[k]] == 0) k--;
  while (k >= 0) {
    if (iabs(levels[zigzag4x4[k--]]) > 1) {
      expected = 9;
      break;
    }
    int run = 0;
    while (k >= 0 && levels[zigzag4x4[k]] == 0) k--, run++;
    expected += run_score[run];
  }
  return decimate_score4x4(levels) != expected;
}

/* Returns the number of mismatching results over a few hundred random trials (0 = all agree). */
EXPORT("h264_selftest")
int h264_selftest(int seed) {
  static u8 a[48 * 48], b[48 * 48];
  rng_state = (u32)seed * 2654435761u + 1;
  decimate_init(); /* its tables are otherwise filled by h264_create */
  int bad = 0;
  for (int trial = 0; trial < 300; trial++) {
    fill_pixels(a, sizeof(a), trial & 1);
    fill_pixels(b, sizeof(b), trial & 1);
    bad += compare_metrics(a, b) + compare_transform_quant(a, b) + compare_chroma_mc(a) + compare_intra4x4(a) + compare_plane(b);
    bad += check_zero_bounds() + check_decimate();
  }
  encoder_t *e = h264_create(80, 48, 26, 0, 24000, 0);
  if (!e) return -1;
  for (int trial = 0; trial < 4; trial++) bad += compare_pictures(e);
  h264_destroy(e);
  return bad + compare_colour();
}
