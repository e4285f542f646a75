// Helpers of the op sweep: the case type, a seeded generator, and running one op on a backend.
import type { Backend } from "../../src/runtime/backend.ts";
import { roundThroughHalf } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType, Tensor } from "../../src/runtime/tensor.ts";

/** One op on one shape. Passes when every element has |got − ref| ≤ atol + rtol · max|ref|. */
export interface OpCase {
  op: string;
  name: string;
  atol: number;
  rtol: number;
  ref: () => Float32Array;
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

/** Uploads inputs, runs one op, downloads `out`, frees everything. */
export async function runOp(be: Backend, f: (up: (h: R.Host, dtype?: DType) => Tensor, alloc: (shape: number[], dtype?: DType) => Tensor) => Tensor): Promise<Float32Array> {
  const live: Tensor[] = [];
  const up = (h: R.Host, dtype?: DType) => (live.push(be.upload(h.data, h.shape, dtype)), live[live.length - 1]!);
  const alloc = (shape: number[], dtype?: DType) => (live.push(be.alloc(shape, dtype)), live[live.length - 1]!);
  try {
    const out = f(up, alloc);
    return await be.download(out);
  } finally {
    be.free(...live);
  }
}

/** The values a weight tensor of `dtype` holds (the reference must see the rounded weights). */
export const asStored = (h: R.Host, dtype: DType) => (dtype === "f32" ? h : host(h.shape, roundThroughHalf(h.f32, dtype as "bf16" | "f16")));

