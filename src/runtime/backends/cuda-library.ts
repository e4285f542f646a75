// Finding and binding build/libkino_cuda.so (kernels/cuda, built by tools/build/cuda.ts) for the
// CUDA backend (cuda.ts): the C ABI as bun:ffi symbol tables, and where the library file comes from.
//
// Where the library comes from, in order: $KINO_CUDA_LIB; a file embedded in the compiled executable
// (`bun build --compile … build/libkino_cuda.so` puts it in Bun.embeddedFiles, and it is copied to a
// private temp file because dlopen needs a real path); build/libkino_cuda.so of the checkout; a
// libkino_cuda.so beside the executable. It is resolved at run time, not imported, so a checkout built
// without nvcc still starts (and opening the backend then fails with "CUDA library unavailable:").
//
// The graph symbols (kernels/cuda/graph.cu, the pools of alloc.cu) and the readback symbols
// (readback.cu) are bound apart from the rest and only where the library has them, so a library built
// before them still opens, without graphs or overlapped readbacks.

import { dlopen, FFIType } from "bun:ffi";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const { ptr, i32, i64, u64, f32, f64, cstring } = FFIType;
/** Device addresses travel as plain integers (Tensor.ptr); `ptr` is for the context and host arrays. */
const dev = u64;

/** The library's C ABI (kernels/cuda/*.cu, every KC_API function). All but the memory and info
 *  calls return 0 or an error code whose message is kc_last_error(ctx). A null device pointer is 0. */
export const CUDA_SYMBOLS = {
  kc_create: { args: [i32, ptr, ptr, i32], returns: ptr },
  kc_destroy: { args: [ptr], returns: FFIType.void },
  kc_set_paths: { args: [ptr, i32, i32, i32], returns: i32 },
  kc_resize: { args: [ptr, dev, dev, i64, i32, i32, i32, i32, i32], returns: i32 },
  kc_last_kernel: { args: [ptr, i32], returns: cstring },
  kc_last_error: { args: [ptr], returns: cstring },
  kc_error_string: { args: [i32], returns: cstring },
  kc_error_name: { args: [i32], returns: cstring },
  kc_context_lost: { args: [ptr], returns: i32 },
  kc_error_loses_context: { args: [i32], returns: i32 },
  kc_device_info: { args: [ptr, ptr, i32, ptr], returns: i32 },
  kc_device_pci_bus_id: { args: [ptr, ptr, i32], returns: i32 },
  kc_memory_stats: { args: [ptr, ptr], returns: FFIType.void },
  kc_alloc: { args: [ptr, u64], returns: ptr },
  kc_free: { args: [ptr, dev], returns: i32 },
  kc_empty_cache: { args: [ptr], returns: i32 },
  kc_upload: { args: [ptr, dev, ptr, u64], returns: i32 },
  kc_download: { args: [ptr, ptr, dev, u64], returns: i32 },
  kc_copy: { args: [ptr, dev, dev, u64], returns: i32 },
  kc_memset: { args: [ptr, dev, i32, u64], returns: i32 },
  kc_synchronize: { args: [ptr], returns: i32 },
  kc_timer_start: { args: [ptr], returns: i32 },
  kc_timer_stop: { args: [ptr], returns: f64 },
  kc_convert: { args: [ptr, dev, i32, dev, i32, i64], returns: i32 },
  kc_gemm: { args: [ptr, dev, dev, i32, dev, i32, dev, i32, i32, i32, i32, dev, dev, i32, i32, i32, i32], returns: i32 },
  kc_attention: { args: [ptr, dev, dev, dev, dev, i32, dev, i32, i32, i32, i32, i32, i32, f32, i32, i32, i32], returns: i32 },
  kc_layer_norm: { args: [ptr, dev, dev, i64, i32, f32, dev, dev, dev, dev, i32, i32, i32], returns: i32 },
  kc_rms_norm: { args: [ptr, dev, dev, i64, i32, f32, dev, i32], returns: i32 },
  kc_rms_norm_rope: { args: [ptr, dev, dev, dev, f32, i32, i32, i32, i32, dev, dev, i32, i32, i32, i32, i32, i32, i32, i32, i32, dev, i32], returns: i32 },
  kc_softmax: { args: [ptr, dev, dev, i64, i32], returns: i32 },
  kc_l2_norm_channels: { args: [ptr, dev, dev, i32, i32, i64, f32, f32, dev], returns: i32 },
  kc_gelu: { args: [ptr, dev, dev, i64], returns: i32 },
  kc_gelu_exact: { args: [ptr, dev, dev, i64], returns: i32 },
  kc_silu: { args: [ptr, dev, dev, i64], returns: i32 },
  kc_mul: { args: [ptr, dev, dev, dev, i64], returns: i32 },
  kc_axpby: { args: [ptr, dev, dev, dev, f32, f32, i64, i32], returns: i32 },
  kc_fill: { args: [ptr, dev, f32, i64], returns: i32 },
  kc_rope3d: { args: [ptr, dev, dev, i32, i32, i32, i32, dev, dev, i32, i32, i32, i32, i32, i32, i32, i32, i32, dev, i32], returns: i32 },
  kc_embedding: { args: [ptr, dev, dev, i32, ptr, i32, i32], returns: i32 },
  kc_t5_relative_bias: { args: [ptr, dev, dev, ptr, i32, i32, i32], returns: i32 },
  kc_conv3d: { args: [ptr, dev, dev, dev, dev, i32, dev, dev, i32, ptr, i32, i32, dev, f32, f32], returns: i32 },
  kc_copy_rows: { args: [ptr, dev, i64, dev, i64, i64, i64], returns: i32 },
  kc_gather: { args: [ptr, dev, dev, i32, i32, ptr, ptr, ptr], returns: i32 },
  kc_rgb_to_yuv420: { args: [ptr, dev, dev, i32, i32, i32, f64, f64], returns: i32 },
  kc_yuv420_to_rgb: { args: [ptr, dev, dev, i32, i32, i32, f64, f64], returns: i32 },
} as const;

