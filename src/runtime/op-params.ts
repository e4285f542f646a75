// Shape checks and small host-side parameter computations that every backend (and the reference)
// shares, so an op means the same thing everywhere and a bad call fails with the same message. Each
// check returns the sizes the kernels need.

import type { AttentionOptions, Conv3dOptions, GemmEpilogue, RopeOptions, T5BiasOptions } from "./backend.ts";
import { DTYPE_BYTES, type DType, type Shape, numelOf } from "./tensor.ts";

/** What the checks need of a tensor; both device tensors and the reference's host tensors have it. */
export interface Shaped {
  readonly shape: Shape;
  readonly dtype: DType;
}

const fmt = (s: Shape) => `[${s.join(", ")}]`;

export function fail(op: string, message: string): never {
  throw new Error(`${op}: ${message}`);
}

export function expectDtype(op: string, name: string, t: Shaped, ...dtypes: DType[]): void {
  if (!dtypes.includes(t.dtype)) fail(op, `${name} must be ${dtypes.join("/")}, got ${t.dtype}`);
}

export function expectShape(op: string, name: string, t: Shaped, shape: Shape): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    fail(op, `${name} must be ${fmt(shape)}, got ${fmt(t.shape)}`);
  }
}

export const WEIGHT_DTYPES: DType[] = ["f32", "bf16", "f16"];
/** The dtypes of an activation an op may take or make in bf16 (backend.ts: "Activations"). */
export const ACTIVATION_DTYPES: DType[] = ["f32", "bf16"];

/** All tensors of one shape and one activation dtype (f32, or all bf16): axpby, rope3d, rmsNorm. */
export function sameShapeActivation(op: string, out: Shaped, ...inputs: Shaped[]): number {
  expectDtype(op, "out", out, ...ACTIVATION_DTYPES);
  for (const [i, t] of inputs.entries()) {
    if (t.dtype !== out.dtype) fail(op, `input ${i} must be ${out.dtype} like out, got ${t.dtype}`);
    expectShape(op, `input ${i}`, t, out.shape);
  }
  return numelOf(out.shape);
}

/** Row ops over an activation: x f32 and out f32 or bf16 (`out` may narrow: LayerNorm), or x and out
 *  of one activation dtype (`same`: RMSNorm). Returns rows × cols. */
export function activationRows(op: string, out: Shaped, x: Shaped, same: boolean): { rows: number; cols: number } {
  if (same) sameShapeActivation(op, out, x);
  else {
    expectDtype(op, "x", x, "f32");
    expectDtype(op, "out", out, ...ACTIVATION_DTYPES);
    expectShape(op, "x", x, out.shape);
  }
  if (x.shape.length === 0) fail(op, "x must have at least one dim");
  const cols = x.shape[x.shape.length - 1]!;
  return { rows: cols === 0 ? 0 : numelOf(x.shape) / cols, cols };
}

/** Elementwise ops: all tensors f32 with one shape. */
export function sameShapeF32(op: string, out: Shaped, ...inputs: Shaped[]): number {
  expectDtype(op, "out", out, "f32");
  for (const [i, t] of inputs.entries()) {
    expectDtype(op, `input ${i}`, t, "f32");
    expectShape(op, `input ${i}`, t, out.shape);
  }
  return numelOf(out.shape);
}

/** Ops over the last dim: returns rows × cols. */
export function rowsOf(op: string, out: Shaped, x: Shaped): { rows: number; cols: number } {
  sameShapeF32(op, out, x);
  if (x.shape.length === 0) fail(op, "x must have at least one dim");
  const cols = x.shape[x.shape.length - 1]!;
  return { rows: cols === 0 ? 0 : numelOf(x.shape) / cols, cols };
}

export function optionalVector(op: string, name: string, t: Shaped | null | undefined, n: number): void {
  if (!t) return;
  expectDtype(op, name, t, "f32");
  expectShape(op, name, t, [n]);
}

