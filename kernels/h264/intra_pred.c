/*
 * Intra prediction, H.264 clause 8.3: the nine Intra_4x4 modes (8.3.1.2), the four Intra_16x16
 * modes (8.3.3) and the four chroma modes (8.3.4, 4:2:0). Neighbour samples are the reconstructed
 * picture before deblocking, exactly as the decoder sees them.
 */
#include "encoder.h"
#include "simd.h"

/* p[x, y] of the spec for a 4x4 block: y == -1 is the row above (x == -1 the corner), x == -1 the left column. */
static inline int P(const intra4_edge_t *e, int x, int y) {
  if (y < 0) return x < 0 ? e->topleft : e->top[x];
  return e->left[y];
}

int intra4x4_mode_available(int mode, const intra4_edge_t *e) {
  switch (mode) {
  case 0: case 3: case 7: return e->has_top;       /* vertical, diagonal down left, vertical left */
  case 1: case 8: return e->has_left;              /* horizontal, horizontal up */
  case 2: return 1;                                /* DC */
  default: return e->has_top && e->has_left && e->has_topleft; /* 4, 5, 6 */
  }
}

/* The Intra_4x4 DC value (clause 8.3.1.2.3). */
int intra4x4_dc(const intra4_edge_t *e) {
  int top = e->top[0] + e->top[1] + e->top[2] + e->top[3], left = e->left[0] + e->left[1] + e->left[2] + e->left[3];
  if (e->has_top && e->has_left) return (top + left + 4) >> 3;
  if (e->has_left) return (left + 2) >> 2;
  if (e->has_top) return (top + 2) >> 2;
  return 128;
}

/* The spec's equations for each sample, literally: the reference for intra4x4_predict.
 * Top-right samples (top[4..7]) must already be filled in, substituted from top[3] when unavailable. */
void intra4x4_predict_ref(u8 dst[16], int mode, const intra4_edge_t *e) {
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) {
      int v;
      switch (mode) {
      case 0: v = P(e, x, -1); break;
      case 1: v = P(e, -1, y); break;
      case 2:
        if (e->has_top && e->has_left)
          v = (e->top[0] + e->top[1] + e->top[2] + e->top[3] + e->left[0] + e->left[1] + e->left[2] + e->left[3] + 4) >> 3;
        else if (e->has_left)
          v = (e->left[0] + e->left[1] + e->left[2] + e->left[3] + 2) >> 2;
        else if (e->has_top)
          v = (e->top[0] + e->top[1] + e->top[2] + e->top[3] + 2) >> 2;
        else
          v = 128;
        break;
      case 3: /* Diagonal_Down_Left */
        if (x == 3 && y == 3)
          v = (P(e, 6, -1) + 3 * P(e, 7, -1) + 2) >> 2;
        else
          v = (P(e, x + y, -1) + 2 * P(e, x + y + 1, -1) + P(e, x + y + 2, -1) + 2) >> 2;
        break;
      case 4: /* Diagonal_Down_Right */
        if (x > y)
          v = (P(e, x - y - 2, -1) + 2 * P(e, x - y - 1, -1) + P(e, x - y, -1) + 2) >> 2;
        else if (x < y)
          v = (P(e, -1, y - x - 2) + 2 * P(e, -1, y - x - 1) + P(e, -1, y - x) + 2) >> 2;
        else
          v = (P(e, 0, -1) + 2 * P(e, -1, -1) + P(e, -1, 0) + 2) >> 2;
        break;
      case 5: { /* Vertical_Right */
        int z = 2 * x - y;
        if (z >= 0 && !(z & 1))
          v = (P(e, x - (y >> 1) - 1, -1) + P(e, x - (y >> 1), -1) + 1) >> 1;
        else if (z >= 0)
          v = (P(e, x - (y >> 1) - 2, -1) + 2 * P(e, x - (y >> 1) - 1, -1) + P(e, x - (y >> 1), -1) + 2) >> 2;
        else if (z == -1)
          v = (P(e, -1, 0) + 2 * P(e, -1, -1) + P(e, 0, -1) + 2) >> 2;
        else
          v = (P(e, -1, y - 1) + 2 * P(e, -1, y - 2) + P(e, -1, y - 3) + 2) >> 2;
        break;
      }
      case 6: { /* Horizontal_Down */
        int z = 2 * y - x;
        if (z >= 0 && !(z & 1))
          v = (P(e, -1, y - (x >> 1) - 1) + P(e, -1, y - (x >> 1)) + 1) >> 1;
        else if (z >= 0)
          v = (P(e, -1, y - (x >> 1) - 2) + 2 * P(e, -1, y - (x >> 1) - 1) + P(e, -1, y - (x >> 1)) + 2) >> 2;
        else if (z == -1)
          v = (P(e, -1, 0) + 2 * P(e, -1, -1) + P(e, 0, -1) + 2) >> 2;
        else
          v = (P(e, x - 1, -1) + 2 * P(e, x - 2, -1) + P(e, x - 3, -1) + 2) >> 2;
        break;
      }
      case 7: /* Vertical_Left */
        if (!(y & 1))
          v = (P(e, x + (y >> 1), -1) + P(e, x + (y >> 1) + 1, -1) + 1) >> 1;
        else
          v = (P(e, x + (y >> 1), -1) + 2 * P(e, x + (y >> 1) + 1, -1) + P(e, x + (y >> 1) + 2, -1) + 2) >> 2;
        break;
      default: { /* 8: Horizontal_Up */
        int z = x + 2 * y;
        if (z > 5)
          v = P(e, -1, 3);
        else if (z == 5)
          v = (P(e, -1, 2) + 3 * P(e, -1, 3) + 2) >> 2;
        else if (!(z & 1))
          v = (P(e, -1, y + (x >> 1)) + P(e, -1, y + (x >> 1) + 1) + 1) >> 1;
        else
          v = (P(e, -1, y + (x >> 1)) + 2 * P(e, -1, y + (x >> 1) + 1) + P(e, -1, y + (x >> 1) + 2) + 2) >> 2;
        break;
      }
      }
      dst[y * 4 + x] = (u8)v;
    }
}

