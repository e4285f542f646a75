/*
 * Picture-level QP: constant QP, an average bitrate held by a leaky bucket, or constant quality.
 *
 * In every mode IDR pictures are coded 3 QP steps below P pictures, because every later picture
 * predicts from the IDR (directly or through skipped areas), so its quality carries through the
 * whole GOP; x264 does the same with ipratio 1.4, i.e. 6 * log2(1.4) ~= 3 steps. The controllers
 * pick the P-picture QP (the "base") and derive the IDR one from it.
 *
 * Both adaptive modes keep a model per picture type in the log domain, learnt from the pictures
 * already coded:
 *   bitrate:  log2(bits) ~= model - BITS_SLOPE * qp   (bits roughly halve every 6 steps)
 *             and for IDR pictures log2(bits / complexity) ~= model - BITS_SLOPE * qp, complexity
 *             being the picture's summed deviation from each macroblock's mean (measured before
 *             coding it, so a new scene's first IDR is predicted about right);
 *   crf:      log2(mse)  ~= model + MSE_SLOPE * qp    (the error grows with the quantiser step squared)
 * All arithmetic is integer (log2/exp2 in Q16 fixed point), so the wasm and native builds choose
 * exactly the same QPs.
 */
#include "encoder.h"

#define IDR_QP_OFFSET 3
#define Q16 65536
/* Measured on the synthetic test scenes: about -0.17 in log2(bits) and +0.30 in log2(mse) per QP step. */
#define BITS_SLOPE 11141 /* 0.17 */
#define MSE_SLOPE 19661  /* 0.30 */
/* crf: the P-picture luma MSE aimed at for crf 28 (log2, Q16): 40 dB, about what QP 28 gives on
 * footage of average detail; each crf step is about 0.9 dB. */
#define CRF_LOG2_MSE_AT_28 176947 /* 2.70 */
/* bitrate: before anything is measured, an IDR takes about complexity * 2^(1 - 0.17 qp) bits (the
 * synthetic scenes span 2^0.4 .. 2^2.8), and a P picture a tenth of the IDR at the same QP. */
#define IDR_MODEL_GUESS Q16
#define LOG2_IDR_TO_P 217706 /* log2(10) */
/* crf keeps the QP within this distance of the crf value, so pathological content (pure noise)
 * cannot run away to QP 0. */
#define CRF_QP_RANGE 12
/* Largest QP change from one picture to the next of the same type once the model has seen one. */
#define MAX_QP_STEP 4

/* log2(1 + i/64) and 2^(i/64), Q16, i = 0..64. */
static const int log2_table[65] = {
    0,     1466,  2909,  4331,  5732,  7112,  8473,  9814,  11136, 12440, 13727, 14996, 16248, 17484, 18704, 19909, 21098,
    22272, 23433, 24579, 25711, 26830, 27936, 29029, 30109, 31178, 32234, 33279, 34312, 35334, 36346, 37346, 38336, 39316,
    40286, 41246, 42196, 43137, 44068, 44990, 45904, 46809, 47705, 48593, 49472, 50344, 51207, 52063, 52911, 53751, 54584,
    55410, 56229, 57040, 57845, 58643, 59434, 60219, 60997, 61769, 62534, 63294, 64047, 64794, 65536};
static const int exp2_table[65] = {
    65536,  66250,  66971,  67700,  68438,  69183,  69936,  70698,  71468,  72246,  73032,  73828,  74632,
    75444,  76266,  77096,  77936,  78785,  79642,  80510,  81386,  82273,  83169,  84074,  84990,  85915,
    86851,  87796,  88752,  89719,  90696,  91684,  92682,  93691,  94711,  95743,  96785,  97839,  98905,
    99982,  101070, 102171, 103283, 104408, 105545, 106694, 107856, 109031, 110218, 111418, 112631, 113858,
    115098, 116351, 117618, 118899, 120194, 121502, 122825, 124163, 125515, 126882, 128263, 129660, 131072};

/* log2(x) in Q16 for x >= 1, to about 1e-4. */
static int log2_q16(u64 x) {
  if (x == 0) x = 1;
  int n = 63 - __builtin_clzll(x);
  /* the 22 bits below the leading one: 6 index the table, 16 interpolate */
  u64 frac = n >= 22 ? (x >> (n - 22)) & 0x3fffff : (x << (22 - n)) & 0x3fffff;
  int i = (int)(frac >> 16), t = (int)(frac & 0xffff);
  return n * Q16 + log2_table[i] + (int)(((i64)(log2_table[i + 1] - log2_table[i]) * t) >> 16);
}

