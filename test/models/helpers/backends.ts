// The backends the model tests run on: the WebAssembly backend always (opened through the same
// device selection the server uses), CUDA where a GPU answers — reported as skipped otherwise — and,
// with KINO_TEST_REFERENCE=1, the TypeScript reference as a third yardstick.
import type { Backend } from "../../../src/runtime/backend.ts";
import { openBackend } from "../../../src/runtime/device.ts";
import { buildCpuWasm } from "../../../tools/build/cpu.ts";
import { HostBackend } from "./host-backend.ts";

export interface TestBackend {
  label: string;
  backend: Backend | null;
  /** Why the backend is missing (the tests for it are skipped with this reason in their name). */
  skip?: string;
}

let opened: Promise<TestBackend[]> | null = null;

export function testBackends(): Promise<TestBackend[]> {
  opened ??= (async () => {
    await buildCpuWasm();
    const quiet = { log: () => {} };
    const list: TestBackend[] = [{ label: "wasm", backend: await openBackend("cpu", { ...quiet, threads: 2 }) }];
    try {
      list.push({ label: "cuda", backend: await openBackend("cuda", quiet) });
    } catch (e) {
      list.push({ label: "cuda", backend: null, skip: (e as Error).message.replace(/^.*unavailable: /, "") });
    }
    if (process.env.KINO_TEST_REFERENCE === "1") list.push({ label: "reference", backend: new HostBackend() });
    return list;
  })();
  return opened;
}

/** Tolerances per backend: fp32 CPU kernels are held to the goldens' 1e-4; GPU kernels may use TF32/bf16 paths. */
export function tolerance(label: string): { atol: number; rtol: number } {
  return label === "cuda" ? { atol: 2e-3, rtol: 2e-3 } : { atol: 1e-4, rtol: 1e-4 };
}