/*
 * The same predictions from the edge laid out in one line, E = L3 L2 L1 L0 TL T0 .. T7 T7, so every
 * directional mode reads a 2-tap (F2) or 3-tap (F3) filtered edge at an index that moves by one
 * per row or column (derived from the equations above, e.g. Diagonal_Down_Right is F3[4 + x - y]).
 */
void intra4x4_predict(u8 dst[16], int mode, const intra4_edge_t *e) {
  int E[14], F2[13], F3[14];
  for (int k = 0; k < 4; k++) E[k] = e->left[3 - k];
  E[4] = e->topleft;
  for (int k = 0; k < 8; k++) E[5 + k] = e->top[k];
  E[13] = e->top[7];
  for (int k = 0; k < 13; k++) F2[k] = (E[k] + E[k + 1] + 1) >> 1;
  for (int k = 1; k < 13; k++) F3[k] = (E[k - 1] + 2 * E[k] + E[k + 1] + 2) >> 2;
#define FILL(expr)                                                                                 \
  for (int y = 0; y < 4; y++)                                                                      \
    for (int x = 0; x < 4; x++) dst[y * 4 + x] = (u8)(expr)
  switch (mode) {
  case 0: FILL(E[5 + x]); break;
  case 1: FILL(E[3 - y]); break;
  case 2: memset(dst, intra4x4_dc(e), 16); break;
  case 3: FILL(x + y == 6 ? (E[11] + 3 * E[12] + 2) >> 2 : F3[6 + x + y]); break;
  case 4: FILL(F3[4 + x - y]); break;
  case 5: FILL(2 * x - y >= 0 ? ((2 * x - y) & 1 ? F3[4 + x - (y >> 1)] : F2[4 + x - (y >> 1)]) : 2 * x - y == -1 ? F3[4] : F3[5 - y]); break;
  case 6: FILL(2 * y - x >= 0 ? ((2 * y - x) & 1 ? F3[4 - y + (x >> 1)] : F2[3 - y + (x >> 1)]) : 2 * y - x == -1 ? F3[4] : F3[3 + x]); break;
  case 7: FILL(y & 1 ? F3[6 + x + (y >> 1)] : F2[5 + x + (y >> 1)]); break;
  default: FILL(x + 2 * y > 5 ? E[0] : x + 2 * y == 5 ? (E[1] + 3 * E[0] + 2) >> 2 : (x + 2 * y) & 1 ? F3[2 - y - (x >> 1)] : F2[2 - y - (x >> 1)]); break;
  }
#undef FILL
}

/* Plane prediction shared by luma (size 16) and 4:2:0 chroma (size 8), clauses 8.3.3.4 and 8.3.4.4:
 * dst[y * size + x] = Clip1((a + b (x - x0) + c (y - y0) + 16) >> 5). */
static void plane_params(int size, const u8 *rec, int stride, int *a, int *b, int *c) {
  const u8 *top = rec - stride, *left = rec - 1;
  int half = size / 2, H = 0, V = 0;
  for (int k = 0; k < half; k++) {
    /* x' = k: p[half + k, -1] - p[half - 2 - k, -1]; index -1 is the corner sample */
    H += (k + 1) * (top[half + k] - top[half - 2 - k]);
    V += (k + 1) * (left[(half + k) * stride] - left[(half - 2 - k) * stride]);
  }
  *a = 16 * (left[(size - 1) * stride] + top[size - 1]);
  *b = size == 16 ? (5 * H + 32) >> 6 : (34 * H + 32) >> 6;
  *c = size == 16 ? (5 * V + 32) >> 6 : (34 * V + 32) >> 6;
}

