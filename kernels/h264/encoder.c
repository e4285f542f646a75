/*
 * Top-level API exported to the host (src/media/h264/encoder.ts).
 *
 * Host protocol: h264_create() once; then per frame write the RGB bytes to h264_input(), call
 * h264_encode() and copy the slice NAL from h264_nal_data()/h264_nal_size(). SPS and PPS are
 * available from creation on. All memory is allocated up front, so the wasm memory never grows
 * during encode() and host views stay valid between calls.
 */
#include "encoder.h"

static encoder_t *alloc_encoder(int width, int height) {
  arena_t arena = {NULL};
  encoder_t *e = (encoder_t *)arena_alloc(&arena, sizeof(encoder_t));
  if (!e) return NULL;
  e->arena = arena; /* the encoder now owns its own block */
  e->width = width;
  e->height = height;
  e->mb_w = (width + 15) / 16;
  e->mb_h = (height + 15) / 16;
  e->coded_w = e->mb_w * 16;
  e->coded_h = e->mb_h * 16;
  e->stride_y = e->coded_w + 2 * PAD_Y;
  e->stride_c = e->coded_w / 2 + 2 * PAD_C;
  return e;
}

/* Frees everything the encoder allocated (the encoder itself lives in its own arena). Returns NULL. */
static encoder_t *destroy(encoder_t *e) {
  arena_t arena = e->arena;
  arena_release(&arena);
  return NULL;
}

/* Largest frame of any level (Table A-1, level 6.2: MaxFS 139264 macroblocks, e.g. 8192x4320). */
#define MAX_FRAME_MBS 139264

/* Returns a handle, or 0 when the size is invalid or memory runs out. */
EXPORT("h264_create")
encoder_t *h264_create(int width, int height, int qp, int keyint, int fps_milli, int rgba) {
  if (width < 16 || height < 16 || (width & 1) || (height & 1) || width > 16384 || height > 16384) return NULL;
  if (qp < 0 || qp > 51 || keyint < 0 || fps_milli <= 0) return NULL;
  if (((width + 15) / 16) * ((height + 15) / 16) > MAX_FRAME_MBS) return NULL;
  cavlc_init();
  mb_write_init();
  decimate_init();
  encoder_t *e = alloc_encoder(width, height);
  if (!e) return NULL;
  e->keyint = keyint;
  e->fps_milli = fps_milli;
  e->rgba = rgba != 0;
  int mbs = e->mb_w * e->mb_h;
  e->level_idc = level_for(mbs, (i64)mbs * fps_milli, e->mb_w, e->mb_h);
  e->mv_limit_y = level_mv_limit_y(e->level_idc);
  e->log2_max_frame_num = 8;

  int cw = e->coded_w, ch = e->coded_h;
  arena_t *a = &e->arena;
  e->rgb_in = (u8 *)arena_alloc(a, (size_t)width * height * (e->rgba ? 4 : 3));
  e->src_y = (u8 *)arena_alloc(a, (size_t)cw * ch);
  e->src_u = (u8 *)arena_alloc(a, (size_t)cw * ch / 4);
  e->src_v = (u8 *)arena_alloc(a, (size_t)cw * ch / 4);
  e->mbs = (mb_info_t *)arena_alloc(a, sizeof(mb_info_t) * (size_t)mbs);
  e->prev_mv = (i16(*)[2])arena_alloc(a, sizeof(i16) * 2 * (size_t)mbs);
  for (int k = 0; k < 6; k++) {
    i16 *row = (i16 *)arena_alloc(a, sizeof(i16) * (size_t)e->stride_y);
    if (!row) return destroy(e);
    e->interp_rows[k] = row + PAD_Y;
  }
  /* A macroblock's CAVLC worst case is about 27 blocks x 16 levels x 28 bits ~= 1.6 KiB plus its
   * header (levels are capped, see transform.c); 3 KiB per macroblock leaves room. */
  size_t capacity = (size_t)3072 * (size_t)mbs + 1024;
  /* One buffer for both: the RBSP is written half a capacity in, and nal_wrap() escapes it forwards
   * into the start. Escaping adds at most one byte per two input bytes, so the output never
   * overtakes the input still to be read. */
  e->nal = (u8 *)arena_alloc(a, capacity + capacity / 2 + 64);
  e->rbsp = e->nal ? e->nal + capacity / 2 + 64 : NULL;
  if (!e->rgb_in || !e->src_y || !e->src_u || !e->src_v || !e->mbs || !e->prev_mv || !e->rbsp || !e->nal) return destroy(e);
  if (!picture_alloc(e, &e->pic[0]) || !picture_alloc(e, &e->pic[1])) return destroy(e);
  params_write(e);
  rc_configure(e, RC_QP, qp, 0);
  return e;
}