/** M, N, K of a gemm, and with a split epilogue the width of each part (`split`, else 0). */
export function gemmDims(out: Shaped, a: Shaped, w: Shaped, bias?: Shaped | null, epilogue?: GemmEpilogueParams | null) {
  const op = "gemm";
  expectDtype(op, "a", a, ...ACTIVATION_DTYPES);
  expectDtype(op, "out", out, ...ACTIVATION_DTYPES);
  expectDtype(op, "w", w, ...WEIGHT_DTYPES);
  if (epilogue?.kind === "residual" && out.dtype !== "f32") fail(op, `out must be f32 with a residual epilogue (the residual stream), got ${out.dtype}`);
  if (w.shape.length !== 2) fail(op, `w must be [N, K], got ${fmt(w.shape)}`);
  const [N, K] = w.shape as [number, number];
  if (a.shape.length < 1 || a.shape[a.shape.length - 1] !== K) fail(op, `a ${fmt(a.shape)} does not end in K=${K}`);
  let split = 0;
  if (epilogue?.kind === "split") {
    const parts = epilogue.parts;
    if (!Number.isInteger(parts) || parts < 1 || N % parts !== 0) fail(op, `split into ${parts} parts: must be an integer ≥ 1 dividing N=${N}`);
    split = N / parts;
    expectShape(op, "out", out, [parts, ...a.shape.slice(0, -1), split]);
  } else {
    expectShape(op, "out", out, [...a.shape.slice(0, -1), N]);
  }
  optionalVector(op, "bias", bias, N);
  return { M: K === 0 ? numelOf(a.shape.slice(0, -1)) : numelOf(a.shape) / K, N, K, split };
}

/** The options of the ops, with tensors loosened to `Shaped` so the reference's host tensors fit too. */
export type GemmEpilogueParams = Exclude<GemmEpilogue, { kind: "residual" }> | { kind: "residual"; residual: Shaped; gate?: Shaped | null };
export type AttentionParams = Omit<AttentionOptions, "bias"> & { bias?: Shaped };
export type RopeParams = Omit<RopeOptions, "cos" | "sin" | "frameOffsetAt"> & { cos: Shaped; sin: Shaped; frameOffsetAt?: Shaped };
export type Conv3dParams = Omit<Conv3dOptions, "prev" | "normSilu" | "residual"> & {
  prev?: Shaped;
  residual?: Shaped;
  normSilu?: { eps: number; scale: number; gamma?: Shaped | null };
};

export function attentionDims(out: Shaped, q: Shaped, k: Shaped, v: Shaped, opts: AttentionParams) {
  const op = "attention";
  for (const [n, t] of [["out", out], ["q", q], ["k", k], ["v", v]] as const) {
    expectDtype(op, n, t, ...ACTIVATION_DTYPES);
    if (t.shape.length !== 4) fail(op, `${n} must be [B, L, H, D], got ${fmt(t.shape)}`);
  }
  if (k.dtype !== q.dtype || v.dtype !== q.dtype) fail(op, `q, k and v must share one dtype, got ${q.dtype}, ${k.dtype}, ${v.dtype}`);
  const [B, Lq, H, D] = q.shape as [number, number, number, number];
  const Lk = k.shape[1]!;
  expectShape(op, "k", k, [B, Lk, H, D]);
  expectShape(op, "v", v, [B, Lk, H, D]);
  expectShape(op, "out", out, [B, Lq, H, D]);
  if (D > 512) fail(op, `head dim ${D} > 512`);
  const kvLen = opts.kvLen ?? Lk;
  if (!Number.isInteger(kvLen) || kvLen < 0 || kvLen > Lk) fail(op, `kvLen ${kvLen} outside [0, ${Lk}]`);
  const bc = opts.blockCausal;
  if (bc && (!(bc.blockSize >= 1) || !Number.isInteger(bc.blockSize) || !Number.isInteger(bc.qOffset) || bc.qOffset < 0)) {
    fail(op, `blockCausal needs an integer blockSize ≥ 1 and qOffset ≥ 0`);
  }
  if (opts.bias) {
    expectDtype(op, "bias", opts.bias, "f32");
    expectShape(op, "bias", opts.bias, [H, Lq, kvLen]);
  }
  return { B, Lq, Lk, kvLen, H, D };
}

/** Number of keys visible to query i (keys are a prefix [0, limit) under every mask we support). */
export function visibleKeys(i: number, kvLen: number, opts: AttentionParams): number {
  const bc = opts.blockCausal;
  if (!bc) return kvLen;
  const block = Math.floor((bc.qOffset + i) / bc.blockSize);
  return Math.min(kvLen, (block + 1) * bc.blockSize);
}

/** A gemm epilogue as the kernels take it: gelu, and the gate's grouping (rows of L tokens, G groups;
 *  1 and 1 when there is no gate). */
