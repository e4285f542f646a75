// The persistent Hopper GEMM with the TMA-store epilogue (kernels/cuda/gemm_wgmma_persistent.cu with
// TMA_OUT, gemm_epilogue_tma.cuh) without a GPU: the CPU emulator (cuda-emulator/: mbarriers, named
// barriers, TMA loads and stores with the 128-byte swizzle, bulk async-groups, the proxy fence, wgmma
// from its descriptors, each performed at the latest moment the PTX ISA allows) runs the library's own
// kc_gemm on an emulated sm_90 context of two multiprocessors with gemm path 6 forced. The epilogue
// stages each consumer's results in shared memory and one thread stores them with TMA; the emulator
// refuses a store without the proxy fence after the staging writes, a staging buffer rewritten while a
// store may still read it, and a thread that exits with stores in flight, and reads each store's
// source only at the wait that retires it.
// The cases: every GEMM case the other wgmma kernels run (wgmma-cases.ts: every epilogue, f32 and bf16
// out, M/N/K tails, splits), Wan2.1-like shapes scaled down (M = 2·128 + 72 rows as 4680 = 36·128 + 72;
// dim 192 for 1536, FFN 1120 for 8960: QKV split in three, O and FFN down with the gated residual in
// place, FFN up with GELU, cross-Q), and shapes at this epilogue's own edges: bf16 at the 224-wide tile
// (3.5 chunks of 64 columns: the 32-column tail box), split parts that start inside a chunk (the chunk
// stored once per part), rows TMA cannot store (not a multiple of 16 bytes: the register epilogue).
// Each must keep the tensor-core promise on the kernel kc_gemm names. The last tests plant bugs of the
// TMA store and require the cases to catch each one.
import { describe, expect, test } from "bun:test";
import { type EmulatedCall, EmulatedTensorCoreBackend, buildTensorCoreEmulators } from "./cuda-emulator/emulated-tensor-cores.ts";
import { failure, firstFailure, wgmmaGemmCases } from "./cuda-emulator/wgmma-cases.ts";
import { type GemmShape, tensorCoreGemmCases } from "./op-cases-tensor-cores.ts";