export type CudaLibrary = ReturnType<typeof dlopen<typeof CUDA_SYMBOLS>>;

/** Stream capture into CUDA graphs and the allocator's pools (kernels/cuda/graph.cu, alloc.cu). */
export const CUDA_GRAPH_SYMBOLS = {
  kc_pool_create: { args: [ptr], returns: ptr },
  kc_pool_select: { args: [ptr, ptr], returns: i32 },
  kc_pool_destroy: { args: [ptr, ptr], returns: FFIType.void },
  kc_capture_begin: { args: [ptr, ptr], returns: i32 },
  kc_capture_end: { args: [ptr, ptr, ptr], returns: i32 },
  kc_capture_abort: { args: [ptr], returns: i32 },
  kc_graph_launch: { args: [ptr, u64], returns: i32 },
  kc_graph_destroy: { args: [ptr, u64], returns: FFIType.void },
} as const;

export type CudaGraphLibrary = ReturnType<typeof dlopen<typeof CUDA_GRAPH_SYMBOLS>>;

/** Readbacks on a second stream (kernels/cuda/readback.cu). kc_readback_poll answers 0 (landed),
 *  READBACK_PENDING (cudaErrorNotReady) or an error code. */
export const CUDA_READBACK_SYMBOLS = {
  kc_readbacks_create: { args: [ptr], returns: ptr },
  kc_readbacks_destroy: { args: [ptr, ptr], returns: FFIType.void },
  kc_readback_start: { args: [ptr, ptr, dev, u64], returns: i32 },
  kc_readback_poll: { args: [ptr, ptr, i32], returns: i32 },
  kc_readback_finish: { args: [ptr, ptr, i32, ptr, u64], returns: i32 },
} as const;

export type CudaReadbackLibrary = ReturnType<typeof dlopen<typeof CUDA_READBACK_SYMBOLS>>;
export const READBACK_PENDING = 600;

/** The library's readback symbols, or null when this build of it has none. */
export function bindReadbackSymbols(path: string): CudaReadbackLibrary | null {
  try {
    return dlopen(path, CUDA_READBACK_SYMBOLS);
  } catch {
    return null;
  }
}

/** The library's graph symbols, or null when this build of it has none. */
export function bindGraphSymbols(path: string): CudaGraphLibrary | null {
  try {
    return dlopen(path, CUDA_GRAPH_SYMBOLS);
  } catch {
    return null;
  }
}

/** A path dlopen can take, or a reason why there is none. The returned cleanup removes a temp copy. */
export async function locateCudaLibrary(): Promise<{ path: string; cleanup: () => void } | { missing: string }> {
  const none = () => {};
  const env = process.env.KINO_CUDA_LIB;
  if (env) return existsSync(env) ? { path: env, cleanup: none } : { missing: `KINO_CUDA_LIB=${env} does not exist` };
  const embedded = Bun.embeddedFiles.find((f) => /^libkino_cuda(-[a-z0-9]+)?\.so$/.test((f as Blob & { name: string }).name));
  if (embedded) {
    const dir = mkdtempSync(join(tmpdir(), "kino-cuda-"));
    const path = join(dir, "libkino_cuda.so");
    await Bun.write(path, embedded);
    return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
  }
  const candidates = [resolve(import.meta.dir, "../../../build/libkino_cuda.so"), join(dirname(process.execPath), "libkino_cuda.so")];
  const found = candidates.find((p) => existsSync(p));
  if (found) return { path: found, cleanup: none };
  return { missing: `no libkino_cuda.so (looked in ${candidates.join(", ")}; build with nvcc via build.ts)` };
}
