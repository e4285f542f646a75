// Backend selection for `generator.engine.device`:
//   cuda — the CUDA backend or an error saying why not;
//   cpu  — the WebAssembly backend;
//   auto — CUDA when the library loads and a device answers, else WebAssembly, with one log line that
//          says which backend runs and why ("no NVIDIA driver: using WebAssembly …").
// Both backends are imported lazily: a CPU-only process never loads the CUDA library, and a CUDA
// process never compiles the wasm module.

import { readFileSync } from "node:fs";
import type { Backend } from "./backend.ts";

export type DeviceSetting = "auto" | "cuda" | "cpu";

export interface OpenBackendOptions {
  /** Threads of the WebAssembly backend (default: min(2, hardware threads)). */
  threads?: number;
  /** Where the one selection line goes (default console.log). */
  log?: (line: string) => void;
  /** Which CUDA device (default 0). */
  gpu?: number;
  /**
   * Why this process must run on CUDA even under `auto`, as the start of the error when it cannot
   * ("generator.engine.num_gpus is 4"): a multi-GPU config that quietly ran on the CPU would mislead.
   */
  requireCuda?: string;
}

/** Opens the CUDA backend or throws an Error whose message says why it is unavailable. */
async function openCuda(gpu = 0): Promise<Backend> {
  let mod: { openCudaBackend(options: { device?: number }): Promise<Backend> };
  try {
    mod = await import("./backends/cuda-open.ts");
  } catch (e) {
    throw new Error(`the CUDA backend did not load: ${(e as Error).message}`);
  }
  return mod.openCudaBackend({ device: gpu });
}

/** Where the loaded NVIDIA kernel module names its version; absent without a driver. */
const NVIDIA_DRIVER_VERSION = "/proc/driver/nvidia/version";

/**
 * Why CUDA did not open, in words an operator can act on. The statically linked CUDA runtime answers
 * error 35 ("driver version is insufficient") both when no driver is installed — a CPU machine with a
 * CUDA toolkit — and when the driver is older than the runtime; the kernel module tells them apart.
 */
export function cudaUnavailableReason(message: string, versionFile = NVIDIA_DRIVER_VERSION, visible = process.env.CUDA_VISIBLE_DEVICES): string {
  // Error 100 (no device) under CUDA_VISIBLE_DEVICES: the server pins each worker to one GPU this way,
  // so the likely cause is a GPU index this machine does not have.
  if (/\(error 100\)/.test(message) && visible !== undefined) {
    return `no GPU answers as CUDA_VISIBLE_DEVICES=${visible} (does this machine have that GPU? nvidia-smi -L lists them)`;
  }
  if (!/\(error 35\)/.test(message)) return `CUDA unavailable (${message})`;
  let version: string;
  try {
    version = readFileSync(versionFile, "utf8");
  } catch {
    return "no NVIDIA driver";
  }
  const number = /Kernel Module\s+(?:for \S+\s+)?([0-9.]+)/.exec(version)?.[1] ?? "(version unknown)";
  return `NVIDIA driver ${number} is older than this build's CUDA runtime needs`;
}

async function openWasm(threads?: number): Promise<Backend> {
  const { openWasmBackend } = await import("./backends/wasm.ts");
  return openWasmBackend({ threads });
}

export async function openBackend(setting: DeviceSetting, opts: OpenBackendOptions = {}): Promise<Backend> {
  const log = opts.log ?? ((line: string) => console.log(line));
  switch (setting) {
    case "cuda": {
      let be: Backend;
      try {
        be = await openCuda(opts.gpu);
      } catch (e) {
        throw new Error(`generator.engine.device is cuda, but CUDA is unavailable: ${cudaUnavailableReason((e as Error).message)}`);
      }
      log(`runtime: using ${be.description} (device: cuda)`);
      return be;
    }
    case "cpu": {
      const be = await openWasm(opts.threads);
      log(`runtime: using ${be.description} (device: cpu)`);
      return be;
    }
    case "auto": {
      if (opts.requireCuda) {
        try {
          const be = await openCuda(opts.gpu);
          log(`runtime: using ${be.description} (device: auto, a CUDA device answered)`);
          return be;
        } catch (e) {
          throw new Error(`${opts.requireCuda}, so this worker needs a CUDA GPU, but ${cudaUnavailableReason((e as Error).message)}`);
        }
      }
      try {
        const be = await openCuda(opts.gpu);
        log(`runtime: using ${be.description} (device: auto, a CUDA device answered)`);
        return be;
      } catch (e) {
        const be = await openWasm(opts.threads);
        log(`runtime: ${cudaUnavailableReason((e as Error).message)}: using ${be.description} (device: auto)`);
        return be;
      }
    }
    default:
      throw new Error(`unknown device setting ${JSON.stringify(setting)} (auto | cuda | cpu)`);
  }
}
