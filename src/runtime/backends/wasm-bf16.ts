// bf16 activations (backend.ts, "Activations") on the wasm backend. Its kernels compute on f32 values,
// so an op given a bf16 activation runs on f32 copies: each bf16 input is widened (exactly) into a
// temporary f32 block, the op runs, and each bf16 output is rounded back (round-to-nearest-even) —
// what the CUDA kernels compute in registers, one rounding at the store. The CPU never asks for bf16
// activations itself (WanDiT takes `activationDtype`, f32 here), so this serves the op sweep and the
// model tests that run the bf16 policy on the CPU; it is correct, not fast.
import type { DType } from "../tensor.ts";
import { Tensor } from "../tensor.ts";
import type { WasmHeap } from "./wasm-heap.ts";

export interface StagingHost {
  heap: WasmHeap;
  /** Makes a block of the heap usable as a tensor of the backend (and forgets it again). */
  adopt(t: Tensor): void;
  /** dst ← src converted, `n` elements (the kino_cast kernel). */
  convert(dst: number, dstDtype: DType, src: number, srcDtype: DType, n: number): void;
}

/** A tensor's identity for staging: views made twice of the same memory (heads(t) in the model) are
 *  one tensor, so an op in place stays in place on the copy. */
const keyOf = (t: Tensor) => `${t.ptr}:${t.numel}`;

/**
 * Runs `op` with every bf16 tensor among `inputs` and `outputs` replaced by an f32 copy (`f32(t)` maps
 * a tensor to what the op should see; f32 tensors map to themselves). Inputs are widened before, bf16
 * outputs rounded back after. Returns false, running nothing, when no tensor given is bf16.
 */
export function viaF32(host: StagingHost, inputs: readonly (Tensor | null | undefined)[], outputs: readonly Tensor[], op: (f32: (t: Tensor) => Tensor) => void): boolean {
  const all = [...inputs, ...outputs].filter((t): t is Tensor => !!t);
  if (!all.some((t) => t.dtype === "bf16")) return false;
  const copies = new Map<string, Tensor>();
  const copyOf = (t: Tensor) => {
    let c = copies.get(keyOf(t));
    if (!c) {
      c = new Tensor(t.device, t.shape, "f32", host.heap.alloc(t.numel * 4));
      host.adopt(c);
      copies.set(keyOf(t), c);
    }
    return c;
  };
  try {
    for (const t of inputs) if (t?.dtype === "bf16") host.convert(copyOf(t).ptr, "f32", t.ptr, "bf16", t.numel);
    for (const t of outputs) if (t.dtype === "bf16") copyOf(t);
    op((t) => (t.dtype === "bf16" ? copies.get(keyOf(t))! : t));
    for (const t of outputs) if (t.dtype === "bf16") host.convert(t.ptr, "bf16", copies.get(keyOf(t))!.ptr, "f32", t.numel);
  } finally {
    for (const c of copies.values()) {
      c.markFreed();
      host.heap.free(c.ptr);
    }
  }
  return true;
}
