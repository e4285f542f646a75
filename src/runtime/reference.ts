// The plain TypeScript reference of every Backend op: host arrays in, a new host array out, float64
// accumulation, written for obviousness, not speed (but for conv3d's loop order: see there). test/runtime/ops.test.ts measures every backend
// against it; model tests may use it for small cases. Weights are taken as the f32 values the device
// tensor holds (round them through bf16/f16 with dtype.ts first when the backend gets half weights).
// Semantics and shape rules are the ones documented in backend.ts, checked by op-params.ts.

import type { AttentionOptions, Conv2dOptions, Conv3dOptions, FrameRange, ResizeOptions, RopeOptions, T5BiasOptions } from "./backend.ts";
import * as P from "./op-params.ts";
import { type DType, type Shape, numelOf, stridesOf } from "./tensor.ts";

export class Host {
  readonly dtype: DType;
  constructor(readonly shape: number[], readonly data: Float32Array | Uint8Array = new Float32Array(numelOf(shape))) {
    this.dtype = data instanceof Uint8Array ? "u8" : "f32";
    if (data.length !== numelOf(shape)) throw new Error(`data length ${data.length} ≠ shape [${shape}]`);
  }
  get f32(): Float32Array {
    if (!(this.data instanceof Float32Array)) throw new Error("not an f32 host tensor");
    return this.data;
  }
}

const zeros = (shape: number[]) => new Host(shape);

/** A gemm epilogue over host tensors (backend.ts GemmEpilogue). */
export type HostEpilogue = { kind: "gelu" } | { kind: "residual"; residual: Host; gate?: Host | null } | { kind: "split"; parts: number };

export function gemm(a: Host, w: Host, bias?: Host | null, epilogue?: HostEpilogue | null): Host {
  const lead = a.shape.slice(0, -1), N = w.shape[0]!;
  const parts = epilogue?.kind === "split" ? epilogue.parts : 0;
  const outShape = parts ? [parts, ...lead, N / parts] : [...lead, N];
  const { M, K } = P.gemmDims({ shape: outShape, dtype: "f32" }, a, w, bias, epilogue);
  const { L, G } = P.gemmEpilogueDims({ shape: outShape, dtype: "f32" }, epilogue);
  const out = zeros(outShape);
  // column n of a split output lives in part n / S at column n % S (S = N / parts)
  const S = parts ? N / parts : N;
  const at = (m: number, n: number) => (parts ? (Math.floor(n / S) * M + m) * S + (n % S) : m * N + n);
  const A = a.f32, W = w.f32, o = out.f32;
  for (let m = 0; m < M; m++) {
    const gateRow = groupRow(m, L, G) * N;
    for (let n = 0; n < N; n++) {
      let s = bias ? bias.f32[n]! : 0;
      for (let k = 0; k < K; k++) s += A[m * K + k]! * W[n * K + k]!;
      if (epilogue?.kind === "gelu") s = geluOf(s);
      else if (epilogue?.kind === "residual") s = epilogue.residual.f32[m * N + n]! + (epilogue.gate ? epilogue.gate.f32[gateRow + n]! : 1) * s;
      o[at(m, n)] = s;
    }
  }
  return out;
}

export function attention(q: Host, k: Host, v: Host, opts: Omit<AttentionOptions, "bias"> & { bias?: Host }): Host {
  const { B, Lq, Lk, kvLen, H, D } = P.attentionDims(q, q, k, v, opts);
  const out = zeros([...q.shape]);
  const Q = q.f32, Kd = k.f32, V = v.f32, o = out.f32, bias = opts.bias?.f32;
  const s = new Float64Array(kvLen);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) {
    const n = P.visibleKeys(i, kvLen, opts);
    if (n === 0) continue;
    const qo = ((b * Lq + i) * H + h) * D;
    let max = -Infinity;
    for (let j = 0; j < n; j++) {
      const ko = ((b * Lk + j) * H + h) * D;
      let dot = 0;
      for (let d = 0; d < D; d++) dot += Q[qo + d]! * Kd[ko + d]!;
      s[j] = dot * opts.scale + (bias ? bias[(h * Lq + i) * kvLen + j]! : 0);
      max = Math.max(max, s[j]!);
    }
    let sum = 0;
    for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - max);
    for (let d = 0; d < D; d++) {
      let acc = 0;
      for (let j = 0; j < n; j++) acc += s[j]! * V[((b * Lk + j) * H + h) * D + d]!;
      o[qo + d] = acc / sum;
    }
  }
  return out;
}

