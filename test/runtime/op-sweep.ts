// Running op-sweep cases (op-cases*.ts) as tests: what the kernel that ran must produce, the
// comparison, and the table of results. Shared by the op sweep (ops.test.ts: every backend and kernel
// path this machine has) and the CUDA library on the CPU emulator (cuda-emulated-library.test.ts), so
// that both hold a kernel to the same promise (op-precision.ts).
import { expect, test } from "bun:test";
import type { Backend } from "../../src/runtime/backend.ts";
import { CUDA_KERNEL_PATHS, type CudaBackend, type KernelOp } from "../../src/runtime/backends/cuda.ts";
import type { OpCase } from "./op-helpers.ts";
import { type Expected, compare } from "./op-precision.ts";

export interface Row {
  op: string;
  shape: string;
  backend: string;
  kernel: string;
  maxAbs: string;
  maxRel: string;
  used: string;
  ok: boolean;
}

const pathOps = Object.keys(CUDA_KERNEL_PATHS) as KernelOp[];
/** The op whose kernel path a case runs on (conv2d is conv3d with one frame), if it has paths. */
export const pathOpOf = (op: string): KernelOp | undefined => pathOps.find((p) => p === (op === "conv2d" ? "conv3d" : op));

/** What a sweep needs to judge a case: the CUDA backend (whose ranKernel says which promise applies),
 *  the cases that must run on a tensor-core kernel, the exact references computed so far, the rows. */
export interface Sweep {
  cuda: CudaBackend | null;
  tensorCoreOnly: ReadonlySet<OpCase>;
  refs: Map<OpCase, Float32Array>;
  rows: Row[];
}

/** What the kernel that ran must produce for this case, and the kernel's name for the table. */
export function expectation(c: OpCase, be: Backend, s: Sweep): { e: Expected; kernel: string } {
  const op = pathOpOf(c.op);
  const ran = be === s.cuda && op ? s.cuda.ranKernel(op) : null;
  if (s.tensorCoreOnly.has(c) && !(ran && op && CUDA_KERNEL_PATHS[op][ran]?.rounds)) {
    throw new Error(`${c.op} ${c.name} ran ${ran ?? "no kernel"}, not a tensor-core kernel: the case is one the library must send to the tensor cores`);
  }
  if (ran && op && CUDA_KERNEL_PATHS[op][ran]?.rounds) {
    if (!c.tensorCores) throw new Error(`${c.op} ${c.name} ran ${ran}, a tensor-core kernel, but the case has no tensor-core reference`);
    return { e: c.tensorCores(), kernel: ran };
  }
  if (c.expected) return { e: c.expected(), kernel: ran ?? "" };
  let want = s.refs.get(c);
  if (!want) s.refs.set(c, (want = c.ref()));
  return { e: { want, atol: c.atol, rtol: c.rtol }, kernel: ran ?? "" };
}

/** Runs a case on `be` and compares it with its promise: the row for the table, and ok. */
export async function runCase(c: OpCase, be: Backend, label: string, s: Sweep): Promise<{ row: Row; message: string }> {
  const got = await c.run(be);
  const { e, kernel } = expectation(c, be, s);
  const r = compare(got, e);
  const row = {
    op: c.op, shape: c.name, backend: label, kernel, maxAbs: r.maxAbs.toExponential(2), maxRel: r.maxRel.toExponential(2),
    used: `${(100 * r.used).toFixed(0)} %`, ok: r.ok,
  };
  return { row, message: `${c.op} ${c.name} on ${label}${kernel ? ` (${kernel})` : ""}: max abs ${r.maxAbs}, ${(100 * r.used).toFixed(0)} % of its tolerance` };
}

/** Declares one test per case on `be` (inside the caller's describe), each adding its row. */
export function sweepTests(cases: readonly OpCase[], be: Backend, label: string, s: Sweep): void {
  for (const c of cases) {
    test(`${c.op} ${c.name}`, async () => {
      const { row, message } = await runCase(c, be, label, s);
      s.rows.push(row);
      expect(row.ok, message).toBe(true);
    });
  }
}
