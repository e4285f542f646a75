/* Reconstructed pictures with a replicated border (see encoder.h). */
#include "encoder.h"

static u8 *alloc_plane(encoder_t *e, int stride, int rows, int pad) {
  u8 *base = (u8 *)arena_alloc(&e->arena, (size_t)stride * (size_t)rows);
  return base ? base + pad * stride + pad : NULL;
}

int picture_alloc(encoder_t *e, picture_t *p) {
  int rows_y = e->coded_h + 2 * PAD_Y, rows_c = e->coded_h / 2 + 2 * PAD_C;
  p->y = alloc_plane(e, e->stride_y, rows_y, PAD_Y);
  p->u = alloc_plane(e, e->stride_c, rows_c, PAD_C);
  p->v = alloc_plane(e, e->stride_c, rows_c, PAD_C);
  p->half_h = alloc_plane(e, e->stride_y, rows_y, PAD_Y);
  p->half_v = alloc_plane(e, e->stride_y, rows_y, PAD_Y);
  p->half_c = alloc_plane(e, e->stride_y, rows_y, PAD_Y);
  return p->y && p->u && p->v && p->half_h && p->half_v && p->half_c;
}

static void extend_plane(u8 *plane, int stride, int w, int h, int pad) {
  for (int y = 0; y < h; y++) {
    u8 *row = plane + y * stride;
    memset(row - pad, row[0], (size_t)pad);
    memset(row + w, row[w - 1], (size_t)pad);
  }
  for (int y = 1; y <= pad; y++) {
    memcpy(plane - y * stride - pad, plane - pad, (size_t)(w + 2 * pad));
    memcpy(plane + (h - 1 + y) * stride - pad, plane + (h - 1) * stride - pad, (size_t)(w + 2 * pad));
  }
}

/* Replicating the edge samples outwards gives motion compensation the clamped coordinates of
 * clause 8.4.2.2 for free. */
void picture_extend_edges(encoder_t *e, picture_t *p) {
  extend_plane(p->y, e->stride_y, e->coded_w, e->coded_h, PAD_Y);
  extend_plane(p->u, e->stride_c, e->coded_w / 2, e->coded_h / 2, PAD_C);
  extend_plane(p->v, e->stride_c, e->coded_w / 2, e->coded_h / 2, PAD_C);
}
