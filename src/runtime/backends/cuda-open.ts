// Opening a GPU for the CUDA backend (cuda.ts): the library found and bound (cuda-library.ts), a
// context created on the device, and each way that can fail named for the operator.
import { type Pointer, dlopen } from "bun:ffi";
import { CudaBackend } from "./cuda.ts";
import {
  CUDA_SYMBOLS, type CudaGraphLibrary, type CudaLibrary, type CudaReadbackLibrary, bindGraphSymbols, bindReadbackSymbols, locateCudaLibrary,
} from "./cuda-library.ts";

export interface CudaOptions {
  /** GPU index (default 0). */
  device?: number;
  /** Exact f32 arithmetic: GEMMs with half weights multiply f32 activations on the SIMT kernel, and
   *  attention and convolutions run their f32 kernels, instead of rounding activations (attention's P,
   *  convolution weights) to bf16 for the tensor cores. Several times slower; for tests that hold every
   *  backend to f32 tolerances. */
  exact?: boolean;
}

/** Opens a GPU. Rejects with "CUDA library unavailable: …" when the library cannot be found or
 *  loaded, and "no device: …" when it loads but no GPU answers (no driver: CUDA error 35).
 *  By default GEMMs with bf16/f16 weights round the f32 activations to that type for the tensor cores,
 *  attention rounds q, k, v and P to bf16, and the large convolutions (kernels/cuda/conv.cu: the
 *  Wan-VAE's) round x and w to bf16 (f32 accumulation throughout); see `exact`. */
export async function openCudaBackend(options: CudaOptions = {}): Promise<CudaBackend> {
  const device = options.device ?? 0;
  const where = await locateCudaLibrary();
  if ("missing" in where) throw new Error(`CUDA library unavailable: ${where.missing}`);
  let lib: CudaLibrary;
  let graphLib: CudaGraphLibrary | null = null;
  let readbackLib: CudaReadbackLibrary | null = null;
  try {
    lib = dlopen(where.path, CUDA_SYMBOLS);
    graphLib = bindGraphSymbols(where.path);
    readbackLib = bindReadbackSymbols(where.path);
  } catch (e) {
    throw new Error(`CUDA library unavailable: ${(e as Error).message}`);
  } finally {
    where.cleanup(); // the mapping stays valid after the temp file is gone
  }
  const code = new Int32Array(1);
  const message = new Uint8Array(512);
  const ctx = lib.symbols.kc_create(device, code, message, message.length);
  if (!ctx) {
    graphLib?.close();
    readbackLib?.close();
    lib.close();
    const text = new TextDecoder().decode(message.subarray(0, message.indexOf(0)));
    throw new Error(`no device: ${text}`);
  }
  const backend = new CudaBackend(lib, ctx as Pointer, graphLib, readbackLib);
  if (options.exact) backend.setKernelPaths({ gemm: "simt", attention: "simt", conv3d: "simt" });
  return backend;
}

