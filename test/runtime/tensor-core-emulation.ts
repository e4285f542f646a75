// The arithmetic of the CUDA tensor-core kernels, replayed in TypeScript so that the op sweep's
// tensor-core tolerances (op-precision.ts) can be tested on a machine without a GPU: not references
// (src/runtime/reference.ts is the one reference), but imitations of what kernels/cuda/gemm.cu,
// attention.cu and conv_mma.cu do to the numbers, with the rounding of each step as a parameter so that
// a test can also produce a kernel that rounds more coarsely than the real one. (The conv kernel's own
// source also runs without a GPU, on the emulator of test/runtime/cuda-emulator.)
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as P from "../../src/runtime/op-params.ts";
import type * as R from "../../src/runtime/reference.ts";
import { roundedTo } from "./op-precision.ts";

const f32 = Math.fround;

/** x rounded to `bits` significant bits (bf16: 8), to nearest. */
export function roundSignificand(x: number, bits: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const step = 2 ** (Math.floor(Math.log2(Math.abs(x))) - bits + 1);
  return Math.round(x / step) * step;
}

/** GEMM as mma.sync / wgmma compute it: a rounded to `activations` (the weight's type on the GPU),
 *  exact products summed per 16-deep k step, each step added to an f32 accumulator. */
export function emulateGemm(a: R.Host, storedW: R.Host, activations: HalfKind, bias: R.Host | null): Float32Array {
  const A = roundedTo(a, activations).f32, W = storedW.f32;
  const K = a.shape[a.shape.length - 1]!, N = storedW.shape[0]!, M = A.length / K;
  const out = new Float32Array(M * N);
  for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
    let acc = 0;
    for (let k0 = 0; k0 < K; k0 += 16) {
      let step = 0;
      for (let k = k0; k < Math.min(k0 + 16, K); k++) step += A[m * K + k]! * W[n * K + k]!;
      acc = f32(acc + f32(step));
    }
    out[m * N + n] = f32(acc + (bias ? bias.f32[n]! : 0));
  }
  return out;
}

/** Attention as the mma.sync kernel computes it: q, k, v rounded to bf16, keys in tiles of 64 with an
 *  online softmax in f32, P = exp(s − running max) rounded to `pBits` significant bits (8: bf16)
 *  for P·V while the row sum adds the unrounded P. */
export function emulateAttention(q: R.Host, k: R.Host, v: R.Host, opts: Parameters<typeof R.attention>[3], pBits = 8): Float32Array {
  const [Q, Kd, V] = [q, k, v].map((h) => roundedTo(h, "bf16").f32) as [Float32Array, Float32Array, Float32Array];
  const { B, Lq, Lk, kvLen, H, D } = P.attentionDims(q, q, k, v, opts);
  const bias = opts.bias?.f32;
  const out = new Float32Array(B * Lq * H * D);
  const o = new Float32Array(D);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) {
    const n = P.visibleKeys(i, kvLen, opts), qo = ((b * Lq + i) * H + h) * D;
    let max = -Infinity, l = 0;
    o.fill(0);
    for (let j0 = 0; j0 < n; j0 += 64) {
      const s: number[] = [];
      for (let j = j0; j < Math.min(j0 + 64, n); j++) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot = f32(dot + Q[qo + d]! * Kd[((b * Lk + j) * H + h) * D + d]!);
        s.push(f32(f32(dot * opts.scale) + (bias ? bias[(h * Lq + i) * kvLen + j]! : 0)));
      }
      const next = Math.max(max, ...s), alpha = f32(Math.exp(max - next));
      const p = s.map((x) => f32(Math.exp(x - next)));
      l = f32(l * alpha + p.reduce((a, x) => a + x, 0));
      for (let d = 0; d < D; d++) {
        let acc = o[d]! * alpha;
        p.forEach((pj, t) => (acc += roundSignificand(pj, pBits) * V[((b * Lk + j0 + t) * H + h) * D + d]!));
        o[d] = acc;
      }
      max = next;
    }
    for (let d = 0; d < D; d++) out[qo + d] = l > 0 ? o[d]! / l : 0;
  }
  return out;
}

/** Conv3d as kernels/cuda/conv_mma.cu computes it: x, prev and w rounded to bf16 (or, to imitate a
 *  coarser kernel, to `bits` significant bits), K ordered tap by tap with the channels padded to 32,
 *  exact products summed per 16-deep k step, each step added to an f32 accumulator, then the bias. */
export function emulateConv(x: R.Host, storedW: R.Host, bias: R.Host | null, opts: Parameters<typeof R.conv3d>[3] = {}, bits = 8): Float32Array {
  const round = (h: R.Host) => (bits === 8 ? roundedTo(h, "bf16").f32 : h.f32.map((v) => roundSignificand(v, bits)));
  const X = round(x), Wt = round(storedW), prev = opts.prev && round(opts.prev);
  const [B, Cin, T, H, W] = x.shape as [number, number, number, number, number];
  const [Cout, , kt, kh, kw] = storedW.shape as [number, number, number, number, number];
  const [st, sh, sw] = opts.stride ?? [1, 1, 1];
  const [top, , left] = opts.pad ?? [0, 0, 0, 0];
  const timePad = opts.timePad ?? kt - 1;
  const [, , To, Ho, Wo] = P.conv3dOutputShape(x.shape, storedW.shape, opts) as [number, number, number, number, number];
  const CP = Math.ceil(Cin / 32) * 32;
  /** Input (c, t, y, x) of the causal window (t counted from its first cached frame), 0 in the padding. */
  const input = (b: number, c: number, t: number, y: number, xx: number) => {
    if (c >= Cin || y < 0 || y >= H || xx < 0 || xx >= W) return 0;
    if (t >= timePad) return X[(((b * Cin + c) * T + t - timePad) * H + y) * W + xx]!;
    return prev ? prev[(((b * Cin + c) * timePad + t) * H + y) * W + xx]! : 0;
  };
  const out = new Float32Array(B * Cout * To * Ho * Wo);
  let o = 0;
  for (let b = 0; b < B; b++) for (let co = 0; co < Cout; co++) for (let to = 0; to < To; to++) for (let yo = 0; yo < Ho; yo++) for (let xo = 0; xo < Wo; xo++) {
    let acc = 0;
    for (let a = 0; a < kt; a++) for (let r = 0; r < kh; r++) for (let q = 0; q < kw; q++) {
      for (let c0 = 0; c0 < CP; c0 += 16) {
        let step = 0;
        for (let c = c0; c < Math.min(c0 + 16, Cin); c++) {
          step += input(b, c, to * st + a, yo * sh + r - top, xo * sw + q - left) * Wt[(((co * Cin + c) * kt + a) * kh + r) * kw + q]!;
        }
        acc = f32(acc + f32(step));
      }
    }
    out[o++] = f32(acc + (bias ? bias.f32[co]! : 0));
  }
  return out;
}
