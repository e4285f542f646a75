/*
 * Parameter sets and the slice header (H.264 clauses 7.3.2.1, 7.3.2.2, 7.3.3, E.1.1) and the
 * level choice (Annex A, Table A-1).
 *
 * Stream shape: Constrained Baseline (profile_idc 66 with constraint_set0/1), one SPS and one PPS,
 * 4:2:0, frame_mbs_only, pic_order_cnt_type 2 (output order = decode order, no B-frames), one
 * reference frame, CAVLC, deblocking on with default offsets (off in the fast preset).
 */
#include "encoder.h"

typedef struct {
  int idc;
  int max_mbps; /* macroblocks per second */
  int max_fs;   /* frame size in macroblocks */
} level_limits_t;

/* Table A-1 (level 1b is skipped: 1.1 covers it and needs no constraint_set3 signalling). */
static const level_limits_t levels[] = {
    {10, 1485, 99},       {11, 3000, 396},      {12, 6000, 396},      {13, 11880, 396},     {20, 11880, 396},
    {21, 19800, 792},     {22, 20250, 1620},    {30, 40500, 1620},    {31, 108000, 3600},   {32, 216000, 5120},
    {40, 245760, 8192},   {41, 245760, 8192},   {42, 522240, 8704},   {50, 589824, 22080},  {51, 983040, 36864},
    {52, 2073600, 36864}, {60, 4177920, 139264}, {61, 8355840, 139264}, {62, 16711680, 139264},
};

/* Lowest level whose frame size, width/height (each <= sqrt(8 * MaxFS) macroblocks) and
 * macroblock rate fit. mbs_per_second_milli is mb_count * fps * 1000. */
int level_for(int mb_count, i64 mbs_per_second_milli, int mb_w, int mb_h) {
  int n = (int)(sizeof(levels) / sizeof(levels[0]));
  for (int i = 0; i < n; i++) {
    const level_limits_t *l = &levels[i];
    if (mb_count > l->max_fs) continue;
    if (mb_w * mb_w > 8 * l->max_fs || mb_h * mb_h > 8 * l->max_fs) continue;
    if (mbs_per_second_milli > (i64)l->max_mbps * 1000) continue;
    return l->idc;
  }
  return levels[n - 1].idc;
}

/* Vertical MV range of Table A-1, in quarter samples (the upper bound is one quarter less). */
int level_mv_limit_y(int level_idc) {
  if (level_idc <= 10) return 64 * 4;
  if (level_idc <= 20) return 128 * 4;
  if (level_idc <= 30) return 256 * 4;
  return 512 * 4;
}

static void write_vui(encoder_t *e, bitwriter_t *bw) {
  bw_put(bw, 1, 1);  /* aspect_ratio_info_present_flag */
  bw_put(bw, 1, 8);  /* aspect_ratio_idc: 1:1 square samples */
  bw_put(bw, 0, 1);  /* overscan_info_present_flag */
  bw_put(bw, 1, 1);  /* video_signal_type_present_flag */
  bw_put(bw, 5, 3);  /* video_format: unspecified */
  bw_put(bw, 0, 1);  /* video_full_range_flag: limited range, as colour.c converts */
  bw_put(bw, 1, 1);  /* colour_description_present_flag */
  bw_put(bw, 6, 8);  /* colour_primaries: SMPTE 170M */
  bw_put(bw, 6, 8);  /* transfer_characteristics: SMPTE 170M */
  bw_put(bw, 6, 8);  /* matrix_coefficients: SMPTE 170M = BT.601, as colour.c converts */
  bw_put(bw, 0, 1);  /* chroma_loc_info_present_flag */
  bw_put(bw, 1, 1);  /* timing_info_present_flag */
  /* A frame lasts two ticks (one per field in the spec's model): time_scale = 2 * fps * 1000. */
  bw_put(bw, 1000, 32);                        /* num_units_in_tick */
  bw_put(bw, (u32)(2 * e->fps_milli), 32);     /* time_scale */
  bw_put(bw, 1, 1);  /* fixed_frame_rate_flag */
  bw_put(bw, 0, 1);  /* nal_hrd_parameters_present_flag */
  bw_put(bw, 0, 1);  /* vcl_hrd_parameters_present_flag */
  bw_put(bw, 0, 1);  /* pic_struct_present_flag */
  bw_put(bw, 1, 1);  /* bitstream_restriction_flag: lets decoders output each frame immediately */
  bw_put(bw, 1, 1);  /* motion_vectors_over_pic_boundaries_flag */
  bw_ue(bw, 0);      /* max_bytes_per_pic_denom */
  bw_ue(bw, 0);      /* max_bits_per_mb_denom */
  bw_ue(bw, 15);     /* log2_max_mv_length_horizontal */
  bw_ue(bw, 15);     /* log2_max_mv_length_vertical */
  bw_ue(bw, 0);      /* max_num_reorder_frames */
  bw_ue(bw, 1);      /* max_dec_frame_buffering */
}