export function gemmEpilogueDims(out: Shaped, e?: GemmEpilogueParams | null): { gelu: boolean; L: number; G: number } {
  const none = { gelu: false, L: 1, G: 1 };
  if (!e) return none;
  if (e.kind === "gelu") return { ...none, gelu: true };
  if (e.kind === "split") return none;
  if (e.kind !== "residual") fail("gemm", `unknown epilogue ${(e as { kind: unknown }).kind}`);
  if (!e.gate) {
    expectDtype("gemm", "residual", e.residual, "f32");
    expectShape("gemm", "residual", e.residual, out.shape);
    return none;
  }
  const { L, G } = groupedDims("gemm", out, e.residual, [e.gate], ["f32"]);
  return { gelu: false, L, G };
}

/** For `layerNormModulate` and a gemm's gated residual: x [B, L, C] f32, per-group table [B, G, C], out
 *  of one of `outDtypes` (layerNormModulate may store bf16: backend.ts). */
export function groupedDims(op: string, out: Shaped, x: Shaped, tables: Shaped[], outDtypes: DType[] = ACTIVATION_DTYPES) {
  expectDtype(op, "x", x, "f32");
  expectDtype(op, "out", out, ...outDtypes);
  expectShape(op, "x", x, out.shape);
  if (x.shape.length !== 3) fail(op, `x must be [B, L, C], got ${fmt(x.shape)}`);
  const [B, L, C] = x.shape as [number, number, number];
  const G = tables[0]!.shape[1]!;
  for (const t of tables) {
    expectDtype(op, "table", t, "f32");
    expectShape(op, "scale/shift/gate", t, [B, G, C]);
  }
  if (G < 1 || L % G !== 0) fail(op, `group count ${G} does not divide L=${L}`);
  return { B, L, C, G, per: L / G };
}

export function ropeDims(out: Shaped, x: Shaped, o: RopeParams, op = "rope3d") {
  sameShapeActivation(op, out, x);
  if (x.shape.length !== 4) fail(op, `x must be [B, L, H, D], got ${fmt(x.shape)}`);
  const [B, L, H, D] = x.shape as [number, number, number, number];
  if (D % 2) fail(op, `head dim ${D} is odd`);
  expectDtype(op, "cos", o.cos, "f32");
  if (o.cos.shape.length !== 2) fail(op, `cos must be [P, pairs], got ${fmt(o.cos.shape)}`);
  expectShape(op, "sin", o.sin, o.cos.shape);
  const [P, pairs] = o.cos.shape as [number, number];
  const [pt, ph, pw] = o.axisPairs;
  if (pt + ph + pw > Math.min(pairs, D / 2)) fail(op, `axisPairs ${o.axisPairs} exceed ${Math.min(pairs, D / 2)} pairs`);
  const [F, GH, GW] = o.grid;
  const f0 = o.frameOffset ?? 0;
  if (F * GH * GW > L) fail(op, `grid ${o.grid} has more tokens than L=${L}`);
  if (F > 0 && (f0 + F > P || GH > P || GW > P)) fail(op, `positions exceed the ${P}-row tables`);
  if (o.frameOffsetAt) {
    expectDtype(op, "frameOffsetAt", o.frameOffsetAt, "f32");
    if (numelOf(o.frameOffsetAt.shape) !== 1) fail(op, `frameOffsetAt must hold one value, got ${fmt(o.frameOffsetAt.shape)}`);
  }
  return { B, L, H, D, P, pairs, pt, ph, pw, F, GH, GW, f0 };
}

/** rmsNormRope: rope3d's checks, and a weight over each token's H·D values. */
export function rmsNormRopeDims(out: Shaped, x: Shaped, weight: Shaped | null | undefined, o: RopeParams) {
  const d = ropeDims(out, x, o, "rmsNormRope");
  optionalVector("rmsNormRope", "weight", weight, d.H * d.D);
  return d;
}

export function t5Dims(out: Shaped, table: Shaped, o: T5BiasOptions) {
  const op = "t5RelativeBias";
  expectDtype(op, "out", out, "f32");
  expectDtype(op, "table", table, "f32");
  if (out.shape.length !== 3) fail(op, `out must be [H, Lq, Lk], got ${fmt(out.shape)}`);
  const [H, Lq, Lk] = out.shape as [number, number, number];
  expectShape(op, "table", table, [o.numBuckets, H]);
  return { H, Lq, Lk };
}

