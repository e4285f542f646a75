/*
 * CAVLC code tables of H.264 clause 9.2, as {length, code} pairs (code right-aligned).
 * Transcribed from the spec's Tables 9-5, 9-7, 9-8, 9-9(a) and 9-10.
 */
#ifndef KINO_H264_CAVLC_TABLES_H
#define KINO_H264_CAVLC_TABLES_H
#include "common.h"

typedef struct {
  u8 len, code;
} vlc_t;

/* coeff_token (Table 9-5) for 0 <= nC < 2, 2 <= nC < 4, 4 <= nC < 8; [TotalCoeff][TrailingOnes]. */
extern const vlc_t coeff_token_vlc[3][17][4];
/* coeff_token for chroma DC of 4:2:0 (nC == -1). */
extern const vlc_t coeff_token_chroma_dc_vlc[5][4];
/* total_zeros for 4x4 blocks (Tables 9-7, 9-8): [TotalCoeff - 1][total_zeros]. */
extern const vlc_t total_zeros_vlc[15][16];
/* total_zeros for 2x2 chroma DC (Table 9-9a): [TotalCoeff - 1][total_zeros]. */
extern const vlc_t total_zeros_chroma_dc_vlc[3][4];
/* run_before (Table 9-10): [min(zerosLeft, 7) - 1][run_before]. */
extern const vlc_t run_before_vlc[7][15];

#endif