static int write_sps(encoder_t *e, u8 *out, u8 *scratch) {
  bitwriter_t bw;
  bw_init(&bw, scratch);
  bw_put(&bw, 66, 8);            /* profile_idc: Baseline */
  bw_put(&bw, 0xC0, 8);          /* constraint_set0_flag, constraint_set1_flag: Constrained Baseline */
  bw_put(&bw, (u32)e->level_idc, 8);
  bw_ue(&bw, 0);                 /* seq_parameter_set_id */
  bw_ue(&bw, (u32)(e->log2_max_frame_num - 4));
  bw_ue(&bw, 2);                 /* pic_order_cnt_type */
  bw_ue(&bw, 1);                 /* max_num_ref_frames */
  bw_put(&bw, 0, 1);             /* gaps_in_frame_num_value_allowed_flag */
  bw_ue(&bw, (u32)(e->mb_w - 1)); /* pic_width_in_mbs_minus1 */
  bw_ue(&bw, (u32)(e->mb_h - 1)); /* pic_height_in_map_units_minus1 */
  bw_put(&bw, 1, 1);             /* frame_mbs_only_flag */
  bw_put(&bw, 1, 1);             /* direct_8x8_inference_flag */
  int crop_right = (e->coded_w - e->width) / 2, crop_bottom = (e->coded_h - e->height) / 2; /* CropUnit = 2 */
  int cropping = crop_right || crop_bottom;
  bw_put(&bw, (u32)cropping, 1); /* frame_cropping_flag */
  if (cropping) {
    bw_ue(&bw, 0);
    bw_ue(&bw, (u32)crop_right);
    bw_ue(&bw, 0);
    bw_ue(&bw, (u32)crop_bottom);
  }
  bw_put(&bw, 1, 1);             /* vui_parameters_present_flag */
  write_vui(e, &bw);
  bw_trailing(&bw);
  return nal_wrap(out, 0x67, scratch, bw_aligned_size(&bw)); /* nal_ref_idc 3, type 7 */
}

static int write_pps(u8 *out, u8 *scratch) {
  bitwriter_t bw;
  bw_init(&bw, scratch);
  bw_ue(&bw, 0);     /* pic_parameter_set_id */
  bw_ue(&bw, 0);     /* seq_parameter_set_id */
  bw_put(&bw, 0, 1); /* entropy_coding_mode_flag: CAVLC */
  bw_put(&bw, 0, 1); /* bottom_field_pic_order_in_frame_present_flag */
  bw_ue(&bw, 0);     /* num_slice_groups_minus1 */
  bw_ue(&bw, 0);     /* num_ref_idx_l0_default_active_minus1 */
  bw_ue(&bw, 0);     /* num_ref_idx_l1_default_active_minus1 */
  bw_put(&bw, 0, 1); /* weighted_pred_flag */
  bw_put(&bw, 0, 2); /* weighted_bipred_idc */
  bw_se(&bw, 0);     /* pic_init_qp_minus26: each slice sends its QP as slice_qp_delta */
  bw_se(&bw, 0);     /* pic_init_qs_minus26 */
  bw_se(&bw, 0);     /* chroma_qp_index_offset */
  bw_put(&bw, 1, 1); /* deblocking_filter_control_present_flag */
  bw_put(&bw, 0, 1); /* constrained_intra_pred_flag */
  bw_put(&bw, 0, 1); /* redundant_pic_cnt_present_flag */
  bw_trailing(&bw);
  return nal_wrap(out, 0x68, scratch, bw_aligned_size(&bw)); /* nal_ref_idc 3, type 8 */
}

void params_write(encoder_t *e) {
  u8 scratch[64];
  e->sps_size = write_sps(e, e->sps, scratch);
  e->pps_size = write_pps(e->pps, scratch);
}

void slice_header_write(encoder_t *e, bitwriter_t *bw) {
  bw_ue(bw, 0);                          /* first_mb_in_slice */
  bw_ue(bw, e->is_idr ? 7 : 5);          /* slice_type: I or P, same for every slice of the picture */
  bw_ue(bw, 0);                          /* pic_parameter_set_id */
  bw_put(bw, (u32)e->frame_num, e->log2_max_frame_num);
  if (e->is_idr) bw_ue(bw, (u32)e->idr_pic_id);
  if (!e->is_idr) {
    bw_put(bw, 0, 1);                    /* num_ref_idx_active_override_flag */
    bw_put(bw, 0, 1);                    /* ref_pic_list_modification_flag_l0 */
  }
  /* dec_ref_pic_marking(): every picture is a reference; sliding window keeps the last one. */
  if (e->is_idr) {
    bw_put(bw, 0, 1);                    /* no_output_of_prior_pics_flag */
    bw_put(bw, 0, 1);                    /* long_term_reference_flag */
  } else {
    bw_put(bw, 0, 1);                    /* adaptive_ref_pic_marking_mode_flag */
  }
  bw_se(bw, e->qp - 26);                 /* slice_qp_delta */
  if (e->preset == PRESET_FAST) {
    bw_ue(bw, 1);                        /* disable_deblocking_filter_idc: filter off (no offsets follow) */
  } else {
    bw_ue(bw, 0);                        /* disable_deblocking_filter_idc: filter on */
    bw_se(bw, 0);                        /* slice_alpha_c0_offset_div2 */
    bw_se(bw, 0);                        /* slice_beta_offset_div2 */
  }
}
