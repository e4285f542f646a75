// The comparison of the op sweep, and the references and tolerances of the kernels that round their
// inputs (the promise of every op and kernel is listed in ops.test.ts's header). A CUDA tensor-core
// kernel rounds f32 operands to 16 bits before it multiplies (kernels/cuda/gemm.cu, attention.cu,
// conv_mma.cu), so
// it is compared with the reference run on operands rounded the same way, and held to a bound for
// what is left: f32 accumulation, and for attention the bf16 rounding of the softmax weights P, which
// a reference cannot replay (the kernel rounds P relative to a running maximum that depends on its
// key tiles), so it is bounded instead.
import { type HalfKind, roundThroughHalf } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";

/** Passes when every element has |got − want| ≤ atol + rtol · max|want| + slack[i] (slack 0 when absent). */
export interface Expected {
  want: Float32Array;
  atol: number;
  rtol: number;
  slack?: Float32Array;
}

/** Unit roundoff of bf16: 8 significant bits, round-to-nearest-even. */
export const BF16_UNIT_ROUNDOFF = 2 ** -8;

/** A sum of K products in f32 carries an error of order sqrt(K)·ε relative to the output scale. */
export const reductionTol = (K: number) => ({ atol: 1e-6, rtol: 1e-6 * Math.sqrt(Math.max(K, 1)) });

/** The values a kernel holds after rounding `h` to bf16/f16 (round-to-nearest-even). */
export const roundedTo = (h: R.Host, kind: HalfKind) => new R.Host(h.shape, roundThroughHalf(h.f32, kind));

/** GEMM on wgmma / mma.sync: the activations rounded to the weight's type, products exact, f32
 *  accumulation — the same bound as the exact kernels, against the rounded activations. */
export function tensorCoreGemm(a: R.Host, storedW: R.Host, kind: HalfKind, bias: R.Host | null): Expected {
  return { want: R.gemm(roundedTo(a, kind), storedW, bias).f32, ...reductionTol(a.shape[a.shape.length - 1]!) };
}

type HostConvOptions = R.HostConv3dOptions;

/** Conv3d on the tensor cores (kernels/cuda/conv.cuh): x (and the cached frames `prev`) rounded to
 *  bf16, the weights too (exact when stored as bf16), products exact, f32 accumulation — the exact
 *  kernels' bound, against the reference on the rounded operands. */
export function tensorCoreConv(x: R.Host, storedW: R.Host, bias: R.Host | null, opts: HostConvOptions = {}): Expected {
  if (opts.normSilu) {  // the rounding applies to what the conv reads: silu(n(x)), made in f32
    const { normSilu, ...plain } = opts;
    return tensorCoreConv(R.convNormSilu(x, normSilu), storedW, bias, { ...plain, prev: opts.prev && R.convNormSilu(opts.prev, normSilu) });
  }
  if (opts.upsample) {  // the rounding applies to each value the conv reads: x's, repeated
    const { upsample, ...plain } = opts;
    const [B, C, T, H, W] = x.shape as [number, number, number, number, number];
    return tensorCoreConv(R.upsampleNearest(x, [B, C, T, 2 * H, 2 * W]), storedW, bias, plain);
  }
  if (opts.residual) {  // added in f32 after the sum, exactly as given
    const { residual, ...plain } = opts;
    const e = tensorCoreConv(x, storedW, bias, plain);
    return { ...e, want: e.want.map((v, i) => v + residual.f32[i]!) };
  }
  const prev = opts.prev && roundedTo(opts.prev, "bf16");
  const K = storedW.shape.slice(1).reduce((a, b) => a * b, 1);
  return { want: R.conv3d(roundedTo(x, "bf16"), roundedTo(storedW, "bf16"), bias, { ...opts, prev }).f32, ...reductionTol(K) };
}

/** Conv2d on the tensor cores (conv3d with one frame): the same promise. */
export function tensorCoreConv2d(x: R.Host, storedW: R.Host, bias: R.Host | null, opts: Parameters<typeof R.conv2d>[3] = {}): Expected {
  const K = storedW.shape.slice(1).reduce((a, b) => a * b, 1);
  return { want: R.conv2d(roundedTo(x, "bf16"), roundedTo(storedW, "bf16"), bias, opts).f32, ...reductionTol(K) };
}