/* 2^(v / 65536) for v below 40 * Q16, rounded down (0 far below 1). */
static u64 exp2_q16(int v) {
  int whole = v >> 16, frac = v & 0xffff; /* floor for negative v too */
  if (whole < -40) return 0;
  int i = frac >> 10, t = frac & 0x3ff;
  u64 m = (u64)(exp2_table[i] + (((i64)(exp2_table[i + 1] - exp2_table[i]) * t) >> 10)); /* 2^(frac) in Q16 */
  return whole >= 16 ? m << (whole - 16) : m >> (16 - whole);
}

/* Nearest integer to num / den for den > 0. */
static int div_round(i64 num, i64 den) { return (int)(num >= 0 ? (num + den / 2) / den : -((-num + den / 2) / den)); }

/* lambda ~ 0.85 * 2^((qp - 12) / 6), the usual SAD-domain Lagrange multiplier, at least 1. */
static int lambda_for(int qp) {
  static const int frac[6] = {256, 287, 323, 362, 406, 456}; /* 256 * 2^(k/6) */
  int e2 = qp - 12, whole = e2 >= 0 ? e2 / 6 : -((5 - e2) / 6), k = e2 - whole * 6;
  int v = frac[k] * 218 / 256; /* 0.85 */
  v = whole >= 0 ? v << whole : v >> -whole;
  return imax(1, (v + 128) >> 8);
}

int rc_configure(encoder_t *e, int mode, int target, int buffer_kbit) {
  ratecontrol_t *rc = &e->rc;
  memset(rc, 0, sizeof(*rc));
  rc->mode = mode;
  switch (mode) {
  case RC_QP:
    if (target < 0 || target > 51) return 0;
    e->base_qp = target;
    return 1;
  case RC_BITRATE: {
    if (target <= 0 || target > 1000000 || buffer_kbit < 0) return 0;
    rc->frame_budget = (i64)target * 1000 * 1000 / e->fps_milli;
    if (rc->frame_budget < 1) rc->frame_budget = 1;
    rc->buffer = buffer_kbit ? (i64)buffer_kbit * 1000 : (i64)target * 1000;
    if (rc->buffer < 2 * rc->frame_budget) rc->buffer = 2 * rc->frame_budget;
    rc->model[1] = IDR_MODEL_GUESS;
    e->base_qp = 26;
    return 1;
  }
  case RC_CRF:
    if (target < 0 || target > 5100) return 0;
    rc->crf_log2_mse = CRF_LOG2_MSE_AT_28 + div_round((i64)(target - 2800) * MSE_SLOPE, 100);
    rc->crf_qp = div_round(target, 100);
    for (int t = 0; t < 2; t++) rc->model[t] = CRF_LOG2_MSE_AT_28 - 28 * MSE_SLOPE;
    e->base_qp = rc->crf_qp;
    return 1;
  default:
    return 0;
  }
}

/* Sum over macroblocks of the luma's absolute deviation from the macroblock mean. */
static u64 picture_complexity(const encoder_t *e) {
  u64 sum = 0;
  for (int y = 0; y < e->mb_h; y++)
    for (int x = 0; x < e->mb_w; x++) {
      const u8 *src = e->src_y + y * 16 * e->coded_w + x * 16;
      int mean = (sad16x16_flat(src, e->coded_w, 0) + 128) >> 8;
      sum += (u64)sad16x16_flat(src, e->coded_w, mean);
    }
  return sum + 1;
}

/* log2 of the predicted bits of a picture of type t at QP 0 (IDRs scaled by the last complexity). */
static int bits_model(const ratecontrol_t *rc, int t) { return t ? rc->model[1] + rc->log2_complexity : rc->model[0]; }

/* Bitrate mode: the P-picture QP at which the next GOP is predicted to average `per_frame` bits,
 * with the IDR (3 steps lower) counted once per keyint pictures. */
static int bitrate_base_qp(const encoder_t *e, i64 per_frame) {
  const ratecontrol_t *rc = &e->rc;
  /* log2 of the bits one GOP takes at QP 0, divided by its length: 2^(model_I + 3 slope) + (N-1) 2^model_P */
  int log2_gop;
  if (e->keyint == 1) {
    log2_gop = bits_model(rc, 1) + IDR_QP_OFFSET * BITS_SLOPE;
  } else if (e->keyint == 0) {
    log2_gop = bits_model(rc, 0);
  } else {
    int a = bits_model(rc, 1) + IDR_QP_OFFSET * BITS_SLOPE, b = bits_model(rc, 0) + log2_q16((u64)(e->keyint - 1));
    int hi = imax(a, b), lo = imin(a, b);
    log2_gop = hi + (log2_q16(Q16 + exp2_q16(lo - hi + 16 * Q16)) - 16 * Q16) - log2_q16((u64)e->keyint);
  }
  return div_round((i64)log2_gop - log2_q16((u64)(per_frame > 0 ? per_frame : 1)), BITS_SLOPE);
}

