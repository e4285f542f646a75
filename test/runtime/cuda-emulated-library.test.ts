// The whole CUDA library on the CPU emulator, behind the real CudaBackend: every kernels/cuda/*.cu
// compiled for the emulator into build/cuda-emulator/libkino_cuda_emu.so with an emulated CUDA runtime
// (cuda-emulator/emulated-library.ts, library-runtime.cpp), opened by openCudaBackend through
// KINO_CUDA_LIB, running the op sweep's cases (op-cases*.ts) of the ops whose kernels no other emulated
// test runs — the norms, the fused norm-modulate and q/k RMSNorm + RoPE, rope3d, the elementwise ops,
// embedding and the T5 bias, resize, the copies and gathers (upsample, permute, concat, slice, casts),
// the YUV conversions — with GEMM and attention forced onto their exact SIMT kernels, each held to
// the promise ops.test.ts holds a GPU to (op-sweep.ts, op-precision.ts). The tensor-core GEMM,
// attention and conv kernels and the SIMT conv have emulated tests of their own
// (cuda-emulated*.test.ts); the attention cases whose SIMT run takes longest are left to the full
// sweep on the emulator (docs/ARCHITECTURE.md: KINO_CUDA_LIB=build/cuda-emulator/libkino_cuda_emu.so
// bun test test/runtime/ops.test.ts). Also the library's host side that no harness has: a recorded
// CUDA graph replayed and updated in place (graph.cu, the allocator's pools), a readback on the
// second stream (readback.cu), the device's description. Planted bug 44 (norm_rope.cu) must be caught.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { CudaBackend } from "../../src/runtime/backends/cuda.ts";
import { openCudaBackend } from "../../src/runtime/backends/cuda-open.ts";
import * as R from "../../src/runtime/reference.ts";
import { EMULATED_LIBRARY, buildEmulatedLibrary, plantInEmulatedLibrary } from "./cuda-emulator/emulated-library.ts";
import { allCases } from "./op-cases.ts";
import { type OpCase, host, rng } from "./op-helpers.ts";
import { type Row, runCase, sweepTests } from "./op-sweep.ts";