function overRows(x: Host, f: (row: Float32Array, out: Float32Array, r: number) => void): Host {
  const { rows, cols } = P.rowsOf("reference", x, x);
  const out = zeros([...x.shape]);
  for (let r = 0; r < rows; r++) f(x.f32.subarray(r * cols, (r + 1) * cols), out.f32.subarray(r * cols, (r + 1) * cols), r);
  return out;
}

/** The row of a per-group table [B, G, C] that row m of x [B, L, C] reads (Backend.layerNormModulate). */
const groupRow = (m: number, L: number, G: number) => Math.floor(m / L) * G + Math.floor((m % L) / (L / G));

export function layerNorm(x: Host, eps: number, weight?: Host | null, bias?: Host | null): Host {
  return overRows(x, (row, o) => {
    let mean = 0, vr = 0;
    for (const v of row) mean += v;
    mean /= row.length;
    for (const v of row) vr += (v - mean) ** 2;
    const inv = 1 / Math.sqrt(vr / row.length + eps);
    for (let c = 0; c < row.length; c++) o[c] = (row[c]! - mean) * inv * (weight ? weight.f32[c]! : 1) + (bias ? bias.f32[c]! : 0);
  });
}

export function layerNormModulate(x: Host, eps: number, scale: Host, shift: Host): Host {
  const { L, C, G } = P.groupedDims("reference", x, x, [scale, shift]);
  return overRows(x, (row, o, r) => {
    let mean = 0, vr = 0;
    for (const v of row) mean += v;
    mean /= row.length;
    for (const v of row) vr += (v - mean) ** 2;
    const inv = 1 / Math.sqrt(vr / row.length + eps), t = groupRow(r, L, G) * C;
    for (let c = 0; c < C; c++) o[c] = (row[c]! - mean) * inv * (1 + scale.f32[t + c]!) + shift.f32[t + c]!;
  });
}

export function rmsNorm(x: Host, eps: number, weight?: Host | null): Host {
  return overRows(x, (row, o) => {
    let ss = 0;
    for (const v of row) ss += v * v;
    const inv = 1 / Math.sqrt(ss / row.length + eps);
    for (let c = 0; c < row.length; c++) o[c] = row[c]! * inv * (weight ? weight.f32[c]! : 1);
  });
}

export function softmax(x: Host): Host {
  return overRows(x, (row, o) => {
    const max = Math.max(...row);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    for (let c = 0; c < row.length; c++) o[c] = Math.exp(row[c]! - max) / sum;
  });
}

export function l2NormChannels(x: Host, eps: number, scale: number, gamma?: Host | null): Host {
  const [B, C] = x.shape as [number, number];
  const S = numelOf(x.shape.slice(2));
  const out = zeros([...x.shape]);
  for (let b = 0; b < B; b++) for (let s = 0; s < S; s++) {
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x.f32[(b * C + c) * S + s]! ** 2;
    const inv = scale / Math.max(Math.sqrt(ss), eps);
    for (let c = 0; c < C; c++) out.f32[(b * C + c) * S + s] = x.f32[(b * C + c) * S + s]! * inv * (gamma ? gamma.f32[c]! : 1);
  }
  return out;
}

const map = (x: Host, f: (v: number, i: number) => number) => new Host([...x.shape], x.f32.map(f));

