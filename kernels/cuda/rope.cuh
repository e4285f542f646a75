// Wan's 3D rotary embedding of one adjacent pair, shared by rope3d (rope.cu) and the fused q/k
// RMSNorm + RoPE (norm_rope.cu).
//
// Tables cos/sin [P, pairs], the three per-axis tables side by side: pair c < pt reads the frame
// position's row, c < pt + ph the height's, c < used = pt + ph + pw the width's. Token l of the
// F·GH·GW grid sits at (f0 + l / (GH·GW), (l / GW) % GH, l % GW). Tokens past the grid and pairs
// past `used` are not rotated.
#pragma once
#include "common.cuh"

struct KcRope {
  const float* cos;
  const float* sin;
  int pairs, pt, ph, used, GH, GW, tokens, f0;
};

// (re, im) ← (re·cos − im·sin, re·sin + im·cos) for pair c of token l.
__device__ __forceinline__ void kc_rope_pair(const KcRope& r, int l, int c, float& re, float& im) {
  if (l >= r.tokens || c >= r.used) return;
  const int p = c < r.pt ? r.f0 + l / (r.GH * r.GW) : c < r.pt + r.ph ? (l / r.GW) % r.GH : l % r.GW;
  const float cs = r.cos[(int64_t)p * r.pairs + c], sn = r.sin[(int64_t)p * r.pairs + c];
  const float rotated = re * cs - im * sn;
  im = re * sn + im * cs;
  re = rotated;
}

// The host side: kc_rope_pair's view of rope3d's arguments (GH, GW ≥ 1 so that an empty grid divides).
static inline KcRope kc_rope(const float* cos_t, const float* sin_t, int pairs, int pt, int ph, int pw, int F, int GH,
                             int GW, int f0) {
  return KcRope{cos_t, sin_t, pairs, pt, ph, pt + ph + pw, GH > 0 ? GH : 1, GW > 0 ? GW : 1, F * GH * GW, f0};
}
