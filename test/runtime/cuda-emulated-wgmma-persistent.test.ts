// The persistent Hopper GEMM (kernels/cuda/gemm_wgmma_persistent.cu) without a GPU: the CPU emulator
// (cuda-emulator/: mbarriers, TMA with its 128-byte swizzle, wgmma from its descriptors, each performed
// at the latest moment the PTX ISA allows) runs the library's own kc_gemm on an emulated sm_90 context
// of two multiprocessors with the persistent path forced (gemm path 4), so the grid is two blocks and
// each walks several output tiles, its producer running into the next tile's K steps while the
// consumers store the last. The cases: every GEMM case the one-block-per-tile wgmma kernel runs
// (cuda-emulated-wgmma.test.ts: every epilogue, bf16 output, tails, splits), plus shapes at the
// persistent kernel's own edges: 9 tiles on 2 blocks with K steps that do not fill whole turns of the
// stage ring (the phase parity must carry from tile to tile), and shapes where the tile-width choice
// (128×224 or 128×256 by wave quantization) goes each way. Each must keep the tensor-core promise.
// The last tests plant bugs of the persistence itself and require the cases to catch each one.
import { describe, expect, test } from "bun:test";
import { EmulatedTensorCoreBackend, buildTensorCoreEmulators } from "./cuda-emulator/emulated-tensor-cores.ts";
import { failure, firstFailure, wgmmaGemmCases } from "./cuda-emulator/wgmma-cases.ts";
import { type GemmShape, tensorCoreGemmCases } from "./op-cases-tensor-cores.ts";

const built = await buildTensorCoreEmulators();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated-wgmma-persistent.test.ts: skipped, ${skip}`);
const harness = "skip" in built ? null : built;

// With 2 multiprocessors, 3 row-tiles (M 300) and N 520: 3 column-tiles either way, so 128×224 has the
// higher bound (9 tiles, 5 waves); M 500, N 512: 4 × 2 tiles of 128×256 (4 waves) against 4 × 3 of
// 128×224 (6 waves), so 128×256.
// K 520 is 9 K steps: the 5-stage (224) and 4-stage (256) rings turn mid-tile.
const PERSISTENT_SHAPES: GemmShape[] = [
  { B: 1, L: 300, K: 520, N: 520, w: "bf16", a: "f32", out: "f32", epi: "gelu", bias: true, label: "9 tiles of 128×224 on 2 blocks, GELU" },
  { B: 2, L: 250, K: 520, N: 512, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 5, bias: true, label: "8 tiles of 128×256, gated residual in place" },
  { B: 1, L: 300, K: 136, N: 520, w: "f16", a: "bf16", out: "bf16", epi: { split: 2 }, label: "9 tiles of 128×224, split in two parts of 260" },
];
const persistentCases = tensorCoreGemmCases(PERSISTENT_SHAPES, 47);
const gemms = [...persistentCases, ...wgmmaGemmCases()];

const SMEM = { 224: 5 * 44 * 1024 + 1024, 256: 4 * 48 * 1024 + 1024 }; // Tile<BN>::SMEM of the kernel

describe.skipIf(!harness)("the persistent wgmma GEMM on the CPU emulator", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma-persistent" });
  for (const c of gemms) {
    test(`gemm ${c.name} keeps the tensor-core promise, on the persistent kernel where N and a split's part are even`, async () => {
      const why = await failure(be!, c);
      expect(why).toBeNull();
      const call = be!.calls.at(-1)!;
      expect(call.kernel).toBe(call.N! % 2 === 0 && call.split! % 2 === 0 ? "wgmma-persistent" : "mma.sync");
    }, 120_000);
  }

  test("the cases reach every edge: both tile widths, 2 blocks each walking several tiles, rings turning across tiles", () => {
    const runs = be!.calls.filter((c) => c.kernel === "wgmma-persistent").map((c) => {
      const [grid, threads, smem] = /grid (\d+),1,1 threads (\d+) smem (\d+)/.exec(c.launches.at(-1)!)!.slice(1).map(Number) as [number, number, number];
      const bn = smem === SMEM[224] ? 224 : smem === SMEM[256] ? 256 : 0;
      return { grid, threads, bn, tiles: Math.ceil(c.M! / 128) * Math.ceil(c.N! / (bn || 1)), steps: Math.ceil(c.K! / 64) };
    });
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.threads === 384 && r.bn !== 0)).toBe(true);
    expect(runs.every((r) => r.grid === Math.min(r.tiles, 2))).toBe(true); // one block per multiprocessor, at most
    for (const bn of [224, 256]) {
      const stages = bn === 224 ? 5 : 4;
      // a block walks 4 tiles or more, and one whose K steps leave the ring mid-turn at a tile's end
      expect(runs.some((r) => r.bn === bn && r.tiles >= 8), `${bn}: several tiles per block`).toBe(true);
      expect(runs.some((r) => r.bn === bn && r.tiles > 2 && r.steps % (2 * stages) !== 0 && r.steps > stages), `${bn}: ring across tiles`).toBe(true);
    }
    expect(be!.calls.every((c) => c.launches.length === 1 || c.kernel !== "wgmma-persistent")).toBe(true);
  });
});

// Bugs of the persistence (KC_PLANTED(n) in gemm_wgmma_persistent.cu); the cases must catch each one.
const PLANTED: [number, string][] = [
  [14, "the consumers' full-barrier parity restarts with each tile instead of carrying over"],
  [15, "a tile's last stage handed back to the producer before the wgmma reading it retired"],
  [16, "each tile's first K step accumulates onto the previous tile's sums"],
];

describe.skipIf(!harness)("the emulated cases catch planted persistent-GEMM bugs", () => {
  for (const [n, what] of PLANTED) {
    test(`bug ${n}, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { kernels: "wgmma-persistent", plant: n });
      const caught = await firstFailure(planted, gemms);
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).not.toBeNull();
    }, 240_000);
  }
});