const built = await buildEmulatedLibrary();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated-library.test.ts: skipped, ${skip}`);

/** CudaBackend on the emulated library: KINO_CUDA_LIB only while it opens, so that no other test file
 *  of the same process finds it. */
async function openEmulated(path: string): Promise<CudaBackend> {
  const before = process.env.KINO_CUDA_LIB;
  process.env.KINO_CUDA_LIB = path;
  try {
    return await openCudaBackend();
  } finally {
    if (before === undefined) delete process.env.KINO_CUDA_LIB;
    else process.env.KINO_CUDA_LIB = before;
  }
}

/** Attention cases above this much work (B·Lq·Lk·H·D) take the emulated SIMT kernel a second or more. */
const ATTENTION_WORK_MAX = 3e6;
const work = (c: OpCase) => Number(/B (\d+) Lq (\d+) Lk (\d+) H (\d+) D (\d+)/.exec(c.name)?.slice(1).reduce((a, b) => a * Number(b), 1) ?? 0);
const cases = allCases().filter((c) => c.op !== "conv3d" && c.op !== "conv2d" && !(c.op === "attention" && work(c) > ATTENTION_WORK_MAX));

const cuda = "path" in built ? await openEmulated(built.path) : null;
const rows: Row[] = [];
const sweep = { cuda, tensorCoreOnly: new Set<OpCase>(), refs: new Map<OpCase, Float32Array>(), rows };

describe.skipIf(!!skip)("the CUDA library on the CPU emulator, through CudaBackend", () => {
  afterAll(() => {
    cuda?.dispose();
    console.log(`the CUDA library on the emulator: ${rows.length} op sweep runs, ${rows.filter((r) => !r.ok).length} failed`);
  });

  test("opens as an sm_90 device of two multiprocessors, with graphs and readbacks", () => {
    expect(cuda!.description).toMatch(/^CUDA CPU emulator \(sm_90, \d+ GiB\)$/);
    expect(cuda!.pciBusId).toBe("0000:00:00.0");
    expect(cuda!.graphs).toBeDefined();
    expect(cuda!.readbackRaw).toBeDefined();
  });

  describe("op sweep cases, GEMM and attention on SIMT", () => {
    beforeAll(() => cuda!.setKernelPaths({ gemm: "simt", attention: "simt" }));
    afterAll(() => cuda!.setKernelPaths({ gemm: "auto", attention: "auto" }));
    sweepTests(cases, cuda!, "cuda on the emulator", sweep);
  });

  test("planted bug 44 (a head's last RoPE pair at its neighbour's frequency) fails an rmsNormRope case", async () => {
    const ropeCases = cases.filter((c) => c.op === "rmsNormRope");
    const failed: string[] = [];
    plantInEmulatedLibrary(EMULATED_LIBRARY, 44);
    try {
      for (const c of ropeCases) if (!(await runCase(c, cuda!, "cuda, planted 44", sweep)).row.ok) failed.push(c.name);
    } finally {
      plantInEmulatedLibrary(EMULATED_LIBRARY, 0);
    }
    // Wan's head size, every pair used; and a head whose last pair must pass unrotated but whose
    // neighbour is used (where both are past the used pairs, or a head has one pair, nothing changes)
    const caught = ropeCases.filter((c) => /x \[(2,48,3,128|1,14,2,16)\]/.test(c.name)).map((c) => c.name);
    expect(caught.length).toBe(10);
    expect(failed).toEqual(expect.arrayContaining(caught));
  });

  test("a recorded graph replays on new inputs and updates in place from a recording of the same ops", async () => {
    const b = cuda!, r = rng(31);
    const [M, K, N] = [5, 24, 7];
    const a = host([M, K], r(M * K)), w = host([N, K], r(N * K));
    const ta = b.upload(a.f32, [M, K]), tw = b.upload(w.f32, [N, K]);
    b.setKernelPaths({ gemm: "simt" });
    const record = (eps: number, previous: Parameters<NonNullable<CudaBackend["graphs"]>["record"]>[1], extra = false) =>
      b.graphs!.record(() => {
        const normed = b.alloc([M, K]), out = b.alloc([M, N]);
        b.layerNorm(normed, ta, eps);
        b.gemm(out, normed, tw);
        if (extra) b.gelu(out, out);
        b.free(normed);
        return out;
      }, previous);
    const want = (x: R.Host, eps: number, gelu = false) => {
      const y = R.gemm(R.layerNorm(x, eps), w, null);
      return gelu ? R.gelu(y).f32 : y.f32;
    };
    const tol = 1e-5;
    const close = (got: Float32Array, ref: Float32Array) => got.every((v, i) => Math.abs(v - ref[i]!) <= tol);
    try {
      const first = record(1e-6, null);
      expect(first.made).toBe("new");
      const a2 = host([M, K], r(M * K));
      b.write(ta, a2.f32);
      first.graph.launch();
      expect(close(await b.download(first.result), want(a2, 1e-6))).toBe(true);
      // the same ops with another eps: the executable graph is updated, and the launch uses the new eps
      const second = record(0.5, first.graph);
      b.free(first.result); // the previous recording's output, back to the graph's pool
      expect(second.made).toBe("updated");
      second.graph.launch();
      expect(close(await b.download(second.result), want(a2, 0.5))).toBe(true);
      // one op more: a new topology, instantiated anew
      const third = record(0.5, second.graph, true);
      b.free(second.result);
      expect(third.made).toBe("new");
      third.graph.launch();
      expect(close(await b.download(third.result), want(a2, 0.5, true))).toBe(true);
      b.free(third.result);
      third.graph.free();
    } finally {
      b.setKernelPaths({ gemm: "auto" });
      b.free(ta, tw);
    }
  });

  test("a readback on the second stream gives the bytes a download gives", async () => {
    const b = cuda!, r = rng(32);
    const x = b.upload(r(3 * 2 * 6 * 8), [3, 2, 6, 8]), yuv = b.alloc([2, (6 * 8 * 3) / 2], "u8");
    try {
      b.rgbToYuv420(yuv, x, [-1, 1]);
      const [got, again] = await Promise.all([b.readbackRaw!(yuv), b.readbackRaw!(x)]);
      expect(Buffer.from(got).equals(Buffer.from(await b.downloadRaw(yuv)))).toBe(true);
      expect(Buffer.from(again).equals(Buffer.from(await b.downloadRaw(x)))).toBe(true);
    } finally {
      b.free(x, yuv);
    }
  });
});
