// Wan's 3D rotary embedding of one adjacent pair, shared by rope3d (rope.cu) and the fused q/k
// RMSNorm + RoPE (norm_rope.cu).
//
// Tables cos/sin [P, pairs], the three per-axis tables side by side: pair c < pt reads the frame
// position's row, c < pt + ph the height's, c < used = pt + ph + pw the width's. Token l of the
// F·GH·GW grid sits at (f0 + l / (GH·GW), (l / GW) % GH, l % GW). Tokens past the grid and pairs
// past `used` are not rotated.
//
// f0 may have a part read at run time (`f_at`, RopeOptions.frameOffsetAt: an f32 holding a whole
// number): a recorded CUDA graph keeps its kernel arguments, so a causal DiT's frame offset lives in a
// device tensor that each chunk rewrites, and one recording serves every chunk. The host cannot check
// that value against the table's `rows` at the call, so a token whose frame row falls outside the table
// is left unrotated here rather than read past it (the model keeps the table covering the offset:
// src/models/rope.ts).
#pragma once
#include "common.cuh"

struct KcRope {
  const float* cos;
  const float* sin;
  const float* f_at;
  int pairs, pt, ph, used, GH, GW, tokens, f0, rows;
};

// The rope as a kernel sees it when it runs: f0 with the device-resident part added (one load per
// thread, before the loops).
__device__ __forceinline__ KcRope kc_rope_now(KcRope r) {
  if (r.f_at) r.f0 += (int)__ldg(r.f_at);
  return r;
}

// (re, im) ← (re·cos − im·sin, re·sin + im·cos) for pair c of token l (r from kc_rope_now).
__device__ __forceinline__ void kc_rope_pair(const KcRope& r, int l, int c, float& re, float& im) {
  if (l >= r.tokens || c >= r.used) return;
  const int frame = r.f0 + l / (r.GH * r.GW);
  if (frame < 0 || frame >= r.rows) return;
  const int p = c < r.pt ? frame : c < r.pt + r.ph ? (l / r.GW) % r.GH : l % r.GW;
  const float cs = r.cos[(int64_t)p * r.pairs + c], sn = r.sin[(int64_t)p * r.pairs + c];
  const float rotated = re * cs - im * sn;
  im = re * sn + im * cs;
  re = rotated;
}

// The host side: kc_rope_pair's view of rope3d's arguments (GH, GW ≥ 1 so that an empty grid divides);
// rows: the tables' P; f_at: the device-resident part of the frame offset, or null.
static inline KcRope kc_rope(const float* cos_t, const float* sin_t, int rows, int pairs, int pt, int ph, int pw, int F,
                             int GH, int GW, int f0, const float* f_at) {
  return KcRope{cos_t, sin_t, f_at, pairs, pt, ph, pt + ph + pw, GH > 0 ? GH : 1, GW > 0 ? GW : 1, F * GH * GW, f0, rows};
}