/** T5's bucket for relative position rel = key − query, in float32 like the PyTorch original (the
 *  log-spaced buckets truncate a float32 value, so float64 would move some boundaries). */
export function t5Bucket(rel: number, o: T5BiasOptions): number {
  let buckets = o.numBuckets;
  let ret = 0;
  let n: number;
  if (o.bidirectional) {
    buckets = Math.floor(buckets / 2);
    if (rel > 0) ret += buckets;
    n = Math.abs(rel);
  } else {
    n = Math.max(-rel, 0);
  }
  const maxExact = Math.floor(buckets / 2);
  if (n < maxExact) return ret + n;
  const f = Math.fround;
  const ratio = f(f(Math.log(f(n / maxExact))) / f(Math.log(o.maxDistance / maxExact)));
  const large = maxExact + Math.trunc(f(ratio * (buckets - maxExact)));
  return ret + Math.min(large, buckets - 1);
}

/** Buckets for every relative position −(Lq−1) … Lk−1, index rel + Lq − 1. */
export function t5BucketTable(Lq: number, Lk: number, o: T5BiasOptions): Int32Array {
  const table = new Int32Array(Math.max(Lq + Lk - 1, 0));
  for (let r = 0; r < table.length; r++) table[r] = t5Bucket(r - (Lq - 1), o);
  return table;
}

/** H and W: the input as the conv reads it (twice x's with `upsample`). */
export interface ConvGeometry {
  B: number; Cin: number; Cout: number;
  T: number; H: number; W: number;
  kt: number; kh: number; kw: number;
  st: number; sh: number; sw: number;
  timePad: number; top: number; left: number;
  To: number; Ho: number; Wo: number;
}

/** Output shape [B, Cout, T', H', W'] of conv3d (see Backend.conv3d); models size buffers with it. */
export function conv3dOutputShape(x: Shape, w: Shape, opts: Conv3dParams = {}): number[] {
  const [st, sh, sw] = opts.stride ?? [1, 1, 1];
  const [top, bottom, left, right] = opts.pad ?? [0, 0, 0, 0];
  const kt = w[2]!, kh = w[3]!, kw = w[4]!;
  const timePad = opts.timePad ?? kt - 1;
  const up = opts.upsample ? 2 : 1;
  const span = (n: number, k: number, s: number) => (n < k ? 0 : Math.floor((n - k) / s) + 1);
  return [x[0]!, w[0]!, span(timePad + x[2]!, kt, st), span(up * x[3]! + top + bottom, kh, sh), span(up * x[4]! + left + right, kw, sw)];
}

export function conv3dGeometry(out: Shaped, x: Shaped, w: Shaped, bias: Shaped | null | undefined, opts: Conv3dParams = {}): ConvGeometry {
  const op = "conv3d";
  expectDtype(op, "x", x, "f32");
  expectDtype(op, "out", out, "f32");
  expectDtype(op, "w", w, ...WEIGHT_DTYPES);
  if (x.shape.length !== 5) fail(op, `x must be [B, C, T, H, W], got ${fmt(x.shape)}`);
  if (w.shape.length !== 5) fail(op, `w must be [Cout, Cin, kt, kh, kw], got ${fmt(w.shape)}`);
  const [B, Cin, T, H, W] = x.shape as number[] as [number, number, number, number, number];
  const [Cout, wCin, kt, kh, kw] = w.shape as number[] as [number, number, number, number, number];
  if (wCin !== Cin) fail(op, `w has ${wCin} input channels, x has ${Cin}`);
  const [st, sh, sw] = opts.stride ?? [1, 1, 1];
  const [top, , left] = opts.pad ?? [0, 0, 0, 0];
  if (![st, sh, sw].every((s) => Number.isInteger(s) && s >= 1)) fail(op, `bad stride ${opts.stride}`);
  if (!(opts.pad ?? [0, 0, 0, 0]).every((p) => Number.isInteger(p) && p >= 0)) fail(op, `bad pad ${opts.pad}`);
  const timePad = opts.timePad ?? kt - 1;
  if (!Number.isInteger(timePad) || timePad < 0) fail(op, `bad timePad ${timePad}`);
  if (opts.upsample !== undefined && typeof opts.upsample !== "boolean") fail(op, `upsample must be true or false, got ${opts.upsample}`);
  if (opts.upsample && opts.prev) fail(op, "upsample with a cache (prev) is not supported");
  if (opts.upsample && opts.normSilu) fail(op, "upsample with normSilu is not supported");
  if (opts.prev) {
    expectDtype(op, "prev", opts.prev, "f32");
    expectShape(op, "prev", opts.prev, [B, Cin, timePad, H, W]);
  }
  if (opts.normSilu) {
    const { eps, scale, gamma } = opts.normSilu;
    if (!(eps > 0) || !Number.isFinite(eps)) fail(op, `normSilu.eps must be a positive number, got ${eps}`);
    if (!Number.isFinite(scale)) fail(op, `normSilu.scale must be finite, got ${scale}`);
    optionalVector(op, "normSilu.gamma", gamma, Cin);
  }
  const oshape = conv3dOutputShape(x.shape, w.shape, opts);
  expectShape(op, "out", out, oshape);
  if (opts.residual) {
    if (opts.residual === out) fail(op, "residual must not be out itself");
    expectDtype(op, "residual", opts.residual, "f32");
    expectShape(op, "residual", opts.residual, oshape);
  }
  optionalVector(op, "bias", bias, Cout);
  const [, , To, Ho, Wo] = oshape as [number, number, number, number, number];
  const up = opts.upsample ? 2 : 1;
  return { B, Cin, Cout, T, H: up * H, W: up * W, kt, kh, kw, st, sh, sw, timePad, top, left, To, Ho, Wo };
}

