/*
 * Encoder state shared by the per-concern files, and their entry points.
 *
 * One encoder_t per wasm instance. Pictures are stored with a replicated border (PAD_Y / PAD_C) so
 * motion compensation never has to clamp coordinates: a border copied from the edge gives exactly
 * the clamped reference samples clause 8.4.2.2 asks for, as long as motion vectors stay inside it.
 */
#ifndef KINO_H264_ENCODER_H
#define KINO_H264_ENCODER_H
#include "bitstream.h"
#include "common.h"

#define PAD_Y 64
#define PAD_C 32
/* How far (in luma samples) a motion-compensated block may reach beyond the picture. The half-sample
 * planes are computed HALF_PLANE_MARGIN further out, and the 6-tap filter's reach (3 samples) beyond
 * that stays inside the border: MV_REACH + HALF_PLANE_MARGIN + 3 <= PAD_Y. Half the reach for chroma
 * plus its bilinear tap fits PAD_C. */
#define MV_REACH 24
#define HALF_PLANE_MARGIN 8

enum { MB_I4x4, MB_I16, MB_P16, MB_PSKIP };

typedef struct {
  u8 *y, *u, *v;                 /* sample (0,0) of each plane, inside the padded allocation */
  u8 *half_h, *half_v, *half_c;  /* luma half-sample planes b, h, j of clause 8.4.2.2.1 (half_h[x] sits
                                    between y[x] and y[x+1], half_v[x] below y[x], half_c diagonally) */
  int half_ready;                /* the half-sample planes are computed when a P picture first needs them */
} picture_t;

/* What later macroblocks, the deblocking filter and the next frame need to know about one MB. */
typedef struct {
  u8 type;
  u8 qp;
  i8 i4_mode[16]; /* Intra4x4PredMode per 4x4 block (raster order); 2 (DC) when the MB is not I_NxN */
  u8 nz[16];      /* TotalCoeff per luma 4x4 block (raster order); AC only for Intra16x16 */
  u8 nz_c[2][4];  /* TotalCoeff per chroma AC block, Cb then Cr */
  u8 coded;       /* any nz[] is non-zero */
  i16 mv[2];      /* quarter-sample motion vector; 0 for intra */
} mb_info_t;

/* Everything one macroblock's syntax needs, filled by the mode decision, read by mb_write.c.
 * Fields up to `luma` are zeroed for every macroblock; the coefficient arrays after it are always
 * written before they are read. */
typedef struct {
  int x, y; /* in macroblocks */
  int type;
  int i16_mode;    /* Intra16x16PredMode: 0 V, 1 H, 2 DC, 3 plane */
  int chroma_mode; /* intra_chroma_pred_mode: 0 DC, 1 H, 2 V, 3 plane */
  i8 i4_mode[16];  /* raster order */
  int mv[2], mvp[2];
  int cbp_luma;   /* bit per 8x8 block */
  int cbp_chroma; /* 0 none, 1 DC only, 2 DC and AC */
  u8 nz[16];      /* TotalCoeff per luma 4x4 block (raster) */
  u8 nz_c[2][4];  /* TotalCoeff per chroma AC block */
  i16 luma[16][16];       /* levels per 4x4 block (raster block order, column-major coefficients: transform.c) */
  i16 luma_dc[16];        /* Intra16x16 DC levels, column-major over the 4x4 grid of blocks (like the AC) */
  i16 chroma_dc[2][4];
  i16 chroma_ac[2][4][16];
} mb_t;

enum { RC_QP, RC_BITRATE, RC_CRF };

/* Speed presets. Quality: Intra 4x4, quarter-sample motion, SATD decisions, deblocking. Fast (like
 * x264 ultrafast): Intra 16x16 only, whole-sample diamond motion search, SAD decisions, no
 * deblocking (see mb_fast.c). */
enum { PRESET_QUALITY, PRESET_FAST };
/* The fast preset refines whole-sample vectors by one half-sample step (1) or not at all (0). */
#ifndef FAST_HALF_PEL
#define FAST_HALF_PEL 0
#endif