/* Switches rate control (before the first frame): mode 0 constant QP (target = QP), 1 average
 * bitrate (target = kbit/s, buffer_kbit = leaky bucket, 0 for one second's worth), 2 constant
 * quality (target = crf * 100). Returns 0 for invalid values. */
EXPORT("h264_rate_control")
int h264_rate_control(encoder_t *e, int mode, int target, int buffer_kbit) {
  return rc_configure(e, mode, target, buffer_kbit);
}

static void encode_slice_data(encoder_t *e, bitwriter_t *bw) {
  int skip_run = 0;
  for (int y = 0; y < e->mb_h; y++)
    for (int x = 0; x < e->mb_w; x++) {
      mb_t mb;
      memset(&mb, 0, offsetof(mb_t, luma));
      mb.x = x;
      mb.y = y;
      if (e->preset == PRESET_FAST) {
        if (e->is_idr) encode_i_macroblock_fast(e, &mb);
        else encode_p_macroblock_fast(e, &mb);
      } else if (e->is_idr) {
        int i16_cost, i16_mode = intra16x16_choose(e, &mb, &i16_cost, 0);
        intra_mb_encode(e, &mb, i16_mode, i16_cost);
      } else {
        encode_p_macroblock(e, &mb);
      }
      if (mb.type == MB_PSKIP) {
        skip_run++;
      } else {
        if (!e->is_idr) {
          bw_ue(bw, (u32)skip_run); /* mb_skip_run */
          skip_run = 0;
        }
        mb_write(e, bw, &mb, !e->is_idr);
      }
      mb_store_info(e, &mb);
    }
  if (skip_run) bw_ue(bw, (u32)skip_run);
}

/* Chooses the speed preset (PRESET_QUALITY or PRESET_FAST) before the first frame. Returns 0 for
 * an unknown preset or once frames have been encoded. */
EXPORT("h264_preset")
int h264_preset(encoder_t *e, int preset) {
  if ((preset != PRESET_QUALITY && preset != PRESET_FAST) || e->frame_count > 0) return 0;
  e->preset = preset;
  return 1;
}

/* Encodes the frame at rgb (width * height * 3 or 4 bytes). Returns 1 for an IDR picture, 0 for a P picture. */
static int encode_frame(encoder_t *e, const u8 *rgb, int force_idr) {
  if (rgb) rgb_to_i420(e, rgb);
  else rgb_to_i420_pad(e); /* the host converted the rows already (h264_convert_rows) */
  e->is_idr = force_idr || e->frame_count == 0 || (e->keyint > 0 && e->since_idr >= e->keyint);
  if (e->is_idr) {
    e->frame_num = 0;
    e->since_idr = 0;
    memset(e->prev_mv, 0, sizeof(i16) * 2 * (size_t)(e->mb_w * e->mb_h));
  }
  rc_start_picture(e);
  picture_t *ref = &e->pic[e->cur ^ 1];
  /* the fast preset's motion vectors are whole samples: it never reads the half-sample planes */
  if (!e->is_idr && !ref->half_ready && (e->preset != PRESET_FAST || FAST_HALF_PEL)) {
    interp_half_planes(e, ref);
    ref->half_ready = 1;
  }
  bitwriter_t bw;
  bw_init(&bw, e->rbsp);
  slice_header_write(e, &bw);
  encode_slice_data(e, &bw);
  bw_trailing(&bw);
  /* IDR: nal_ref_idc 3, type 5. P: nal_ref_idc 2, type 1 (every picture is a reference). */
  e->nal_size = nal_wrap(e->nal, e->is_idr ? 0x65 : 0x41, e->rbsp, bw_aligned_size(&bw));
  if (e->is_idr) e->idr_pic_id = (e->idr_pic_id + 1) & 0xffff;

  picture_t *p = &e->pic[e->cur];
  if (e->preset != PRESET_FAST) deblock_picture(e, p); /* the fast preset's slices disable the filter */
  rc_end_picture(e, e->nal_size * 8);
  picture_extend_edges(e, p);
  p->half_ready = 0;
  for (int k = 0; k < e->mb_w * e->mb_h; k++) {
    e->prev_mv[k][0] = e->mbs[k].mv[0];
    e->prev_mv[k][1] = e->mbs[k].mv[1];
  }
  e->cur ^= 1;
  e->frame_num = (e->frame_num + 1) & ((1 << e->log2_max_frame_num) - 1);
  e->since_idr++;
  e->frame_count++;
  return e->is_idr;
}