const built = await buildTensorCoreEmulators();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated-wgmma-persistent-tma.test.ts: skipped, ${skip}`);
const harness = "skip" in built ? null : built;

// With 2 multiprocessors the tile width goes to 224 wherever both widths need as many column tiles
// (N 520, 528, 576, 192, 1120), to 256 at N 512 (2 column tiles against 3).
const TMA_SHAPES: GemmShape[] = [
  { B: 1, L: 300, K: 520, N: 520, w: "bf16", a: "f32", out: "bf16", epi: "gelu", bias: true, label: "bf16 at 224: 3.5 chunks per tile, GELU" },
  { B: 1, L: 300, K: 136, N: 528, w: "bf16", a: "bf16", out: "bf16", epi: { split: 2 }, bias: true, label: "bf16 split into parts of 264: a chunk spans both" },
  { B: 1, L: 300, K: 72, N: 528, w: "f16", a: "bf16", out: "f32", epi: { split: 3 }, label: "f32 split into parts of 176: a chunk spans two" },
  { B: 1, L: 300, K: 136, N: 520, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 5, bias: true, label: "f32 at 224: 7 chunks, gated residual in place" },
  { B: 2, L: 250, K: 520, N: 512, w: "bf16", a: "bf16", out: "f32", epi: "residual", G: 5, bias: true, label: "f32 at 256: 8 chunks, gated residual of its own" },
  { B: 2, L: 250, K: 72, N: 512, w: "f16", a: "bf16", out: "bf16", label: "bf16 at 256: 4 chunks" },
  { B: 1, L: 130, K: 64, N: 106, w: "bf16", a: "bf16", out: "f32", label: "rows of 424 bytes: TMA cannot store them, the register epilogue does" },
  // Wan2.1-like, scaled down
  { B: 1, L: 328, K: 192, N: 576, w: "bf16", a: "bf16", out: "bf16", epi: { split: 3 }, bias: true, label: "Wan-like QKV: split in three, bf16" },
  { B: 1, L: 328, K: 192, N: 192, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 4, bias: true, label: "Wan-like O: gated residual in place" },
  { B: 1, L: 328, K: 192, N: 192, w: "bf16", a: "bf16", out: "bf16", bias: true, label: "Wan-like cross-Q, bf16" },
  { B: 1, L: 328, K: 192, N: 1120, w: "bf16", a: "bf16", out: "bf16", epi: "gelu", bias: true, label: "Wan-like FFN up: GELU, bf16" },
  { B: 1, L: 328, K: 1120, N: 192, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 4, bias: true, label: "Wan-like FFN down: gated residual in place" },
];
const gemms = [...tensorCoreGemmCases(TMA_SHAPES, 59), ...wgmmaGemmCases()];

// Tile<BN, true>::SMEM of the kernel: 4 stages of (16 KiB + BN·128 B), 32 KiB of staging, 1 KiB to align
const SMEM = { 224: 4 * 44 * 1024 + 32768 + 1024, 256: 4 * 48 * 1024 + 32768 + 1024 };

/** The kernel kc_gemm must run: wgmma needs N and a split's part even; TMA a row of the output (or of
 *  a split's part) a multiple of 16 bytes (the harness's buffers are 256-byte aligned). */
function expectedKernel(c: EmulatedCall): string {
  if (c.N! % 2 !== 0 || c.split! % 2 !== 0) return "mma.sync";
  return ((c.split || c.N!) * (c.out === "bf16" ? 2 : 4)) % 16 === 0 ? "wgmma-persistent-tma" : "wgmma-persistent";
}

/** A TMA-store call's launch and what its chunks meet: the tile width, a 32-column tail chunk inside N,
 *  a chunk spanning two parts of a split, a consumer whose 64 rows all lie past M. */
function edgesOf(c: EmulatedCall) {
  const [grid, threads, smem] = /grid (\d+),1,1 threads (\d+) smem (\d+)/.exec(c.launches.at(-1)!)!.slice(1).map(Number) as [number, number, number];
  const bn = smem === SMEM[224] ? 224 : smem === SMEM[256] ? 256 : 0;
  const cw = c.out === "bf16" ? 64 : 32, S = c.split || c.N!;
  const chunks = Array.from({ length: Math.ceil(c.N! / (bn || 1)) }, (_, t) =>
    Array.from({ length: Math.ceil(bn / cw) }, (_, k) => ({ n0: t * bn + k * cw, w: Math.min(cw, bn - k * cw) }))).flat().filter((k) => k.n0 < c.N!);
  return {
    grid, threads, bn, tiles: Math.ceil(c.M! / 128) * Math.ceil(c.N! / (bn || 1)),
    tail: chunks.some((k) => k.w < cw),
    spans: chunks.some((k) => Math.floor(k.n0 / S) !== Math.floor((Math.min(k.n0 + k.w, c.N!) - 1) / S)),
    idleConsumer: c.M! % 128 !== 0 && c.M! % 128 <= 64,
  };
}

describe.skipIf(!harness)("the persistent wgmma GEMM with the TMA-store epilogue on the CPU emulator", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma-persistent-tma" });
  for (const c of gemms) {
    test(`gemm ${c.name} keeps the tensor-core promise, stored by TMA where the output allows it`, async () => {
      const why = await failure(be!, c);
      expect(why).toBeNull();
      const call = be!.calls.at(-1)!;
      expect(call.kernel).toBe(expectedKernel(call));
    }, 120_000);
  }

  test("the cases reach every edge: both tile widths with f32 and bf16 out, tail chunks, chunks across split parts, the register fallback", () => {
    const runs = be!.calls.filter((c) => c.kernel === "wgmma-persistent-tma").map((c) => ({ ...edgesOf(c), call: c }));
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.threads === 384 && r.bn !== 0 && r.grid === Math.min(r.tiles, 2))).toBe(true);
    for (const bn of [224, 256])
      for (const out of ["f32", "bf16"])
        expect(runs.some((r) => r.bn === bn && r.call.out === out && r.tiles >= 4), `${bn}, ${out} out, several tiles per block`).toBe(true);
    expect(runs.some((r) => r.tail), "a 32-column tail chunk").toBe(true);
    for (const out of ["f32", "bf16"]) expect(runs.some((r) => r.spans && r.call.out === out), `${out}: a chunk across split parts`).toBe(true);
    expect(runs.some((r) => r.idleConsumer), "a consumer with no rows in the last row tile").toBe(true);
    expect(be!.calls.some((c) => c.kernel === "wgmma-persistent"), "an output TMA cannot take").toBe(true);
  });
});

// Bugs of the TMA store (KC_PLANTED(n) in gemm_epilogue_tma.cuh, gemm_wgmma_persistent.cu); the cases
// must catch each one, by a result off its promise or the emulator stopping on the misuse.
const PLANTED: [number, string, RegExp][] = [
  [22, "no fence.proxy.async between the staging writes and the store", /no fence\.proxy\.async\.shared::cta of that thread followed/],
  [23, "a staging buffer rewritten before wait_group.read retired the store reading it", /still reads: no cp\.async\.bulk\.wait_group\.read/],
  [24, "the store's box one column tile off", /max abs|NaN/],
  [25, "the consumer's last stores never waited for before it exits", /exits with TMA stores it never waited for/],
];

describe.skipIf(!harness)("the emulated cases catch planted TMA-store bugs", () => {
  for (const [n, what, how] of PLANTED) {
    test(`bug ${n}, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { kernels: "wgmma-persistent-tma", plant: n });
      const caught = await firstFailure(planted, gemms);
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).toMatch(how);
    }, 240_000);
  }
});
