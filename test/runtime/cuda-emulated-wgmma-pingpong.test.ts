// The ping-pong Hopper GEMM (kernels/cuda/gemm_wgmma_pingpong.cu) without a GPU: the CPU emulator
// (cuda-emulator/: mbarriers, named barriers, TMA with its 128-byte swizzle, wgmma from its
// descriptors, each performed at the latest moment the PTX ISA allows) runs the library's own kc_gemm
// on an emulated sm_90 context of two multiprocessors with the ping-pong path forced (gemm path 5), so
// the grid is two blocks and each walks several 128×112 tiles, its two consumer warpgroups taking
// alternate tiles. The cases: every GEMM case the other wgmma kernels run (wgmma-cases.ts: every
// epilogue, bf16 output, tails, splits), plus shapes at this kernel's own edges: blocks with an even
// and an odd number of tiles, K steps that leave the 7-stage ring mid-turn at a tile's end (the phase
// parity must carry across tiles and across consumers), tiles shorter than the ring (the producer
// fills several tiles ahead), a split whose parts end inside a tile. Each must keep the tensor-core
// promise, and the emulator's record of which warpgroup issued wgmma when must show the turns: per
// block, warpgroups 1 and 2 alternating, one whole tile's mainloop per turn, one turn per tile.
// The last tests plant bugs of the ping-pong itself and require the cases (results or turns) to catch each.
import { describe, expect, test } from "bun:test";
import { type EmulatedCall, EmulatedTensorCoreBackend, buildTensorCoreEmulators } from "./cuda-emulator/emulated-tensor-cores.ts";
import { failure, firstFailure, wgmmaGemmCases } from "./cuda-emulator/wgmma-cases.ts";
import { type GemmShape, tensorCoreGemmCases } from "./op-cases-tensor-cores.ts";