/* ratecontrol.c's state; models are per picture type, [0] P and [1] IDR. */
typedef struct {
  int mode;
  i64 frame_budget;  /* bitrate: bits per picture at the target rate */
  i64 buffer;        /* bitrate: leaky bucket size in bits */
  i64 debt;          /* bitrate: bits spent minus bits allowed so far */
  int model[2];      /* Q16 log-domain models, see ratecontrol.c */
  int log2_complexity; /* bitrate: of the last IDR, Q16 */
  int seen[2];       /* a picture of this type has been measured */
  int last_qp[2];
  int last_base;
  int crf_log2_mse;  /* crf: the P-picture log2(MSE) aimed at, Q16 */
  int crf_qp;        /* crf: the crf value rounded, centre of the allowed QP range */
} ratecontrol_t;

typedef struct encoder {
  arena_t arena;         /* owns every buffer below */
  int width, height;     /* visible size */
  int mb_w, mb_h;        /* coded size in macroblocks */
  int coded_w, coded_h;  /* coded luma size (multiples of 16) */
  int stride_y, stride_c;
  int base_qp;           /* constant-QP mode: the QP of P pictures */
  ratecontrol_t rc;
  int qp, qp_c;          /* this picture's luma QP and its chroma QP (Table 8-15) */
  int lambda;            /* multiplier for bit estimates against SAD/SATD */
  int zero_sad_luma;     /* inter residual of a luma 4x4 block with a smaller SAD quantises to nothing */
  int zero_sad_chroma;   /* the same for a whole 8x8 chroma block, DC included */
  int keyint;            /* IDR every keyint frames, 0 = first only */
  int preset;            /* PRESET_QUALITY or PRESET_FAST (mb_fast.c), fixed before the first frame */
  int fps_milli;
  int rgba;
  int level_idc;
  int mv_limit_y;        /* max |vertical MV| in quarter samples allowed by the level */
  int frame_count, since_idr, frame_num, idr_pic_id;
  int log2_max_frame_num;
  int is_idr;            /* type of the picture being encoded */

  u8 *rgb_in;                  /* width*height*3 or *4 bytes written by the host */
  u8 *src_y, *src_u, *src_v;   /* I420 of the current frame at coded size, edge-replicated */
  picture_t pic[2];
  int cur;                     /* pic[cur] is being reconstructed, pic[cur ^ 1] is the reference */
  mb_info_t *mbs;              /* current picture */
  i16 (*prev_mv)[2];           /* previous picture's MVs, a motion search candidate */
  i16 *interp_rows[6];         /* interp.c's rolling window, one luma row (with border) each */

  u8 *rbsp;                    /* slice RBSP, inside the nal buffer (see h264_create) */
  u8 *nal;                     /* the slice NAL of the last encode */
  int nal_size;
  u8 sps[64], pps[32];
  int sps_size, pps_size;
} encoder_t;

/* transform.c — 4x4 transforms, Hadamard DC transforms and (de)quantisation (clauses 8.5.6 - 8.5.12) */
void fdct4x4(i16 out[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride);
void fdct4x4_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride);
int quant4x4(i16 c[16], int qp, int intra, int first);
int fdct_quant_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int ss, const u8 *pred, int ps, int qp, int intra, int dc[2]);
int fdct_quant_pair_ref(i16 out_a[16], i16 out_b[16], const u8 *src, int ss, const u8 *pred, int ps, int qp, int intra, int dc[2]);
int quant4x4_ref(i16 c[16], int qp, int intra, int first);
int inter_zero_sad4x4(int qp);
int inter_zero_sad_chroma8x8(int qp);
int quant_dc(int *c, int n, int qp, int intra, i16 *levels);
void dequant4x4(int d[16], const i16 levels[16], int qp);
void idct4x4_add(u8 *dst, int stride, const int d[16]);
void recon4x4_pair(u8 *dst, int stride, const i16 la[16], const i16 lb[16], int qp, const int *dc);
void recon4x4_pair_ref(u8 *dst, int stride, const i16 la[16], const i16 lb[16], int qp, const int *dc);
/* out = H·X·H with H = [1 1 1 1; 1 1 -1 -1; 1 -1 -1 1; 1 -1 1 -1] (clause 8.5.10); in is row-major,
 * rows first. Shared by the DC transform, SATD and the intra cost estimates. */