/** For concat / slice / writeSlice: the tensor seen as [outer, dim, inner]. */
export function splitAt(shape: Shape, dim: number) {
  return { outer: numelOf(shape.slice(0, dim)), inner: numelOf(shape.slice(dim + 1)) };
}

export function normDim(op: string, dim: number, rank: number): number {
  const d = dim < 0 ? dim + rank : dim;
  if (!Number.isInteger(d) || d < 0 || d >= rank) fail(op, `dim ${dim} out of range for rank ${rank}`);
  return d;
}

/** Checks a slice-like pair: `big` and `small` agree on every dim but `dim`, where small fits at start. */
export function sliceDims(op: string, big: Shaped, small: Shaped, dim: number, start: number) {
  const d = normDim(op, dim, big.shape.length);
  if (big.dtype !== small.dtype) fail(op, `dtypes differ: ${big.dtype} vs ${small.dtype}`);
  if (small.shape.length !== big.shape.length || small.shape.some((s, i) => i !== d && s !== big.shape[i])) {
    fail(op, `shapes ${fmt(big.shape)} and ${fmt(small.shape)} differ outside dim ${d}`);
  }
  if (!Number.isInteger(start) || start < 0 || start + small.shape[d]! > big.shape[d]!) {
    fail(op, `range ${start}..${start + small.shape[d]!} outside dim ${d} of size ${big.shape[d]}`);
  }
  return { d, ...splitAt(big.shape, d), bigLen: big.shape[d]!, smallLen: small.shape[d]! };
}

/** One strided copy of a copyWithin, in bytes from the tensor's start: `rows` rows of `rowBytes`,
 *  row r from src + r·pitch to dst + r·pitch (a kernel's copy_rows). Its source and destination are
 *  disjoint. */
export interface RowCopy {
  dst: number;
  src: number;
  pitch: number;
  rows: number;
  rowBytes: number;
}

/**
 * copyWithin as strided copies that each read and write disjoint memory, in the order to run them: so
 * each can be the backends' plain row copy (a kernel whose threads read and write overlapping memory
 * would race), and no buffer is needed. A piece is at most the distance between the ranges long, and
 * the pieces run from the end the data moves towards: moving down (to < from), front to back, so every
 * element is read by its piece before a later piece writes over it; moving up, back to front. A KV
 * cache that evicts a chunk moves its kept frames down by one chunk: ⌈kept / chunk⌉ copies (6 for a
 * 21-frame window of 3-frame chunks), each over every layer's K and V, half the traffic of a copy out
 * to a buffer and back.
 */