const built = await buildTensorCoreEmulators();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated-wgmma-pingpong.test.ts: skipped, ${skip}`);
const harness = "skip" in built ? null : built;

const BM = 128, BN = 112, STAGES = 7, SMEM = STAGES * (BM + BN) * 128 + 1024; // the kernel's tile, ring, dynamic shared memory
const WGMMA_PER_STEP = 2 * 4; // two m64n112k16 (rows 0–63, 64–127) per 16 of K, four per K step of 64

// With 2 multiprocessors: M 300, N 520 is 3 × 5 = 15 tiles, 8 and 7 per block (the second block's
// consumer 1 one tile short), K 520 = 9 K steps (the ring turns mid-tile); M 500, N 224 is 4 × 2 = 8
// tiles of 2 K steps each, shorter than the ring; the split's parts of 260 end inside the third
// column tile (224 .. 335).
const PINGPONG_SHAPES: GemmShape[] = [
  { B: 1, L: 300, K: 520, N: 520, w: "bf16", a: "f32", out: "f32", epi: "gelu", bias: true, label: "15 tiles on 2 blocks (8 and 7), GELU" },
  { B: 2, L: 250, K: 72, N: 224, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 5, bias: true, label: "8 tiles of 2 K steps, gated residual in place" },
  { B: 1, L: 300, K: 136, N: 520, w: "f16", a: "bf16", out: "bf16", epi: { split: 2 }, label: "15 tiles, split in two parts of 260" },
];
const gemms = [...tensorCoreGemmCases(PINGPONG_SHAPES, 53), ...wgmmaGemmCases()];

/** A ping-pong call's launch: grid, threads, dynamic shared memory, and its tiles and K steps. */
function launchOf(c: EmulatedCall) {
  const [grid, threads, smem] = /grid (\d+),1,1 threads (\d+) smem (\d+)/.exec(c.launches.at(-1)!)!.slice(1).map(Number) as [number, number, number];
  return { grid, threads, smem, tiles: Math.ceil(c.M! / BM) * Math.ceil(c.N! / BN), steps: Math.ceil(c.K! / 64) };
}

/** How a ping-pong call's wgmma record breaks the turns, or null: every block issued one run per tile
 *  of its own, warpgroups 1, 2, 1, … alternating, each run one whole tile's mainloop. */
function turnsBroken(c: EmulatedCall): string | null {
  const { grid, tiles, steps } = launchOf(c);
  if (c.runs.length !== grid) return `${c.runs.length} of ${grid} blocks issued wgmma`;
  for (const [block, runs] of c.runs) {
    const mine = Math.floor((tiles - 1 - block) / grid) + 1;
    const want = Array.from({ length: mine }, (_, j) => `${1 + (j % 2)}x${steps * WGMMA_PER_STEP}`).join(" ");
    const got = runs.map(([wg, n]) => `${wg}x${n}`).join(" ");
    if (got !== want) return `block ${block} issued ${got.length > 80 ? `${got.slice(0, 80)}…` : got}, not ${want}`;
  }
  return null;
}

describe.skipIf(!harness)("the ping-pong wgmma GEMM on the CPU emulator", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma-pingpong", wgmmaRuns: true });
  for (const c of gemms) {
    test(`gemm ${c.name} keeps the tensor-core promise, on the ping-pong kernel where N and a split's part are even, the consumers taking turns`, async () => {
      const why = await failure(be!, c);
      expect(why).toBeNull();
      const call = be!.calls.at(-1)!;
      expect(call.kernel).toBe(call.N! % 2 === 0 && call.split! % 2 === 0 ? "wgmma-pingpong" : "mma.sync");
      if (call.kernel === "wgmma-pingpong") expect(turnsBroken(call)).toBeNull();
    }, 120_000);
  }

  test("the cases reach every edge: both consumers on several tiles each, odd tile counts, rings turning across tiles and consumers", () => {
    const runs = be!.calls.filter((c) => c.kernel === "wgmma-pingpong").map((c) => ({ ...launchOf(c), call: c }));
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.threads === 384 && r.smem === SMEM)).toBe(true);
    expect(runs.every((r) => r.grid === Math.min(r.tiles, 2))).toBe(true); // one block per multiprocessor, at most
    expect(be!.calls.every((c) => c.launches.length === 1 || c.kernel !== "wgmma-pingpong")).toBe(true);
    const perBlock = (r: (typeof runs)[number]) => r.call.runs.map(([, rs]) => rs.length);
    // both consumers walk two tiles or more in one block, and a block ends on consumer 0's tile
    expect(runs.some((r) => perBlock(r).some((n) => n >= 4))).toBe(true);
    expect(runs.some((r) => perBlock(r).some((n) => n % 2 === 1 && n > 1))).toBe(true);
    // a tile ends mid-turn of the ring (the partner starts at another parity), and tiles shorter than the ring
    expect(runs.some((r) => r.tiles > 2 && r.steps % STAGES !== 0 && r.steps > STAGES)).toBe(true);
    expect(runs.some((r) => r.tiles >= 4 && r.steps < STAGES / 2)).toBe(true);
    // one tile only: consumer 1 has nothing to do and the turn is never handed over
    expect(runs.some((r) => r.tiles === 1)).toBe(true);
  });
});

// Bugs of the ping-pong (KC_PLANTED(n) in gemm_wgmma_pingpong.cu); the cases must catch each one, by a
// result off its promise, the emulator stopping (a barrier misused, a deadlock), or the turns broken.
const PLANTED: [number, string][] = [
  [17, "the consumers take no turns: neither waits for its turn nor hands it over"],
  [18, "each consumer counts only its own K steps, not its partner's, in the stage ring"],
  [19, "the stages' empty barriers expect both consumers, as where they share a tile"],
  [20, "the turn is handed over after the block's last tile too, to a partner with none left"],
  [21, "the turn is handed over before the tile's last K step was issued"],
];

describe.skipIf(!harness)("the emulated cases catch planted ping-pong bugs", () => {
  for (const [n, what] of PLANTED) {
    test(`bug ${n}, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { kernels: "wgmma-pingpong", plant: n, wgmmaRuns: true });
      const turns = () => {
        const call = planted.calls.at(-1);
        const broken = call?.kernel === "wgmma-pingpong" ? turnsBroken(call) : null;
        return broken && `turns broken: ${broken}`;
      };
      const caught = await firstFailure(planted, gemms, turns);
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).not.toBeNull();
    }, 240_000);
  }
});