void hadamard4x4(int out[16], const int in[16]);
void luma_dc_forward(int dc[16]);
void luma_dc_dequant(int out[16], const i16 levels[16], int qp);
void chroma_dc_forward(int dc[4]);
void chroma_dc_dequant(int out[4], const i16 levels[4], int qp);
extern const u8 zigzag4x4[16];
extern const u8 chroma_qp_table[52];

/* pixel.c — block metrics; *_ref are the scalar references of the SIMD versions */
int sad16x16_ref(const u8 *a, int as, const u8 *b, int bs);
int satd4x4_ref(const u8 *a, int as, const u8 *b, int bs);
int satd8x8_ref(const u8 *a, int as, const u8 *b, int bs);
int satd16x16_ref(const u8 *a, int as, const u8 *b, int bs);
int sad16x16(const u8 *a, int as, const u8 *b, int bs);
void sad16x16_x4(const u8 *a, int as, const u8 *const b[4], int bs, int out[4]);
int sad8x8_ref(const u8 *a, int as, const u8 *b, int bs);
int sad8x8(const u8 *a, int as, const u8 *b, int bs);
/* SAD of the left and right 8x4 halves of a 16x4 region. */
void sad16x4_halves_ref(const u8 *a, int as, const u8 *b, int bs, int out[2]);
void sad16x4_halves(const u8 *a, int as, const u8 *b, int bs, int out[2]);
int satd4x4(const u8 *a, int as, const u8 *b, int bs);
int satd16x16(const u8 *a, int as, const u8 *b, int bs);
int satd8x8(const u8 *a, int as, const u8 *b, int bs);
int sad16x16_vertical_ref(const u8 *a, int as, const u8 *top);
int sad16x16_horizontal_ref(const u8 *a, int as, const u8 *left, int left_stride);
int sad16x16_flat_ref(const u8 *a, int as, int value);
int sad16x16_vertical(const u8 *a, int as, const u8 *top);
int sad16x16_horizontal(const u8 *a, int as, const u8 *left, int left_stride);
int sad16x16_flat(const u8 *a, int as, int value);
/* The same metrics against the rounded average of two blocks a and b (stride bs), i.e. a
 * quarter-sample prediction that was never stored (see luma_qpel_planes). */
int sad16x16_avg(const u8 *src, int ss, const u8 *a, const u8 *b, int bs);
int satd16x16_avg(const u8 *src, int ss, const u8 *a, const u8 *b, int bs);
u64 ssd_ref(const u8 *a, int as, const u8 *b, int bs, int w, int h);
u64 ssd(const u8 *a, int as, const u8 *b, int bs, int w, int h);
/* Mean squared luma error of picture p against the source, x 1024, over the visible area. */
int luma_mse_q10(const encoder_t *e, const picture_t *p);

/* intra_pred.c — clause 8.3 */
typedef struct {
  int top[8], left[4], topleft;
  int has_top, has_left, has_topleft;
} intra4_edge_t;
void intra4x4_predict(u8 dst[16], int mode, const intra4_edge_t *e);
void intra4x4_predict_ref(u8 dst[16], int mode, const intra4_edge_t *e);
int intra4x4_mode_available(int mode, const intra4_edge_t *e);
int intra4x4_dc(const intra4_edge_t *e);
void intra16x16_predict(u8 dst[256], int mode, const u8 *rec, int stride, int has_top, int has_left);
void intra_plane_predict(u8 *dst, int size, const u8 *rec, int stride);
void intra_plane_predict_ref(u8 *dst, int size, const u8 *rec, int stride);
int intra16x16_dc(const u8 *rec, int stride, int has_top, int has_left);
void intra_chroma_predict(u8 dst[64], int mode, const u8 *rec, int stride, int has_top, int has_left);

/* ratecontrol.c */
int rc_configure(encoder_t *e, int mode, int target, int buffer_kbit);
void rc_start_picture(encoder_t *e);
void rc_end_picture(encoder_t *e, int bits);

/* colour.c */
void rgb_to_i420(encoder_t *e, const u8 *rgb);
void rgb_to_i420_ref(encoder_t *e, const u8 *rgb);
void rgb_to_i420_rows(encoder_t *e, const u8 *rgb, int y_from, int y_to);
void rgb_to_i420_pad(encoder_t *e);