static int bitrate_qp(encoder_t *e) {
  ratecontrol_t *rc = &e->rc;
  if (e->is_idr) {
    rc->log2_complexity = log2_q16(picture_complexity(e));
    /* until a P picture is measured, it is guessed from the IDR model */
    if (!rc->seen[0]) rc->model[0] = bits_model(rc, 1) - LOG2_IDR_TO_P;
  }
  /* Pay back (or spend) what earlier pictures overspent (saved) over half a buffer's worth of pictures. */
  i64 horizon = imax(8, (int)(rc->buffer / rc->frame_budget / 2));
  i64 per_frame = rc->frame_budget - rc->debt / horizon;
  if (per_frame < rc->frame_budget / 8) per_frame = rc->frame_budget / 8;
  int base = bitrate_base_qp(e, per_frame);
  if (rc->seen[0]) base = clip3(rc->last_base - MAX_QP_STEP, rc->last_base + MAX_QP_STEP, base);
  base = clip3(IDR_QP_OFFSET, 51, base);
  int t = e->is_idr;
  int qp = t ? base - IDR_QP_OFFSET : base;
  /* Buffer: the picture must not push the debt past half the buffer (a decoder starting half full
   * would run dry); raise its QP until the model says it fits. */
  while (qp < 51 && rc->debt + (i64)exp2_q16(bits_model(rc, t) - qp * BITS_SLOPE) - rc->frame_budget > rc->buffer / 2) qp++;
  rc->last_base = t ? qp + IDR_QP_OFFSET : qp;
  return qp;
}

static int crf_qp(encoder_t *e) {
  ratecontrol_t *rc = &e->rc;
  int t = e->is_idr;
  int aim = rc->crf_log2_mse - (t ? IDR_QP_OFFSET * MSE_SLOPE : 0);
  int qp = div_round((i64)aim - rc->model[t], MSE_SLOPE);
  if (rc->seen[t]) qp = clip3(rc->last_qp[t] - MAX_QP_STEP, rc->last_qp[t] + MAX_QP_STEP, qp);
  int centre = rc->crf_qp - (t ? IDR_QP_OFFSET : 0);
  return clip3(imax(0, centre - CRF_QP_RANGE), imin(51, centre + CRF_QP_RANGE), qp);
}

void rc_start_picture(encoder_t *e) {
  switch (e->rc.mode) {
  case RC_BITRATE: e->qp = bitrate_qp(e); break;
  case RC_CRF: e->qp = crf_qp(e); break;
  default: e->qp = e->is_idr ? imax(0, e->base_qp - IDR_QP_OFFSET) : e->base_qp; break;
  }
  e->qp_c = chroma_qp_table[e->qp];
  e->lambda = lambda_for(e->qp);
  e->zero_sad_luma = inter_zero_sad4x4(e->qp);
  e->zero_sad_chroma = inter_zero_sad_chroma8x8(e->qp_c);
}

/* Learns from the picture just coded (bits: its size). */
void rc_end_picture(encoder_t *e, int bits) {
  ratecontrol_t *rc = &e->rc;
  int t = e->is_idr, measured;
  if (rc->mode == RC_BITRATE) {
    measured = log2_q16((u64)imax(bits, 1)) + e->qp * BITS_SLOPE - (t ? rc->log2_complexity : 0);
    rc->debt += bits - rc->frame_budget;
    if (rc->debt < -rc->buffer / 2) rc->debt = -rc->buffer / 2; /* savings beyond the buffer are lost */
  } else if (rc->mode == RC_CRF) {
    measured = log2_q16((u64)luma_mse_q10(e, &e->pic[e->cur]) + 1) - 10 * Q16 - e->qp * MSE_SLOPE;
  } else {
    return;
  }
  /* P pictures come often: a slower average keeps the QP from see-sawing */
  rc->model[t] = !rc->seen[t] ? measured : t ? (rc->model[t] + measured) / 2 : (3 * rc->model[t] + measured) / 4;
  if (rc->mode == RC_CRF && !rc->seen[t ^ 1]) rc->model[t ^ 1] = rc->model[t];
  rc->seen[t] = 1;
  rc->last_qp[t] = e->qp;
}