const geluOf = (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
export const gelu = (x: Host) => map(x, geluOf);
/** erfc(z) for z ≥ 0 in float64: the Maclaurin series of erf below 2.5 (≤ 1e-15 lost to cancellation
 *  there), Laplace's continued fraction above (120 terms converge to double precision from 2.5 on). */
export function erfc(z: number): number {
  if (z < 2.5) {
    let term = z, sum = z;
    for (let n = 1; n < 100 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= (-z * z) / n;
      sum += term / (2 * n + 1);
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * sum;
  }
  let k = z;
  for (let n = 120; n >= 1; n--) k = z + n / 2 / k;
  return Math.exp(-z * z) / (Math.sqrt(Math.PI) * k);
}
/** x·Φ(x), with Φ from erfc so that the negative tail keeps its relative precision. */
const geluExactOf = (v: number) => v * (v >= 0 ? 1 - 0.5 * erfc(v / Math.SQRT2) : 0.5 * erfc(-v / Math.SQRT2));
export const geluExact = (x: Host) => map(x, geluExactOf);
export const silu = (x: Host) => map(x, (v) => v / (1 + Math.exp(-v)));
export const mul = (a: Host, b: Host) => map(a, (v, i) => v * b.f32[i]!);
export const axpby = (a: Host, b: Host, alpha: number, beta: number) => map(a, (v, i) => alpha * v + beta * b.f32[i]!);

/** RopeOptions with the reference's host tensors. */
export type HostRope = Omit<RopeOptions, "cos" | "sin" | "frameOffsetAt"> & { cos: Host; sin: Host; frameOffsetAt?: Host };

export function rope3d(x: Host, o: HostRope): Host {
  const { B, L, H, D, P: rows, pairs, pt, ph, F, GH, GW } = P.ropeDims(x, x, o);
  const f0 = (o.frameOffset ?? 0) + (o.frameOffsetAt ? Math.trunc(o.frameOffsetAt.f32[0]!) : 0);
  const out = new Host([...x.shape], x.f32.slice());
  const cos = o.cos.f32, sin = o.sin.f32, X = out.f32;
  const used = pt + ph + o.axisPairs[2];
  for (let b = 0; b < B; b++) for (let l = 0; l < F * GH * GW; l++) {
    const pos = [f0 + Math.floor(l / (GH * GW)), Math.floor(l / GW) % GH, l % GW];
    if (pos[0]! < 0 || pos[0]! >= rows) continue; // a run-time frame offset past the tables: unrotated
    for (let h = 0; h < H; h++) for (let c = 0; c < used; c++) {
      const p = pos[c < pt ? 0 : c < pt + ph ? 1 : 2]!;
      const i = ((b * L + l) * H + h) * D + 2 * c;
      const re = X[i]!, im = X[i + 1]!, cs = cos[p * pairs + c]!, sn = sin[p * pairs + c]!;
      X[i] = re * cs - im * sn;
      X[i + 1] = re * sn + im * cs;
    }
  }
  return out;
}

/** RMSNorm over each token's H·D values of x [B, L, H, D], then rope3d. */
export function rmsNormRope(x: Host, eps: number, weight: Host | null, o: HostRope): Host {
  const { B, L, H, D } = P.rmsNormRopeDims(x, x, weight, o);
  const normed = rmsNorm(new Host([B, L, H * D], x.f32), eps, weight);
  return rope3d(new Host([...x.shape], normed.f32), o);
}

export function embedding(table: Host, ids: Int32Array): Host {
  const C = table.shape[1]!;
  const out = zeros([ids.length, C]);
  ids.forEach((id, i) => out.f32.set(table.f32.subarray(id * C, (id + 1) * C), i * C));
  return out;
}

export function t5RelativeBias(table: Host, Lq: number, Lk: number, o: T5BiasOptions): Host {
  const H = table.shape[1]!;
  const out = zeros([H, Lq, Lk]);
  for (let h = 0; h < H; h++) for (let i = 0; i < Lq; i++) for (let j = 0; j < Lk; j++) {
    out.f32[(h * Lq + i) * Lk + j] = table.f32[P.t5Bucket(j - i, o) * H + h]!;
  }
  return out;
}

/** Conv3dOptions with the reference's host tensors. */
export type HostConv3dOptions = Omit<Conv3dOptions, "prev" | "normSilu" | "residual"> & {
  prev?: Host;
  residual?: Host;
  normSilu?: { eps: number; scale: number; gamma?: Host | null };
};

/** What a conv with `normSilu` reads in place of x (or prev): silu(l2NormChannels(x)). */
export function convNormSilu(x: Host, o: NonNullable<HostConv3dOptions["normSilu"]>): Host {
  return silu(l2NormChannels(x, o.eps, o.scale, o.gamma));
}

/** The loops run over whole output planes (the VAE goldens on the test backend make hundreds of
 *  millions of multiply-adds); each output element still sums bias, then every tap in (ci, a, r, q)
 *  order in float64, and taps outside the padded input add nothing. */
export function conv3d(x: Host, w: Host, bias: Host | null, opts: HostConv3dOptions = {}): Host {
  const oshape = P.conv3dOutputShape(x.shape, w.shape, opts);
  const g = P.conv3dGeometry({ shape: oshape, dtype: "f32" }, x, w, bias, opts);
  if (opts.upsample) {
    const { upsample, ...plain } = opts;
    return conv3d(upsampleNearest(x, [g.B, g.Cin, g.T, g.H, g.W]), w, bias, plain);
  }
  if (opts.normSilu) {
    const { normSilu, ...plain } = opts;
    return conv3d(convNormSilu(x, normSilu), w, bias, { ...plain, prev: opts.prev && convNormSilu(opts.prev, normSilu) });
  }
  if (opts.residual) {
    const { residual, ...plain } = opts;
    return axpby(conv3d(x, w, bias, plain), residual, 1, 1);
  }
  // The input with its time padding (prev frames, or zeros) in front: [B, Cin, timePad + T, H, W].
  const Tp = g.timePad + g.T, HW = g.H * g.W;
  const padded = new Float64Array(g.B * g.Cin * Tp * HW);
  for (let b = 0; b < g.B; b++) for (let c = 0; c < g.Cin; c++) {
    const dst = (b * g.Cin + c) * Tp * HW;
    if (opts.prev) padded.set(opts.prev.f32.subarray(((b * g.Cin + c) * g.timePad) * HW, ((b * g.Cin + c + 1) * g.timePad) * HW), dst);
    padded.set(x.f32.subarray((b * g.Cin + c) * g.T * HW, (b * g.Cin + c + 1) * g.T * HW), dst + g.timePad * HW);
  }
  const out = zeros(oshape);
  const acc = new Float64Array(g.Ho * g.Wo);
  const Wt = w.f32;
  for (let b = 0; b < g.B; b++) for (let co = 0; co < g.Cout; co++) for (let to = 0; to < g.To; to++) {
    acc.fill(bias ? bias.f32[co]! : 0);
    for (let ci = 0; ci < g.Cin; ci++) for (let a = 0; a < g.kt; a++) {
      const frame = ((b * g.Cin + ci) * Tp + to * g.st + a) * HW;
      for (let r = 0; r < g.kh; r++) for (let q = 0; q < g.kw; q++) {
        const wv = Wt[(((co * g.Cin + ci) * g.kt + a) * g.kh + r) * g.kw + q]!;
        for (let yo = 0; yo < g.Ho; yo++) {
          const y = yo * g.sh + r - g.top;
          if (y < 0 || y >= g.H) continue;
          const row = frame + y * g.W, arow = yo * g.Wo;
          for (let xo = 0; xo < g.Wo; xo++) {
            const xx = xo * g.sw + q - g.left;
            if (xx >= 0 && xx < g.W) acc[arow + xo] += wv * padded[row + xx]!;
          }
        }
      }
    }
    out.f32.set(acc, ((b * g.Cout + co) * g.To + to) * g.Ho * g.Wo);
  }
  return out;
}

/** conv2d is conv3d with one frame and kt = 1 (the same for every backend). */
export function conv2d(x: Host, w: Host, bias: Host | null, opts: Conv2dOptions = {}): Host {
  const [B, C, H, W] = x.shape as [number, number, number, number];
  const [sh, sw] = opts.stride ?? [1, 1];
  const x5 = new Host([B, C, 1, H, W], x.f32);
  const w5 = new Host([w.shape[0]!, w.shape[1]!, 1, w.shape[2]!, w.shape[3]!], w.f32);
  const o = conv3d(x5, w5, bias, { stride: [1, sh, sw], pad: opts.pad, timePad: 0 });
  return new Host([o.shape[0]!, o.shape[1]!, o.shape[3]!, o.shape[4]!], o.f32);
}

/** Calls f(outIndex, inIndex) for every element, with in-coordinate = inCoord(out-coordinate). */
function gather(outShape: number[], inShape: Shape, inCoord: (c: number[]) => number[], f: (o: number, i: number) => void) {
  const is = stridesOf(inShape);
  const c = new Array<number>(outShape.length).fill(0);
  const n = numelOf(outShape);
  for (let o = 0; o < n; o++) {
    let rem = o;
    for (let d = outShape.length - 1; d >= 0; d--) {
      c[d] = rem % outShape[d]!;
      rem = Math.floor(rem / outShape[d]!);
    }
    f(o, inCoord(c).reduce((acc, v, d) => acc + v * is[d]!, 0));
  }
}

function like(x: Host, shape: number[]): Host {
  return new Host(shape, x.data instanceof Uint8Array ? new Uint8Array(numelOf(shape)) : new Float32Array(numelOf(shape)));
}

export function upsampleNearest(x: Host, outShape: number[]): Host {
  const out = like(x, outShape);
  const fac = P.upsampleFactors(out, x);
  gather(outShape, x.shape, (c) => c.map((v, d) => Math.floor(v / fac[d]!)), (o, i) => (out.data[o] = x.data[i]!));
  return out;
}

/** The cubic convolution kernel with parameter a (Keys: −0.5; PyTorch's bicubic: −0.75). */
function cubic(t: number, a: number): number {
  const u = Math.abs(t);
  if (u < 1) return ((a + 2) * u - (a + 3)) * u * u + 1;
  if (u < 2) return (((u - 5) * u + 8) * u - 4) * a;
  return 0;
}

/** PyTorch's bicubic taps (align_corners=False, no antialias): 4 around (o + 0.5)·n/m − 0.5, indices
 *  clamped to [0, n), a clamped index's weight added to the border pixel's. */
function torchTaps(n: number, m: number): { lo: number; w: number[] }[] {
  const s = Math.fround(n / m);
  return Array.from({ length: m }, (_, o) => {
    const c = (o + 0.5) * s - 0.5, i0 = Math.floor(c), t = c - i0;
    const lo = Math.max(0, i0 - 1), hi = Math.min(n - 1, i0 + 2);
    const w = new Array<number>(hi - lo + 1).fill(0);
    for (let k = 0; k < 4; k++) w[Math.min(n - 1, Math.max(0, i0 - 1 + k)) - lo]! += cubic(t + 1 - k, -0.75);
    return { lo, w };
  });
}

/** Normalized bicubic weights of each output pixel on an axis of n inputs resampled to m, widened by
 *  the scale when shrinking (antialiasing); taps outside [0, n) are left out. */
function resampleTaps(n: number, m: number, filter: ResizeOptions["filter"] = "antialiased"): { lo: number; w: number[] }[] {
  if (filter === "torch") return torchTaps(n, m);
  const s = n / m, f = Math.max(s, 1);
  return Array.from({ length: m }, (_, o) => {
    const c = (o + 0.5) * s;
    const lo = Math.max(0, Math.trunc(c - 2 * f + 0.5));
    const hi = Math.min(n, Math.trunc(c + 2 * f + 0.5), lo + 64);
    const w = Array.from({ length: hi - lo }, (_, i) => cubic((lo + i + 0.5 - c) / f, -0.5));
    const sum = w.reduce((a, b) => a + b, 0);
    return { lo, w: w.map((v) => v / sum) };
  });
}

/** Bicubic resampling of the last two dims (Backend.resize; kernels/cpu/resize.c has the formula). */
export function resize(x: Host, Ho: number, Wo: number, opts: ResizeOptions = {}): Host {
  const out = like(x, [...x.shape.slice(0, -2), Ho, Wo]);
  const { planes, H, W } = P.resizeDims(out, x, opts.filter);
  const ty = resampleTaps(H, Ho, opts.filter), tx = resampleTaps(W, Wo, opts.filter);
  for (let p = 0; p < planes; p++) {
    for (let y = 0; y < Ho; y++) {
      for (let xo = 0; xo < Wo; xo++) {
        let acc = 0;
        ty[y]!.w.forEach((wy, i) => {
          const row = (p * H + ty[y]!.lo + i) * W + tx[xo]!.lo;
          acc += wy * tx[xo]!.w.reduce((line, wx, j) => line + wx * x.data[row + j]!, 0);
        });
        out.data[(p * Ho + y) * Wo + xo] = acc;
      }
    }
  }
  return out;
}

export function permute(x: Host, perm: readonly number[]): Host {
  const out = like(x, perm.map((p) => x.shape[p]!));
  P.permuteCheck(out, x, perm);
  gather(out.shape, x.shape, (c) => { const ic = new Array<number>(c.length); perm.forEach((p, i) => (ic[p] = c[i]!)); return ic; },
    (o, i) => (out.data[o] = x.data[i]!));
  return out;
}

export function slice(x: Host, dim: number, start: number, len: number): Host {
  const d = P.normDim("slice", dim, x.shape.length);
  const out = like(x, x.shape.map((s, i) => (i === d ? len : s)));
  P.sliceDims("slice", x, out, d, start);
  gather(out.shape, x.shape, (c) => c.map((v, i) => (i === d ? v + start : v)), (o, i) => (out.data[o] = x.data[i]!));
  return out;
}

export function writeSlice(dst: Host, src: Host, dim: number, start: number): Host {
  const { d } = P.sliceDims("writeSlice", dst, src, dim, start);
  const out = like(dst, [...dst.shape]);
  out.data.set(dst.data);
  gather(src.shape, dst.shape, (c) => c.map((v, i) => (i === d ? v + start : v)), (s, o) => (out.data[o] = src.data[s]!));
  return out;
}

/** x with [to, to + len) along `dim` replaced by what [from, from + len) held (the ranges may overlap). */
export function copyWithin(x: Host, dim: number, to: number, from: number, len: number): Host {
  P.copyWithinCopies(x, dim, to, from, len);
  const d = P.normDim("copyWithin", dim, x.shape.length);
  return writeSlice(x, slice(x, d, from, len), d, to);
}

export function concat(inputs: Host[], dim: number): Host {
  const d = P.normDim("concat", dim, inputs[0]!.shape.length);
  let out = like(inputs[0]!, inputs[0]!.shape.map((s, i) => (i === d ? inputs.reduce((n, t) => n + t.shape[d]!, 0) : s)));
  let at = 0;
  for (const t of inputs) { out = writeSlice(out, t, d, at); at += t.shape[d]!; }
  return out;
}

/** A sample's 8-bit code, as src/models/frames.ts videoToRgb24 makes it for [-1, 1]: scaled in double,
 *  clamped (NaN → 0), rounded half up. */
function code8(v: number, lo: number, scale: number): number {
  const y = (v - lo) * scale;
  return y >= 255 ? 255 : y > 0 ? Math.round(y) : 0;
}

/** The H.264 encoder's RGB24 → I420 (kernels/h264/colour.c): BT.601 limited range in 16-bit fixed point,
 *  chroma from the 2×2 sum of the codes. */
export function rgbToYuv420(x: Host, range: FrameRange): Host {
  const [, T, H, W] = x.shape as [number, number, number, number];
  const out = new Host([T, (H * W * 3) / 2], new Uint8Array((T * H * W * 3) / 2));
  P.yuvDims("rgbToYuv420", x, out);
  const [lo, hi] = range, scale = 255 / (hi - lo);
  const px = (c: number, t: number, y: number, xx: number) => code8(x.f32[((c * T + t) * H + y) * W + xx]!, lo, scale);
  const clip = (v: number) => Math.min(255, Math.max(0, v));
  const Y = out.data;
  for (let t = 0; t < T; t++) {
    const base = (t * H * W * 3) / 2;
    for (let y = 0; y < H; y++) for (let xx = 0; xx < W; xx++) {
      Y[base + y * W + xx] = (16829 * px(0, t, y, xx) + 33039 * px(1, t, y, xx) + 6416 * px(2, t, y, xx) + (16 << 16) + 32768) >> 16;
    }
    for (let y = 0; y < H / 2; y++) for (let xx = 0; xx < W / 2; xx++) {
      const sum = (c: number) => px(c, t, 2 * y, 2 * xx) + px(c, t, 2 * y, 2 * xx + 1) + px(c, t, 2 * y + 1, 2 * xx) + px(c, t, 2 * y + 1, 2 * xx + 1);
      const r = sum(0), g = sum(1), b = sum(2), ci = y * (W / 2) + xx;
      Y[base + H * W + ci] = clip((-9714 * r - 19070 * g + 28784 * b + (128 << 18) + (1 << 17)) >> 18);
      Y[base + H * W + (H * W) / 4 + ci] = clip((28784 * r - 24103 * g - 4681 * b + (128 << 18) + (1 << 17)) >> 18);
    }
  }
  return out;
}

export function yuv420ToRgb(yuv: Host, H: number, W: number, range: FrameRange): Host {
  const T = yuv.shape[0]!;
  const out = zeros([3, T, H, W]);
  P.yuvDims("yuv420ToRgb", out, yuv);
  const [lo, hi] = range;
  for (let t = 0; t < T; t++) {
    const base = (t * H * W * 3) / 2;
    for (let y = 0; y < H; y++) for (let xx = 0; xx < W; xx++) {
      const ci = (y >> 1) * (W / 2) + (xx >> 1);
      const l = (yuv.data[base + y * W + xx]! - 16) / 219;
      const pb = (yuv.data[base + H * W + ci]! - 128) / 224, pr = (yuv.data[base + (H * W * 5) / 4 + ci]! - 128) / 224;
      const rgb = [l + 1.402 * pr, l - 0.344136 * pb - 0.714136 * pr, l + 1.772 * pb];
      rgb.forEach((v, c) => (out.f32[((c * T + t) * H + y) * W + xx] = lo + (hi - lo) * Math.min(1, Math.max(0, v))));
    }
  }
  return out;
}
