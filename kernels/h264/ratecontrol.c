/*
 * Picture-level QP. Constant-QP mode: P pictures use the requested QP and IDR pictures a few
 * steps lower, because every later picture predicts from the IDR (directly or through skipped
 * areas), so its quality carries through the whole GOP. x264 does the same with ipratio 1.4,
 * i.e. 6 * log2(1.4) ~= 3 QP steps.
 */
#include "encoder.h"

#define IDR_QP_OFFSET 3

/* lambda ~ 0.85 * 2^((qp - 12) / 6), the usual SAD-domain Lagrange multiplier, at least 1. */
static int lambda_for(int qp) {
  static const int frac[6] = {256, 287, 323, 362, 406, 456}; /* 256 * 2^(k/6) */
  int e2 = qp - 12, whole = e2 >= 0 ? e2 / 6 : -((5 - e2) / 6), k = e2 - whole * 6;
  int v = frac[k] * 218 / 256; /* 0.85 */
  v = whole >= 0 ? v << whole : v >> -whole;
  return imax(1, (v + 128) >> 8);
}

void rc_start_picture(encoder_t *e) {
  e->qp = e->is_idr ? imax(0, e->base_qp - IDR_QP_OFFSET) : e->base_qp;
  e->qp_c = chroma_qp_table[e->qp];
  e->lambda = lambda_for(e->qp);
}
