// Helpers of the op sweep: the case type, a seeded generator, and running one op on a backend.
import type { Backend } from "../../src/runtime/backend.ts";
import { roundThroughHalf } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType, Tensor } from "../../src/runtime/tensor.ts";
import { type Guarded, allocGuarded, changedGuards, freeGuarded } from "./op-guards.ts";
import type { Expected } from "./op-precision.ts";

/** One op on one shape. On an exact kernel it passes when every element has
 *  |got − ref| ≤ atol + rtol · max|ref|; on a kernel that rounds its inputs for the tensor cores
 *  (CUDA GEMM and attention) it is held to `tensorCores` instead (op-precision.ts). */
export interface OpCase {
  op: string;
  name: string;
  atol: number;
  rtol: number;
  ref: () => Float32Array;
  /** The exact kernels' promise where it is more than atol/rtol around `ref`: a bf16 output's one
   *  more rounding (op-precision.ts bf16Output). */
  expected?: () => Expected;
  tensorCores?: () => Expected;
  /** An attention case's head size: the wgmma kernel takes D 64 and 128 only (attention.cu refuses
   *  the rest where that path is forced). */
  headDim?: number;
  run: (be: Backend) => Promise<Float32Array>;
}

/** Deterministic uniform numbers in [lo, hi) (mulberry32). */
export function rng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (n: number, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => lo + (hi - lo) * next());
}

export const host = (shape: number[], data: Float32Array | Uint8Array) => new R.Host(shape, data);

type Upload = (h: R.Host, dtype?: DType) => Tensor;
type Alloc = (shape: number[], dtype?: DType) => Tensor;

/**
 * Uploads inputs, runs one op, downloads `out`, frees everything. `up` uploads an input; `alloc`
 * makes an output and `inOut` uploads a tensor the op overwrites (in place): those two lie between
 * guards (op-guards.ts), and an op that changed a guard fails here, naming the bytes.
 */
export async function runOp(be: Backend, f: (up: Upload, alloc: Alloc, inOut: Upload) => Tensor): Promise<Float32Array> {
  const live: Tensor[] = [];
  const guarded: Guarded[] = [];
  const up: Upload = (h, dtype) => (live.push(be.upload(h.data, h.shape, dtype)), live[live.length - 1]!);
  const alloc: Alloc = (shape, dtype) => {
    const g = allocGuarded(be, shape, dtype);
    guarded.push(g);
    return g.tensor;
  };
  const inOut: Upload = (h, dtype) => {
    const t = alloc(h.shape, dtype ?? h.dtype);
    be.write(t, h.data);
    return t;
  };
  try {
    const out = f(up, alloc, inOut);
    const got = await be.download(out);
    const changed: string[] = [];
    for (const g of guarded) changed.push(...(await changedGuards(be, g)));
    if (changed.length) throw new Error(`the op wrote outside its output: ${changed.join("; ")}`);
    return got;
  } finally {
    be.free(...live);
    for (const g of guarded) freeGuarded(be, g);
  }
}

/** The values a weight tensor of `dtype` holds (the reference must see the rounded weights). */
export const asStored = (h: R.Host, dtype: DType) => (dtype === "f32" ? h : host(h.shape, roundThroughHalf(h.f32, dtype as "bf16" | "f16")));

/** Wan's rope_params: per-axis tables cos/sin(pos · θ^(−2j/dim)), concatenated column-wise. */
export function wanRopeTables(P: number, axisDims: number[]): { cos: R.Host; sin: R.Host } {
  const pairs = axisDims.reduce((a, d) => a + d / 2, 0);
  const cos = new Float32Array(P * pairs), sin = new Float32Array(P * pairs);
  for (let p = 0; p < P; p++) {
    let c = 0;
    for (const dim of axisDims)
      for (let j = 0; j < dim / 2; j++, c++) {
        const angle = p * 10000 ** (-(2 * j) / dim);
        cos[p * pairs + c] = Math.cos(angle);
        sin[p * pairs + c] = Math.sin(angle);
      }
  }
  return { cos: host([P, pairs], cos), sin: host([P, pairs], sin) };
}