void intra_plane_predict_ref(u8 *dst, int size, const u8 *rec, int stride) {
  int a, b, c, half = size / 2;
  plane_params(size, rec, stride, &a, &b, &c);
  for (int y = 0; y < size; y++)
    for (int x = 0; x < size; x++) dst[y * size + x] = clip_pixel((a + b * (x - (half - 1)) + c * (y - (half - 1)) + 16) >> 5);
}

#if H264_SIMD
/* a + b (x - x0) + c (y - y0) + 16 stays within 16 bits (|b|, |c| <= 1355 for size 8, 717 for 16);
 * the final clip is the saturating pack. */
void intra_plane_predict(u8 *dst, int size, const u8 *rec, int stride) {
  static const i16 ramp[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  int a, b, c, half = size / 2;
  plane_params(size, rec, stride, &a, &b, &c);
  vec vb = v_splat16(b), vc = v_splat16(c);
  vec row0 = v_add16(v_splat16(a - b * (half - 1) - c * (half - 1) + 16), v_mul16(v_load(ramp), vb));
  vec row1 = v_add16(row0, v_shl16(vb, 3));
  for (int y = 0; y < size; y++, dst += size, row0 = v_add16(row0, vc), row1 = v_add16(row1, vc)) {
    vec px = v_pack_u8(v_sra16(row0, 5), v_sra16(row1, 5));
    if (size == 16) v_store(dst, px);
    else v_store64(dst, px);
  }
}
#else
void intra_plane_predict(u8 *dst, int size, const u8 *rec, int stride) { intra_plane_predict_ref(dst, size, rec, stride); }
#endif

/* The Intra_16x16 DC value (clause 8.3.3.3). */
int intra16x16_dc(const u8 *rec, int stride, int has_top, int has_left) {
  const u8 *top = rec - stride;
  int sum = 0;
  if (has_top)
    for (int x = 0; x < 16; x++) sum += top[x];
  if (has_left)
    for (int y = 0; y < 16; y++) sum += rec[y * stride - 1];
  if (has_top && has_left) return (sum + 16) >> 5;
  if (has_top || has_left) return (sum + 8) >> 4;
  return 128;
}

void intra16x16_predict(u8 dst[256], int mode, const u8 *rec, int stride, int has_top, int has_left) {
  const u8 *top = rec - stride;
  if (mode == 0) {
    for (int y = 0; y < 16; y++) memcpy(dst + y * 16, top, 16);
  } else if (mode == 1) {
    for (int y = 0; y < 16; y++) memset(dst + y * 16, rec[y * stride - 1], 16);
  } else if (mode == 2) {
    memset(dst, intra16x16_dc(rec, stride, has_top, has_left), 256);
  } else {
    intra_plane_predict(dst, 16, rec, stride);
  }
}

/* Chroma DC predicts each 4x4 quadrant separately, preferring the edge next to it (8.3.4.1-3). */
static void chroma_dc_predict(u8 dst[64], const u8 *rec, int stride, int has_top, int has_left) {
  const u8 *top = rec - stride;
  for (int by = 0; by < 2; by++)
    for (int bx = 0; bx < 2; bx++) {
      int st = 0, sl = 0, v;
      for (int k = 0; k < 4; k++) {
        st += top[bx * 4 + k];
        sl += rec[(by * 4 + k) * stride - 1];
      }
      int use_top = has_top, use_left = has_left;
      if (bx == by) {
        if (use_top && use_left) v = (st + sl + 4) >> 3;
        else if (use_left) v = (sl + 2) >> 2;
        else if (use_top) v = (st + 2) >> 2;
        else v = 128;
      } else if (bx == 1) { /* top-right quadrant: top edge first */
        if (use_top) v = (st + 2) >> 2;
        else if (use_left) v = (sl + 2) >> 2;
        else v = 128;
      } else { /* bottom-left quadrant: left edge first */
        if (use_left) v = (sl + 2) >> 2;
        else if (use_top) v = (st + 2) >> 2;
        else v = 128;
      }
      for (int y = 0; y < 4; y++) memset(dst + (by * 4 + y) * 8 + bx * 4, v, 4);
    }
}

void intra_chroma_predict(u8 dst[64], int mode, const u8 *rec, int stride, int has_top, int has_left) {
  if (mode == 0) {
    chroma_dc_predict(dst, rec, stride, has_top, has_left);
  } else if (mode == 1) {
    for (int y = 0; y < 8; y++) memset(dst + y * 8, rec[y * stride - 1], 8);
  } else if (mode == 2) {
    for (int y = 0; y < 8; y++) memcpy(dst + y * 8, rec - stride, 8);
  } else {
    intra_plane_predict(dst, 8, rec, stride);
  }
}
