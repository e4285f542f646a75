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
/* Motion vectors keep this many samples away from the outer edge of the luma border, which
 * covers the 6-tap filter's reach (3 samples) with room to spare. */
#define MV_MARGIN 8

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
  i16 mv[2];      /* quarter-sample motion vector; 0 for intra */
} mb_info_t;

/* Everything one macroblock's syntax needs, filled by the mode decision, read by mb_write.c. */
typedef struct {
  int x, y; /* in macroblocks */
  int type;
  int i16_mode;    /* Intra16x16PredMode: 0 V, 1 H, 2 DC, 3 plane */
  int chroma_mode; /* intra_chroma_pred_mode: 0 DC, 1 H, 2 V, 3 plane */
  i8 i4_mode[16];  /* raster order */
  int mv[2], mvp[2];
  int cbp_luma;   /* bit per 8x8 block */
  int cbp_chroma; /* 0 none, 1 DC only, 2 DC and AC */
  i16 luma[16][16];       /* levels per 4x4 block (raster block order, raster coefficient order) */
  i16 luma_dc[16];        /* Intra16x16 DC levels, raster over the 4x4 grid of blocks */
  i16 chroma_dc[2][4];
  i16 chroma_ac[2][4][16];
  u8 nz[16];
  u8 nz_c[2][4];
} mb_t;

typedef struct encoder {
  int width, height;     /* visible size */
  int mb_w, mb_h;        /* coded size in macroblocks */
  int coded_w, coded_h;  /* coded luma size (multiples of 16) */
  int stride_y, stride_c;
  int base_qp;           /* requested QP (P pictures) */
  int qp, qp_c;          /* this picture's luma QP and its chroma QP (Table 8-15) */
  int lambda;            /* multiplier for bit estimates against SAD/SATD */
  int keyint;            /* IDR every keyint frames, 0 = first only */
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

  u8 *rbsp;                    /* slice RBSP, inside the nal buffer (see h264_create) */
  u8 *nal;                     /* the slice NAL of the last encode */
  int nal_size;
  u8 sps[64], pps[32];
  int sps_size, pps_size;
} encoder_t;

/* transform.c — 4x4 transforms, Hadamard DC transforms and (de)quantisation (clauses 8.5.6 - 8.5.12) */
void quant_init(void);
void fdct4x4(i16 out[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride);
void fdct4x4_pair(i16 out_a[16], i16 out_b[16], const u8 *src, int src_stride, const u8 *pred, int pred_stride);
int quant4x4(i16 c[16], int qp, int intra, int first);
int quant4x4_ref(i16 c[16], int qp, int intra, int first);
int quant_dc(int *c, int n, int qp, int intra, i16 *levels);
void dequant4x4(int d[16], const i16 levels[16], int qp);
void idct4x4_add(u8 *dst, int stride, const int d[16]);
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
int satd4x4(const u8 *a, int as, const u8 *b, int bs);
int satd16x16(const u8 *a, int as, const u8 *b, int bs);
int satd8x8(const u8 *a, int as, const u8 *b, int bs);

/* intra_pred.c — clause 8.3 */
typedef struct {
  int top[8], left[4], topleft;
  int has_top, has_left, has_topleft;
} intra4_edge_t;
void intra4x4_predict(u8 dst[16], int mode, const intra4_edge_t *e);
void intra4x4_predict_ref(u8 dst[16], int mode, const intra4_edge_t *e);
int intra4x4_mode_available(int mode, const intra4_edge_t *e);
void intra16x16_predict(u8 dst[256], int mode, const u8 *rec, int stride, int has_top, int has_left);
void intra_chroma_predict(u8 dst[64], int mode, const u8 *rec, int stride, int has_top, int has_left);

/* ratecontrol.c */
void rc_start_picture(encoder_t *e);

/* colour.c */
void rgb_to_i420(encoder_t *e);

/* params.c — SPS, PPS, level, slice header */
void params_write(encoder_t *e);
int level_for(int mb_count, i64 mbs_per_second_milli, int mb_w, int mb_h);
int level_mv_limit_y(int level_idc);
void slice_header_write(encoder_t *e, bitwriter_t *bw);

/* cavlc.c — residual_block_cavlc (clause 9.2) */
int cavlc_block(bitwriter_t *bw, const i16 *coef, int max_coeff, int nC);

/* mvpred.c — clause 8.4.1 */
void mv_predict16x16(const encoder_t *e, int mbx, int mby, int mvp[2]);
void mv_predict_skip(const encoder_t *e, int mbx, int mby, int mv[2]);

/* interp.c — clause 8.4.2.2 */
void interp_half_planes(encoder_t *e, picture_t *p);
void mc_luma16(u8 dst[256], const picture_t *ref, int stride, int x, int y, int mvx, int mvy);
void mc_chroma8(u8 dst[64], const u8 *plane, int stride, int cx, int cy, int mvx, int mvy);
void mc_chroma8_ref(u8 dst[64], const u8 *plane, int stride, int cx, int cy, int mvx, int mvy);

/* motion.c */
int mv_in_range(const encoder_t *e, int mbx, int mby, int mvx, int mvy);
int motion_search(encoder_t *e, mb_t *mb, int mv[2]);

/* mb_intra.c / mb_inter.c — mode decision, transform, reconstruction into pic[cur] */
int i4_predicted_mode(const encoder_t *e, const mb_t *mb, int bx, int by);
int intra16x16_choose(encoder_t *e, mb_t *mb, int *cost);
int intra4x4_encode(encoder_t *e, mb_t *mb);
void intra16x16_encode(encoder_t *e, mb_t *mb);
void intra_chroma_encode(encoder_t *e, mb_t *mb);
void intra_mb_encode(encoder_t *e, mb_t *mb, int i16_mode, int i16_cost);
void chroma_residual_encode(encoder_t *e, mb_t *mb, const u8 pred_u[64], const u8 pred_v[64], int intra);
void encode_p_macroblock(encoder_t *e, mb_t *mb);

/* mb_write.c — macroblock_layer() (clause 7.3.5) */
void mb_write(encoder_t *e, bitwriter_t *bw, mb_t *mb, int p_slice);
void mb_store_info(encoder_t *e, const mb_t *mb);

/* deblock.c — clause 8.7 */
void deblock_picture(encoder_t *e, picture_t *p);

/* picture.c */
int picture_alloc(encoder_t *e, picture_t *p);
void picture_extend_edges(encoder_t *e, picture_t *p);

#endif
