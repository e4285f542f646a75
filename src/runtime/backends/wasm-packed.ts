// Packed copies of GEMM weights for the wasm backend (kernels/cpu/gemm_packed.c): the first time a
// matrix is the `w` of a multi-row GEMM, it is packed once into the micro-kernel's panel layout, and
// later GEMMs read the panels instead of transposing and widening the weight again on every call.
//
// A packed copy is only valid while its weight does not change, so the backend drops it whenever the
// weight's memory may be written (write, any op whose output lies in it) or freed. Panels are f32, so a
// bf16 weight's copy is twice its size: copies stop being made past a budget (weights beyond it keep
// the per-call packing) so that a large checkpoint cannot run wasm32 out of memory.
// (bf16 panels, widened in the micro-kernel, halve the bytes but measured 40 % slower warm in
// JavaScriptCore.)

import type { Tensor } from "../tensor.ts";
import type { WasmHeap } from "./wasm-heap.ts";

/** Panel width of the GEMM micro-kernel (NR in kernels/cpu/gemm.h). */
export const PANEL = 8;
/** Bytes of packed copies kept at most, by default. */
const BUDGET = 256 * 2 ** 20;

interface PackedCopy {
  ptr: number;
  bytes: number;
}

export class PackedWeights {
  readonly #copies = new Map<Tensor, PackedCopy>();
  #bytes = 0;

  constructor(private readonly heap: WasmHeap, private readonly budget: number = BUDGET) {}

  /**
   * The packed copy of `w` [N, K], made with `pack(ptr)` on first use; 0 (pack per call) for a
   * view of part of a tensor, or past the budget.
   */
  get(w: Tensor, N: number, K: number, pack: (ptr: number) => void): number {
    const owner = w.owner;
    if (w.ptr !== owner.ptr || w.numel !== owner.numel) return 0;
    const have = this.#copies.get(owner);
    if (have !== undefined) return have.ptr;
    const bytes = Math.ceil(N / PANEL) * PANEL * K * 4;
    if (this.#bytes + bytes > this.budget) return 0;
    const ptr = this.heap.alloc(bytes);
    pack(ptr);
    this.#copies.set(owner, { ptr, bytes });
    this.#bytes += bytes;
    return ptr;
  }

  /** Forget the copy of the weight that owns `t`'s memory (it is about to change or be freed). */
  drop(t: Tensor): void {
    if (this.#copies.size === 0) return;
    const owner = t.owner, copy = this.#copies.get(owner);
    if (copy === undefined) return;
    this.#copies.delete(owner);
    this.#bytes -= copy.bytes;
    this.heap.free(copy.ptr);
  }
}

