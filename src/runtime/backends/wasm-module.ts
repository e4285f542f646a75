// Loading the CPU kernels for the WebAssembly backend (wasm.ts): kernels/cpu compiled to wasm32 +
// SIMD128 (tools/build/cpu.ts, embedded in the executable), instantiated over one linear memory —
// shared between a pool of threads (wasm-pool.ts) where SharedArrayBuffer exists, else the
// single-threaded build over unshared memory — with the heap, the kernels' scratch blocks and the
// threads' stacks laid out in it.
import wasmPath from "../../../build/kino-cpu.wasm" with { type: "file" };
import wasmSingleThreadPath from "../../../build/kino-cpu-st.wasm" with { type: "file" };
import type { DType } from "../tensor.ts";
import { WasmHeap } from "./wasm-heap.ts";
import { WasmPool, slicesFor } from "./wasm-pool.ts";

/** The kernels the pool runs (the module's exports of kernels/cpu). */
const KERNELS = [
  "kino_gemm", "kino_attention", "kino_layer_norm", "kino_layer_norm_modulate", "kino_rms_norm", "kino_rms_norm_rope",
  "kino_softmax", "kino_l2norm_channels", "kino_gelu", "kino_gelu_exact", "kino_silu", "kino_mul", "kino_axpby", "kino_fill", "kino_rope3d",
  "kino_embedding", "kino_t5_bias", "kino_conv3d", "kino_conv3d_pad", "kino_conv3d_direct", "kino_pack_w",
  "kino_gemm_packed", "kino_copy_rows", "kino_permute", "kino_upsample_nearest", "kino_resize", "kino_cast", "kino_rgb_to_yuv420",
  "kino_yuv420_to_rgb",
];
/** Dtype codes of the kernels' ABI. */
export const DT_CODE: Record<DType, number> = { f32: 0, bf16: 1, f16: 2, u8: 3 };
const MAX_PAGES = 65536; // wasm32: 4 GiB
const WORKER_STACK = 1 << 20;

function sharedMemoryAvailable(): boolean {
  try {
    return typeof SharedArrayBuffer !== "undefined" && new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }) !== null;
  } catch {
    return false;
  }
}

export interface WasmModule {
  memory: WebAssembly.Memory;
  heap: WasmHeap;
  pool: WasmPool;
  /** "WebAssembly SIMD128, 2 threads" and the like. */
  description: string;
}

/** `threads`: the pool size wanted (default min(2, hardware threads)); `shared` false: the
 *  single-threaded build even where shared memory exists. */
export async function loadWasmModule(threads: number | undefined, shared: boolean): Promise<WasmModule> {
  shared &&= sharedMemoryAvailable();
  const want = Math.max(1, Math.floor(threads ?? Math.min(2, navigator.hardwareConcurrency || 1)));
  const module = await WebAssembly.compile(await Bun.file(shared ? wasmPath : wasmSingleThreadPath).arrayBuffer());
  const memory = new WebAssembly.Memory({ initial: 256, maximum: MAX_PAGES, shared });
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const exports = instance.exports as Record<string, any>;
  const heap = new WasmHeap(memory, exports.__heap_base.value as number, MAX_PAGES * 65536);
  const n = shared ? want : 1;
  const scratchBytes = exports.kino_scratch_bytes() as number;
  exports.kino_set_scratch(heap.alloc(scratchBytes * slicesFor(n))); // one block per slice of an op
  const stacks = Array.from({ length: n - 1 }, () => heap.alloc(WORKER_STACK) + WORKER_STACK);
  const pool = await WasmPool.start(module, memory, exports, KERNELS, stacks);
  const why = shared ? "" : " (no shared memory: single-threaded)";
  return { memory, heap, pool, description: `WebAssembly SIMD128, ${n} thread${n > 1 ? "s" : ""}${why}` };
}
