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

/**
 * Tolerances per backend: the f32 CPU kernels are held to the goldens' 1e-4. CUDA by default rounds
 * the operands of its tensor-core GEMMs, attention and large convolutions to bf16 (a relative error of
 * up to 2^-9 per operand, accumulated in f32: src/runtime/backends/cuda-open.ts), which over a model's
 * layers comes to 4e-3–1.4e-2 at the goldens (measured on the CUDA library on the CPU emulator, which rounds
 * as the kernels do: test/runtime/cuda-emulated-library.test.ts); the same tests in exact mode
 * (`openCudaBackend({ exact: true })`) stay within 1e-4.
 */
export function tolerance(label: string): { atol: number; rtol: number } {
  return label === "cuda" ? { atol: 2e-2, rtol: 2e-2 } : { atol: 1e-4, rtol: 1e-4 };
}