/* Encodes the frame in h264_input(). */
EXPORT("h264_encode") int h264_encode(encoder_t *e, int force_idr) { return encode_frame(e, e->rgb_in, force_idr); }

/* Converts rows [y_from, y_to) of h264_input() (y_from even) to the encoder's I420 source: the wasm
 * host copies the frame a band of rows at a time and converts each band while it is in the cache,
 * then calls h264_encode_converted once every row is converted. Same result as h264_encode. */
EXPORT("h264_convert_rows") void h264_convert_rows(encoder_t *e, int y_from, int y_to) { rgb_to_i420_rows(e, e->rgb_in, y_from, y_to); }
EXPORT("h264_encode_converted") int h264_encode_converted(encoder_t *e, int force_idr) { return encode_frame(e, NULL, force_idr); }

/* Encodes a frame read in place from the host's own memory (the native library: saves copying
 * every frame into h264_input(); colour.c reads nothing past the frame). */
EXPORT("h264_encode_from") int h264_encode_from(encoder_t *e, const u8 *rgb, int force_idr) { return encode_frame(e, rgb, force_idr); }

/* Releases the encoder (natively; in wasm the host drops the instance instead). */
EXPORT("h264_destroy") void h264_destroy(encoder_t *e) {
  if (e) destroy(e);
}

/* The QP of the last encoded picture (it varies under rate control). */
EXPORT("h264_frame_qp") int h264_frame_qp(encoder_t *e) { return e->qp; }

/* Identifies the sources this module was built from (tools/build/h264.ts passes a hash of them), so
 * the host can tell a native library from the same sources as its wasm module. */
#ifndef KINO_H264_BUILD_ID
#define KINO_H264_BUILD_ID 0
#endif
EXPORT("h264_build_id") int h264_build_id(void) { return KINO_H264_BUILD_ID; }

EXPORT("h264_input") u8 *h264_input(encoder_t *e) { return e->rgb_in; }
EXPORT("h264_nal_data") u8 *h264_nal_data(encoder_t *e) { return e->nal; }
EXPORT("h264_nal_size") int h264_nal_size(encoder_t *e) { return e->nal_size; }
EXPORT("h264_sps_data") u8 *h264_sps_data(encoder_t *e) { return e->sps; }
EXPORT("h264_sps_size") int h264_sps_size(encoder_t *e) { return e->sps_size; }
EXPORT("h264_pps_data") u8 *h264_pps_data(encoder_t *e) { return e->pps; }
EXPORT("h264_pps_size") int h264_pps_size(encoder_t *e) { return e->pps_size; }

/* Diagnostics for tests: the source after colour conversion and the last reconstructed picture
 * (after deblocking, i.e. what a decoder outputs), plane 0 Y, 1 Cb, 2 Cr, with their strides. */
EXPORT("h264_source_plane") u8 *h264_source_plane(encoder_t *e, int plane) {
  return plane == 0 ? e->src_y : plane == 1 ? e->src_u : e->src_v;
}
EXPORT("h264_source_stride") int h264_source_stride(encoder_t *e, int plane) { return plane == 0 ? e->coded_w : e->coded_w / 2; }
EXPORT("h264_recon_plane") u8 *h264_recon_plane(encoder_t *e, int plane) {
  picture_t *p = &e->pic[e->cur ^ 1];
  return plane == 0 ? p->y : plane == 1 ? p->u : p->v;
}
EXPORT("h264_recon_stride") int h264_recon_stride(encoder_t *e, int plane) { return plane == 0 ? e->stride_y : e->stride_c; }