const maxAbs = (xs: Float32Array) => xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

/** A GEMM with an epilogue (backend.ts GemmEpilogue): the GEMM's bound on y (reductionTol against
 *  max|y|) carried through the epilogue's slope (GELU's ≤ 1.13, a gate's max|gate|), plus 2e-6 of
 *  max|out| for the epilogue's own f32 arithmetic: GELU's exp, the residual's roundings (the CPU
 *  kernels add one per K block, kernels/cpu/gemm_epilogue.h). */
export function epilogueTol(y: Float32Array, K: number, e: R.HostEpilogue): { atol: number; rtol: number } {
  const slope = e.kind === "gelu" ? 1.13 : e.kind === "residual" && e.gate ? maxAbs(e.gate.f32) : 1;
  const { atol, rtol } = reductionTol(K);
  return { atol: atol + slope * rtol * maxAbs(y), rtol: 2e-6 };
}

/** The same on wgmma / mma.sync: against the reference on the rounded activations. */
export function tensorCoreGemmEpilogue(a: R.Host, storedW: R.Host, kind: HalfKind, bias: R.Host | null, e: R.HostEpilogue): Expected {
  const a16 = roundedTo(a, kind), K = a.shape[a.shape.length - 1]!;
  return { want: R.gemm(a16, storedW, bias, e).f32, ...epilogueTol(R.gemm(a16, storedW, bias).f32, K, e) };
}

type HostAttentionOptions = Parameters<typeof R.attention>[3];

/** Attention on mma.sync: q, k and v rounded to bf16; P = exp(s − running max) rounded to bf16 for
 *  P·V while the row sum l adds the unrounded P, so each output element may be off by up to
 *  u · Σ_j P_j·|v_j| / l = u · attention(q, k, |v|) (u the bf16 unit roundoff), plus f32 noise. */
export function tensorCoreAttention(q: R.Host, k: R.Host, v: R.Host, opts: HostAttentionOptions): Expected {
  const [q16, k16, v16] = [q, k, v].map((h) => roundedTo(h, "bf16")) as [R.Host, R.Host, R.Host];
  const absV = new R.Host(v16.shape, v16.f32.map(Math.abs));
  const weightOfV = R.attention(q16, k16, absV, opts).f32;
  return { want: R.attention(q16, k16, v16, opts).f32, atol: 1e-5, rtol: 0, slack: weightOfV.map((x) => BF16_UNIT_ROUNDOFF * x) };
}

/** The same promise for an op that stores its result bf16 (backend.ts: activations): the f32 result
 *  y, within `e` of `want`, rounded once more — |fl(y) − want| ≤ u·|want| + (1 + u)·(e's bound), u the
 *  bf16 unit roundoff. */
export function bf16Output(e: Expected): Expected {
  const u = BF16_UNIT_ROUNDOFF;
  const slack = e.want.map((w, i) => u * Math.abs(w) + (1 + u) * (e.slack?.[i] ?? 0));
  return { want: e.want, atol: (1 + u) * e.atol, rtol: (1 + u) * e.rtol, slack };
}

/** max abs error, max abs error / max|want|, and `used`: the largest share of an element's
 *  tolerance taken (ok ⇔ used ≤ 1; NaN anywhere fails). */
export function compare(got: Float32Array, e: Expected) {
  let maxAbs = 0, scale = 0, used = 0, ok = got.length === e.want.length;
  for (const v of e.want) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  const limit = e.atol + e.rtol * scale;
  for (let i = 0; i < e.want.length; i++) {
    const d = got[i] === e.want[i] ? 0 : Math.abs(got[i]! - e.want[i]!); // equal infinities are exact
    const allowed = limit + (e.slack?.[i] ?? 0);
    if (!(d <= allowed)) ok = false; // NaN fails too
    maxAbs = Math.max(maxAbs, Number.isNaN(d) ? Infinity : d);
    used = Math.max(used, d === 0 ? 0 : Number.isNaN(d) ? Infinity : d / allowed);
  }
  return { ok, maxAbs, maxRel: scale > 0 ? maxAbs / scale : maxAbs, used };
}
