// The op sweep (after ggml's test-backend-ops): every op of the Backend interface, on every backend
// this machine has and every kernel path of it, on awkward shapes, against the plain TypeScript
// reference. The WebAssembly backend runs three ways: one thread; a two-thread pool that splits every
// op however small (each kernel divides its own work by thread count); and the single-threaded build
// made for hosts without shared memory (with GEMM weights packed per call; the other two keep packed
// copies, wasm-packed.ts). CUDA runs every case once on the library's own kernel choice, and the GEMM,
// attention and convolution cases once more on each kernel path it can force (CUDA_KERNEL_PATHS in
// src/runtime/backends/cuda.ts: GEMM wgmma, mma.sync, SIMT; attention wgmma, mma.sync, SIMT; conv3d
// and conv2d wgmma, mma.sync, SIMT); the edges of the tensor-core tiles (op-cases-tensor-cores.ts) run on
// CUDA only, on its own choice and on every tensor-core path; a path this
// device cannot run, and everything CUDA where no device answers, is declared skipped with the reason.
// With KINO_CUDA_LIB naming the emulated library (cuda-emulator/emulated-library.ts), the CUDA passes
// run every kernel on the CPU emulator, in this process.
// Every tensor an op writes lies between guard bytes that must come back untouched (op-guards.ts).
// Prints max abs / rel error per op, shape, backend and kernel; rel = max|got − ref| / max|ref|.
//
// What each op and kernel promises, per element (|got − ref| against the float64 reference):
//   GEMM, conv3d/conv2d  exact kernels (every wasm kernel, CUDA SIMT): ≤ 1e-6 + 1e-6·sqrt(K)·max|ref|,
//                        f32 products of the inputs and the stored weights (bf16/f16 weights are
//                        widened exactly, so the reference takes the rounded weights)
//     tensor cores       CUDA wgmma / mma.sync (bf16/f16 weights, K % 8 = 0): the activations rounded
//                        to the weight's type, products exact, f32 accumulation: the same bound,
//                        against the reference on the rounded activations
//     conv tensor cores  CUDA wgmma / mma.sync (kernels/cuda/conv.cuh): x, prev and the weights rounded to bf16,
//                        products exact, f32 accumulation: the same bound, against the reference on
//                        the rounded operands (test/runtime/cuda-emulated.test.ts holds the kernels to
//                        it on a CPU emulator where no GPU answers)
//     epilogues          GELU, residual + gate·y: the bound on y times the epilogue's slope (GELU
//                        1.13, max|gate|), + 2e-6·max|out| (the epilogue's f32 arithmetic)
//   attention            exact kernels: ≤ 1e-5 on unit-scale inputs
//     tensor cores       CUDA mma.sync (D ∈ {16, 32, 64, 128}): q, k, v rounded to bf16, and P rounded
//                        to bf16 for P·V: ≤ 1e-5 + 2⁻⁸·attention(q, k, |v|) against the reference on the
//                        rounded q, k, v (the rounding of P, bounded: op-precision.ts)
//   layerNorm, rmsNorm, l2NormChannels, rmsNormRope  1e-5 absolute (outputs are unit scale; times
//                        max|weight| with a weight); layerNormModulate 1e-5·(1 + max|scale|)
//   softmax, gelu, silu, rope3d  1e-6 absolute; mul, axpby 1e-7 / 1e-6 relative
//   copies, permute, upsample, embedding, T5 bias, cast, fill  exact
//   bf16 activations (op-cases-bf16.ts)  a bf16 input is the values it holds (the reference takes them
//                        as they are); a bf16 output is held to its op's promise above plus one rounding,
//                        u·|ref| + (1 + u)·tolerance with u = 2⁻⁸ (op-precision.ts bf16Output), on
//                        every kernel
//   rgbToYuv420 exact (the H.264 encoder's bytes); yuv420ToRgb 1e-5
import { afterAll, beforeAll, describe, test } from "bun:test";
import type { Backend } from "../../src/runtime/backend.ts";
import { CUDA_KERNEL_PATHS, type CudaBackend, type KernelOp } from "../../src/runtime/backends/cuda.ts";
import { openCudaBackend } from "../../src/runtime/backends/cuda-open.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { allCases } from "./op-cases.ts";
import { tensorCoreAttentionCases, tensorCoreGemmCases } from "./op-cases-tensor-cores.ts";
import type { OpCase } from "./op-helpers.ts";
import { type Row, pathOpOf, sweepTests } from "./op-sweep.ts";

/** One pass of the sweep: a backend, optionally with one op forced onto one kernel. */
interface Pass {
  label: string;
  be: Backend | null;
  cases: OpCase[];
  skip?: string;
  path?: { op: KernelOp; kernel: string };
}

const cases = allCases();
/** The edges of the tensor-core kernels' tiles (op-cases-tensor-cores.ts): cases the library sends to
 *  a tensor-core kernel, held to that kernel's promise only. CUDA runs them on its own choice and on
 *  every tensor-core path it can force; the CPU emulator runs them where no GPU answers
 *  (cuda-emulated-tensor-cores.test.ts), so the wasm passes do not. */