export function copyWithinCopies(t: Shaped, dim: number, to: number, from: number, len: number): RowCopy[] {
  const op = "copyWithin";
  const d = normDim(op, dim, t.shape.length), size = t.shape[d]!;
  for (const [name, v] of [["to", to], ["from", from], ["len", len]] as const) {
    if (!Number.isInteger(v) || v < 0) fail(op, `${name} must be a whole number ≥ 0, got ${v}`);
  }
  if (from + len > size || to + len > size) fail(op, `ranges ${from}..${from + len} → ${to}..${to + len} outside dim ${d} of size ${size}`);
  const { outer, inner } = splitAt(t.shape, d), e = DTYPE_BYTES[t.dtype], dist = Math.abs(to - from);
  const copies: RowCopy[] = [];
  if (len === 0 || dist === 0 || outer === 0 || inner === 0) return copies;
  for (let s = 0; s < len; s += dist) {
    copies.push({ dst: (to + s) * inner * e, src: (from + s) * inner * e, pitch: size * inner * e, rows: outer, rowBytes: Math.min(dist, len - s) * inner * e });
  }
  return to > from ? copies.reverse() : copies;
}

export function permuteCheck(out: Shaped, x: Shaped, perm: readonly number[]): void {
  const op = "permute";
  const r = x.shape.length;
  if (perm.length !== r || [...perm].sort((a, b) => a - b).some((p, i) => p !== i)) fail(op, `bad perm [${perm}]`);
  if (out.dtype !== x.dtype) fail(op, `dtypes differ: ${out.dtype} vs ${x.dtype}`);
  expectShape(op, "out", out, perm.map((p) => x.shape[p]!));
}

/** Integer per-dim factors of a nearest upsample. */
export function upsampleFactors(out: Shaped, x: Shaped): number[] {
  const op = "upsampleNearest";
  expectDtype(op, "out", out, "f32");
  expectDtype(op, "x", x, "f32");
  if (out.shape.length !== x.shape.length) fail(op, `ranks differ`);
  return x.shape.map((d, i) => {
    const o = out.shape[i]!;
    if (d === 0 ? o !== 0 : o % d !== 0) fail(op, `out dim ${i} (${o}) is not a multiple of ${d}`);
    return d === 0 ? 1 : o / d;
  });
}

/** Resampling keeps every dim but the last two; an antialiased shrink is limited to 16× per axis (the
 *  kernels' 64-tap bound for the widened cubic; the "torch" filter always has 4 taps). `torch` is the
 *  kernels' filter flag. */
export function resizeDims(out: Shaped, x: Shaped, filter: "antialiased" | "torch" = "antialiased") {
  const op = "resize";
  if (filter !== "antialiased" && filter !== "torch") fail(op, `unknown filter '${filter}' (antialiased or torch)`);
  expectDtype(op, "out", out, "f32");
  expectDtype(op, "x", x, "f32");
  const r = x.shape.length;
  if (r < 2 || out.shape.length !== r) fail(op, `out and x must have the same rank ≥ 2, got [${out.shape}] and [${x.shape}]`);
  if (x.shape.slice(0, -2).some((d, i) => d !== out.shape[i])) fail(op, `leading dims differ: [${out.shape}] vs [${x.shape}]`);
  const [H, W, Ho, Wo] = [x.shape[r - 2]!, x.shape[r - 1]!, out.shape[r - 2]!, out.shape[r - 1]!];
  if ([H, W, Ho, Wo].some((d) => d < 1)) fail(op, `every side must be ≥ 1, got ${W}x${H} → ${Wo}x${Ho}`);
  if (filter === "antialiased" && (H > 16 * Ho || W > 16 * Wo)) fail(op, `${W}x${H} → ${Wo}x${Ho} shrinks by more than 16× (antialiased)`);
  return { planes: x.shape.slice(0, -2).reduce((a, b) => a * b, 1), H, W, Ho, Wo, torch: filter === "torch" ? 1 : 0 };
}

/** For the YUV ops: rgb [3, T, H, W] f32, yuv [T, H·W·3/2] u8. */
export function yuvDims(op: string, rgb: Shaped, yuv: Shaped) {
  expectDtype(op, "rgb", rgb, "f32");
  expectDtype(op, "yuv", yuv, "u8");
  if (rgb.shape.length !== 4 || rgb.shape[0] !== 3) fail(op, `rgb must be [3, T, H, W], got ${fmt(rgb.shape)}`);
  const [, T, H, W] = rgb.shape as [number, number, number, number];
  if (H % 2 || W % 2) fail(op, `frame ${W}x${H} must have even sides`);
  expectShape(op, "yuv", yuv, [T, (H * W * 3) / 2]);
  return { T, H, W };
}