/* params.c — SPS, PPS, level, slice header */
void params_write(encoder_t *e);
int level_for(int mb_count, i64 mbs_per_second_milli, int mb_w, int mb_h);
int level_mv_limit_y(int level_idc);
void slice_header_write(encoder_t *e, bitwriter_t *bw);

/* cavlc.c — residual_block_cavlc (clause 9.2); cavlc_init fills its tables (h264_create calls it) */
void cavlc_init(void);
int cavlc_block(bitwriter_t *bw, const i16 *coef, int max_coeff, int nC);
int cavlc_block4x4(bitwriter_t *bw, const i16 coef[16], int first, int nC);
void cavlc_empty(bitwriter_t *bw, int nC);

/* mvpred.c — clause 8.4.1 */
void mv_predict16x16(const encoder_t *e, int mbx, int mby, int mvp[2]);
void mv_predict_skip(const encoder_t *e, int mbx, int mby, int mv[2]);

/* interp.c — clause 8.4.2.2 */
void interp_half_planes(encoder_t *e, picture_t *p);
void interp_half_planes_ref(encoder_t *e, picture_t *p);
void luma_qpel_planes(const picture_t *ref, int stride, int x, int y, int mvx, int mvy, const u8 **a, const u8 **b);
void mc_luma16(u8 *dst, int dst_stride, const picture_t *ref, int stride, int x, int y, int mvx, int mvy);
void mc_chroma8(u8 *dst, int dst_stride, const u8 *plane, int stride, int cx, int cy, int mvx, int mvy);
void mc_chroma8_ref(u8 *dst, int dst_stride, const u8 *plane, int stride, int cx, int cy, int mvx, int mvy);

/* motion.c */
int mv_in_range(const encoder_t *e, int mbx, int mby, int mvx, int mvy);
int motion_search(encoder_t *e, mb_t *mb, int mv[2]);
int motion_search_fast(encoder_t *e, mb_t *mb, int mv[2], int half_pel, const int known[3]);

/* mb_intra.c / mb_inter.c — mode decision, transform, reconstruction into pic[cur] */
int i4_predicted_mode(const encoder_t *e, const mb_t *mb, int bx, int by);
int intra16x16_choose(encoder_t *e, mb_t *mb, int *cost, int fast);
int intra4x4_encode(encoder_t *e, mb_t *mb, int bail);
void intra4x4_satd_vhd(const u8 *src, int stride, const intra4_edge_t *ed, int cost[3]);
void intra16x16_encode(encoder_t *e, mb_t *mb);
void intra_chroma_encode(encoder_t *e, mb_t *mb);
void intra_mb_encode(encoder_t *e, mb_t *mb, int i16_mode, int i16_cost);
void chroma_residual_encode(encoder_t *e, mb_t *mb, const u8 *pred_u, const u8 *pred_v, int pred_stride, int intra);
void encode_p_macroblock(encoder_t *e, mb_t *mb);
void inter_mb_encode(encoder_t *e, mb_t *mb, const int mv[2]);
int skip_probe_sad(encoder_t *e, const mb_t *mb, const int skip_mv[2]);

/* decimate.c — dropping nearly empty inter residuals (fast preset); decimate_init fills its tables */
void decimate_init(void);
int decimate_score4x4(const i16 levels[16]);
int decimate_luma(i16 levels[16][16], u8 nz[16], int cbp_luma);

/* mb_fast.c — the fast preset's macroblock decisions */
void encode_i_macroblock_fast(encoder_t *e, mb_t *mb);
void encode_p_macroblock_fast(encoder_t *e, mb_t *mb);

/* mb_write.c — macroblock_layer() (clause 7.3.5) */
/* fills mb_write.c's nC table (h264_create calls it) */
void mb_write_init(void);
void mb_write(encoder_t *e, bitwriter_t *bw, mb_t *mb, int p_slice);
void mb_store_info(encoder_t *e, const mb_t *mb);

/* deblock.c — clause 8.7 */
void deblock_picture(encoder_t *e, picture_t *p);
void deblock_mb(encoder_t *e, picture_t *p, int mbx, int mby, int simd);

/* picture.c */
int picture_alloc(encoder_t *e, picture_t *p);
void picture_extend_edges(encoder_t *e, picture_t *p);

#endif