const tensorCoreGemms = tensorCoreGemmCases(), tensorCoreAttentions = tensorCoreAttentionCases();
const wgmmaAttentions = tensorCoreAttentionCases([64, 128]);
const tensorCoreCases = [...tensorCoreGemms, ...tensorCoreAttentions];
/** The tensor-core cases a forced path takes: none on an exact path; D 64 and 128 alone for wgmma attention. */
const tensorCoreCasesFor = (op: KernelOp, kernel: string) =>
  !CUDA_KERNEL_PATHS[op][kernel]!.rounds ? [] : op === "attention" && kernel === "wgmma" ? wgmmaAttentions : tensorCoreCases;
const tensorCoreOnly = new Set([...tensorCoreCases, ...wgmmaAttentions]);
const rows: Row[] = [];

await buildCpuWasm(); // no-op when build/ is up to date; lets `bun test test/runtime` run on its own
const { openWasmBackend } = await import("../../src/runtime/backends/wasm.ts");

async function openCuda(): Promise<CudaBackend | string> {
  try {
    return await openCudaBackend();
  } catch (e) {
    return (e as Error).message;
  }
}

/** Why this device cannot run `kernel` for `op`, or undefined when it can. */
function unsupported(cuda: CudaBackend, op: KernelOp, kernel: string): string | undefined {
  try {
    cuda.setKernelPaths({ [op]: kernel });
    return undefined;
  } catch (e) {
    return (e as Error).message;
  } finally {
    cuda.setKernelPaths({ [op]: "auto" });
  }
}

// Opened before the tests are declared, so skipped passes can be declared as skipped (bun counts them).
const wasm: [string, Backend][] = [
  ["wasm×1", await openWasmBackend({ threads: 1 })],
  ["wasm×2", await openWasmBackend({ threads: 2, parallelMinWork: 0 })], // split even 1-element ops
  // the build for hosts without SharedArrayBuffer; without packed weight copies, so that GEMMs pack per call
  ["wasm-st", await openWasmBackend({ sharedMemory: false, packedWeightBytes: 0 })],
];
const cudaOrWhy = await openCuda();
const cuda = typeof cudaOrWhy === "string" ? null : cudaOrWhy;
const noCuda = typeof cudaOrWhy === "string" ? cudaOrWhy : undefined;
const pathOps = Object.keys(CUDA_KERNEL_PATHS) as KernelOp[];

/** Whether a forced kernel takes the case at all: the wgmma attention kernel refuses head sizes
 *  other than 64 and 128 by design (attention.cu); every other kernel takes every case of its op. */
const takes = (op: KernelOp, kernel: string, c: OpCase) =>
  !(op === "attention" && kernel === "wgmma") || c.headDim === 64 || c.headDim === 128;

const passes: Pass[] = [
  ...wasm.map(([label, be]) => ({ label, be, cases })),
  { label: "cuda", be: cuda, cases: [...cases, ...tensorCoreCases], skip: noCuda },
  ...pathOps.flatMap((op) =>
    Object.keys(CUDA_KERNEL_PATHS[op]).map((kernel) => ({
      label: `cuda, ${op} on ${kernel}`, be: cuda, path: { op, kernel },
      cases: [...cases, ...tensorCoreCasesFor(op, kernel)].filter((c) => pathOpOf(c.op) === op && takes(op, kernel, c)),
      skip: noCuda ?? (cuda ? unsupported(cuda, op, kernel) : undefined),
    }))),
];

const sweep = { cuda, tensorCoreOnly, refs: new Map<OpCase, Float32Array>(), rows };
for (const { label, be, cases: passCases, skip, path } of passes) {
  describe(skip || !be ? `ops on ${label} (skipped: ${skip})` : `ops on ${label}`, () => {
    if (skip || !be) {
      for (const c of passCases) test.skip(`${c.op} ${c.name}`, () => {});
      return;
    }
    if (path) {
      beforeAll(() => cuda!.setKernelPaths({ [path.op]: path.kernel }));
      afterAll(() => cuda!.setKernelPaths({ [path.op]: "auto" }));
    }
    sweepTests(passCases, be, label, sweep);
  });
}

afterAll(() => {
  for (const [, be] of wasm) be.dispose();
  cuda?.dispose();
  console.table(rows);
  const ops = new Set(cases.map((c) => c.op));
  console.log(`op sweep: ${ops.size} ops, ${cases.length} cases, ${rows.length} runs, ${rows.filter((r) => !r.ok).length} failed`);
  for (const { label, cases: passCases, skip, path } of passes) {
    if (skip) console.log(`op sweep: ${passCases.length} runs on ${label} skipped: ${skip}`);
    else if (path) {
      const ran = rows.filter((r) => r.backend === label).map((r) => r.kernel || "no kernel");
      const counts = [...new Set(ran)].map((k) => `${ran.filter((x) => x === k).length} on ${k}`).join(", ");
      console.log(`op sweep: ${label}: ${passCases.length} cases ran ${counts}`);
    }
  }
});
