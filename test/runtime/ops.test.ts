// The op sweep (after ggml's test-backend-ops): every op of the Backend interface, on every backend
// this machine has, on awkward shapes, against the plain TypeScript reference. The WebAssembly
// backend runs three ways: one thread; a two-thread pool that splits every op however small (each
// kernel divides its own work by thread count); and the single-threaded build made for hosts without
// shared memory (with GEMM weights packed per call; the other two keep packed copies, wasm-packed.ts). CUDA cases run where a device answers and are skipped, visibly and counted, elsewhere.
// Prints max abs / rel error per op, shape and backend; rel = max|got − ref| / max|ref|.
//
// Tolerances, per element |got − ref| ≤ atol + rtol·max|ref| (the cases carry them, op-cases*.ts):
//   GEMM, conv3d/conv2d  1e-6 + 1e-6·sqrt(K)·max|ref| — bf16/f16 weights against a reference that
//                        rounds the weights first are held to the same bound
//   attention            1e-5 absolute on unit-scale inputs
//   layerNorm, rmsNorm, l2NormChannels  1e-5 absolute (outputs are unit scale)
//   softmax, gelu, silu, modulate, gatedAdd, rope3d  1e-6 absolute; mul, axpby 1e-7 / 1e-6 relative
//   copies, permute, upsample, embedding, T5 bias, cast, fill  exact
//   rgbToYuv420 ±1 code value (float rounding at .5); yuv420ToRgb 1e-5
import { afterAll, describe, expect, test } from "bun:test";
import type { Backend } from "../../src/runtime/backend.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { allCases } from "./op-cases.ts";

interface Row {
  op: string;
  shape: string;
  backend: string;
  maxAbs: string;
  maxRel: string;
  tolerance: string;
  ok: boolean;
}

const cases = allCases();
const refs = new Map<number, Float32Array>();
const rows: Row[] = [];

await buildCpuWasm(); // no-op when build/ is up to date; lets `bun test test/runtime` run on its own
const { openWasmBackend } = await import("../../src/runtime/backends/wasm.ts");

let cudaSkipReason = "";
async function openCuda(): Promise<Backend | null> {
  try {
    const { openCudaBackend } = await import("../../src/runtime/backends/cuda.ts");
    return await openCudaBackend();
  } catch (e) {
    cudaSkipReason = (e as Error).message;
    return null;
  }
}

// Opened before the tests are declared, so CUDA cases can be declared as skipped (bun counts them).
const backends: { label: string; be: Backend | null }[] = [
  { label: "wasm×1", be: await openWasmBackend({ threads: 1 }) },
  { label: "wasm×2", be: await openWasmBackend({ threads: 2, parallelMinWork: 0 }) }, // split even 1-element ops
  // the build for hosts without SharedArrayBuffer; without packed weight copies, so that GEMMs pack per call
  { label: "wasm-st", be: await openWasmBackend({ sharedMemory: false, packedWeightBytes: 0 }) },
  { label: "cuda", be: await openCuda() },
];

function compare(got: Float32Array, want: Float32Array, atol: number, rtol: number) {
  let maxAbs = 0, scale = 0, ok = got.length === want.length;
  for (const v of want) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  const limit = atol + rtol * scale;
  for (let i = 0; i < want.length; i++) {
    const d = got[i] === want[i] ? 0 : Math.abs(got[i]! - want[i]!); // equal infinities are exact
    if (!(d <= limit)) ok = false; // NaN fails too
    maxAbs = Math.max(maxAbs, Number.isNaN(d) ? Infinity : d);
  }
  return { ok, maxAbs, maxRel: scale > 0 ? maxAbs / scale : maxAbs };
}

for (const { label, be } of backends) {
  describe(be ? `ops on ${label}` : `ops on ${label} (skipped: ${cudaSkipReason})`, () => {
    afterAll(() => be?.dispose());
    cases.forEach((c, i) => {
      if (!be) {
        test.skip(`${c.op} ${c.name}`, () => {});
        return;
      }
      test(`${c.op} ${c.name}`, async () => {
        let want = refs.get(i);
        if (!want) refs.set(i, (want = c.ref()));
        const got = await c.run(be);
        const r = compare(got, want, c.atol, c.rtol);
        rows.push({
          op: c.op, shape: c.name, backend: label, maxAbs: r.maxAbs.toExponential(2), maxRel: r.maxRel.toExponential(2),
          tolerance: `${c.atol} + ${c.rtol.toExponential(1)}·max|ref|`, ok: r.ok,
        });
        expect(r.ok, `${c.op} ${c.name} on ${label}: max abs ${r.maxAbs}, tolerance ${c.atol} + ${c.rtol}·max|ref|`).toBe(true);
      });
    });
  });
}

afterAll(() => {
  console.table(rows);
  const ops = new Set(cases.map((c) => c.op));
  console.log(`op sweep: ${ops.size} ops, ${cases.length} cases, ${rows.length} runs, ${rows.filter((r) => !r.ok).length} failed`);
  if (cudaSkipReason) console.log(`op sweep: ${cases.length} CUDA cases skipped: ${cudaSkipReason}`);
});
