// The CUDA mma.sync GEMM (kernels/cuda/gemm_mma.cu, with mma_tile.cuh and the epilogues of
// gemm_epilogue.cuh) and mma.sync attention (attention.cu, attention_mma.cuh) without a GPU: the CPU emulator
// (cuda-emulator/emulator.h) runs the library's own kc_gemm and kc_attention — dispatch, the rounding
// of f32 operands to 16 bits, the kernels as written — on every op-sweep case these kernels take and
// on the cases of op-cases-tensor-cores.ts, which cross every edge of their tiles (M, N, K not
// multiples of the tile, K under one step and over many ring turns, several blocks both ways; each of
// the GEMM's three block tiles both as kc_gemm's model picks it and forced (KINO_CUDA_GEMM_MMA_TILE);
// Lq ≠ Lk, kvLen < Lk,
// block-causal masks, the T5 bias, D 16 to 128, several heads and batch items), with f32 and bf16
// inputs and outputs and every GEMM epilogue, each attention case on the query tiling the model picks
// for the emulator's GPU (attention_mma_tiles.cuh); the attention cases of op-cases-tensor-cores.ts once
// more with the other tiling forced (KINO_CUDA_ATTENTION_BQ), so that each runs on both. Each result
// must keep its tensor-core promise (op-precision.ts); the harnesses are built with AddressSanitizer,
// so a read or write outside any buffer fails a case too.
//
// The last tests plant known bugs in the kernels (KC_PLANTED, common.cuh: fragment indices, the K
// tail, the M edge, the cp.async waits of both rings, the GEMM's next fragments read before their
// barrier, the second fragment set loaded from the wrong k step, the 128×192 tile's partial pass of A
// rows, the key mask, the softmax rescale, the attention warps' key-tile skipping, its blocks' key
// tiles under the last-first order) and require the cases to catch each one: the evidence that a
// passing run means something.
import { describe, expect, test } from "bun:test";
import { attentionCases, gemmCases } from "./op-cases-heavy.ts";
import { gemmEpilogueCases } from "./op-cases-fused.ts";
import { bf16AttentionCases, bf16GemmCases } from "./op-cases-bf16.ts";
import { type MmaTile, mmaTileGemmCases, tensorCoreAttentionCases, tensorCoreGemmCases } from "./op-cases-tensor-cores.ts";
import type { OpCase } from "./op-helpers.ts";
import { type AttentionCall, type GpuFigures, attentionModel, buildAttentionTiles } from "./cuda-emulator/attention-tiles.ts";
import { EmulatedTensorCoreBackend, buildTensorCoreEmulators } from "./cuda-emulator/emulated-tensor-cores.ts";
import { failure, firstFailure } from "./cuda-emulator/wgmma-cases.ts";

const [built, tiles] = await Promise.all([buildTensorCoreEmulators(), buildAttentionTiles()]);
const skip = "skip" in built ? built.skip : "skip" in tiles ? tiles.skip : undefined;
if (skip) console.log(`cuda-emulated-tensor-cores.test.ts: skipped, ${skip}`);
const harness = "skip" in built || "skip" in tiles ? null : built;

/** Whether kc_gemm / kc_attention send a case to mma.sync (gemm.cu, attention.cu): GEMM with bf16/f16
 *  weights and K a positive multiple of 8; attention with D 16, 32, 64 or 128 and a key to see. */
function takesMmaSync(c: OpCase): boolean {
  if (c.op === "gemm") {
    const m = / K (\d+) w (bf16|f16)/.exec(c.name);
    return !!m && Number(m[1]) > 0 && Number(m[1]) % 8 === 0;
  }
  const d = / D (\d+)/.exec(c.name);
  return c.op === "attention" && !!d && [16, 32, 64, 128].includes(Number(d[1])) && !/kvLen 0\b/.test(c.name);
}

/** The GPU of the attention harness's context (cuda-emulator/attention.cpp): two multiprocessors with an A100's figures. */
const EMULATED_GPU: GpuFigures = [2, 8, 0, 164 * 1024, 163 * 1024, 1024, 65536, 2048];
/** An attention case's call, from its name ("B 1 Lq 100 Lk 300 H 2 D 128, kvLen 250, block 48 q+150" or "…, block 40,0"). */
const dims = (c: OpCase): AttentionCall => {
  const [B, Lq, Lk, H, D] = [/^B (\d+)/, / Lq (\d+)/, / Lk (\d+)/, / H (\d+)/, / D (\d+)/].map((re) => Number(re.exec(c.name)![1]));
  const kvLen = / kvLen (\d+)/.exec(c.name), block = / block (\d+)(?: q\+|,)(\d+)/.exec(c.name);
  return { B: B!, Lq: Lq!, H: H!, D: D!, kvLen: kvLen ? Number(kvLen[1]) : Lk!, blockSize: block ? Number(block[1]) : 0, qOffset: block ? Number(block[2]) : 0 };
};
/** The launch's query rows per block, from its dynamic shared memory (attention_mma.cuh: (rows + 3 · 64) · D bf16). */
const launchRows = (launch: string, D: number) => Number(/ smem (\d+)/.exec(launch)![1]) / (2 * D) - 3 * 64;
const queryBlocks = (launch: string) => Number(/grid (\d+),/.exec(launch)![1]);

const autoTiles = mmaTileGemmCases("auto");
/** The tile kc_gemm must pick for the cases that name one. */
const picks = new Map(autoTiles.map(([c, tile]) => [c.name, tile]));
const gemms = [...gemmCases(), ...gemmEpilogueCases(), ...bf16GemmCases()].filter(takesMmaSync).concat(tensorCoreGemmCases(), autoTiles.map(([c]) => c));
/** The GEMM's launches (cuda-emulator/emulator.h: "launch grid X,Y,Z threads T smem S"): blocks across N
 *  and M, and the shared memory that tells the tiles apart (gemm_mma.cu: 4 stages of (BM + BN) rows of 64
 *  bytes). */
const gemmLaunches = (b: EmulatedTensorCoreBackend) => b.calls.filter((c) => c.op === "gemm").flatMap((c) => c.launches).map((l) => {
  const [x, y, threads, smem] = /grid (\d+),(\d+),\d+ threads (\d+) smem (\d+)/.exec(l)!.slice(1).map(Number);
  return { x: x!, y: y!, threads: threads!, smem: smem! };
});
const TILES: Record<MmaTile, { threads: number; smem: number }> = { "128x256": { threads: 256, smem: 4 * (128 + 256) * 64 },
  "128x192": { threads: 192, smem: 4 * (128 + 192) * 64 }, "128x128": { threads: 128, smem: 4 * (128 + 128) * 64 } };
const isTile = (l: ReturnType<typeof gemmLaunches>[number], t: MmaTile) => l.threads === TILES[t].threads && l.smem === TILES[t].smem;
const attentions = [...attentionCases(), ...bf16AttentionCases()].filter(takesMmaSync).concat(tensorCoreAttentionCases());
/** The query rows per block kc_attention must pick for each attention case: the model's on the emulator's GPU. */
const autoRows = new Map(harness && !("skip" in tiles) ? attentionModel(tiles.path, EMULATED_GPU, attentions.map(dims)).map((m, i) => [attentions[i]!.name, m.pick]) : []);

describe.skipIf(!harness)("the mma.sync GEMM and attention on the CPU emulator", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness);
  for (const c of [...gemms, ...attentions]) {
    test(`${c.op} ${c.name} runs mma.sync and keeps the tensor-core promise`, async () => {
      const why = await failure(be!, c);
      const call = be!.calls.at(-1)!;
      expect(call.kernel).toBe("mma.sync");
      if (c.op === "attention") {
        expect(call.attention).toEqual(dims(c));
        expect(launchRows(call.launches[0]!, dims(c).D)).toBe(autoRows.get(c.name)!);
        expect(queryBlocks(call.launches[0]!)).toBe(Math.ceil(dims(c).Lq / autoRows.get(c.name)!));
      }
      const tile = picks.get(c.name);
      if (tile) expect(gemmLaunches(be!).at(-1)).toMatchObject(TILES[tile]);
      expect(why).toBeNull();
    }, 60_000);
  }

  test("the cases reach every tile edge: several tiles in M and N, a ring that wraps, several key tiles and query blocks", () => {
    const grids = (op: string) => be!.calls.filter((c) => c.op === op).flatMap((c) => c.launches).map((l) => /grid (\d+),(\d+),(\d+)/.exec(l)!.slice(1).map(Number));
    const gemm = gemmLaunches(be!);
    expect(gemm.some((l) => isTile(l, "128x256") && l.x >= 2 && l.y >= 2)).toBe(true); // N and M over several tiles of each
    expect(gemm.some((l) => isTile(l, "128x192") && l.x >= 3 && l.y >= 2)).toBe(true);
    expect(gemm.some((l) => isTile(l, "128x128"))).toBe(true);
    expect(gemm.every((l) => (Object.keys(TILES) as MmaTile[]).some((t) => isTile(l, t)))).toBe(true);
    expect(grids("attention").some(([x, y, z]) => x! >= 3 && y! >= 2 && z! >= 2)).toBe(true); // query blocks × heads × batch
    expect([...autoRows.values()].includes(64) && [...autoRows.values()].includes(128)).toBe(true); // both tilings
    expect(be!.calls.every((c) => c.launches.length === 1)).toBe(true); // one kernel per call: nothing fell back
  });
});

describe.skipIf(!harness)("the mma.sync GEMM with its block tile forced", () => {
  const forced = harness && Object.fromEntries((Object.keys(TILES) as MmaTile[]).map((t) => [t, new EmulatedTensorCoreBackend(harness, { gemmMmaTile: t })]));
  for (const [c, tile] of mmaTileGemmCases("forced")) {
    test(`${tile}: gemm ${c.name} keeps the tensor-core promise`, async () => {
      const be = forced![tile]!;
      const why = await failure(be, c);
      expect(be.calls.at(-1)!.kernel).toBe("mma.sync");
      expect(gemmLaunches(be).at(-1)).toMatchObject(TILES[tile]);
      expect(why).toBeNull();
    }, 60_000);
  }
  test("128x128: the cases run several blocks across both M and N", () => {
    expect(gemmLaunches(forced!["128x128"]!).some((l) => l.x >= 3 && l.y >= 3)).toBe(true);
  });
});

describe.skipIf(!harness)("the mma.sync attention with the tiling the model did not pick forced", () => {
  const forced = harness && { 64: new EmulatedTensorCoreBackend(harness, { attentionBq: 64 }), 128: new EmulatedTensorCoreBackend(harness, { attentionBq: 128 }) };
  for (const c of tensorCoreAttentionCases()) {
    const rows = autoRows.get(c.name) === 64 ? 128 : 64;
    test(`attention ${c.name} keeps the tensor-core promise in ${Math.ceil(dims(c).Lq / rows)} query blocks of ${rows} rows`, async () => {
      const be = forced![rows];
      const why = await failure(be, c);
      const call = be.calls.at(-1)!;
      expect(call.kernel).toBe("mma.sync");
      expect(launchRows(call.launches[0]!, dims(c).D)).toBe(rows);
      expect(queryBlocks(call.launches[0]!)).toBe(Math.ceil(dims(c).Lq / rows));
      expect(why).toBeNull();
    }, 60_000);
  }
});

// Split over the keys (attention_mma.cuh, KINO_CUDA_ATTENTION_PARTS): each block's key tiles in 3 parts,
// merged by the combine (attention_combine.cu). The cases' few key tiles never pay for parts by default
// (attention_mma_tiles.cuh), so they are forced; parts with no key tile (2 tiles in 3 parts) come out
// empty, and the combine must give them no weight.
describe.skipIf(!harness)("the mma.sync attention split over its keys in 3 parts", () => {
  const parts = harness && new EmulatedTensorCoreBackend(harness, { attentionParts: 3 });
  for (const c of tensorCoreAttentionCases()) {
    test(`attention ${c.name} keeps the tensor-core promise`, async () => {
      const why = await failure(parts!, c);
      const call = parts!.calls.at(-1)!;
      expect(call.kernel).toBe("mma.sync");
      const { B, H, D, Lq } = dims(c), rows = launchRows(call.launches[0]!, D), items = Math.ceil(Lq / rows) * H * B;
      expect(call.launches).toEqual([expect.stringMatching(new RegExp(`^launch grid ${Math.ceil(Lq / rows)},${H},${3 * B} threads 128 `)),
        `launch grid ${items},1,1 threads 256 smem 0`]);
      expect(why).toBeNull();
    }, 60_000);
  }
});

// Each planted bug (KC_PLANTED(n) in the kernel source) with the op whose cases must catch it, and the
// kernel settings it needs to be reached.
const PLANTED: [number, "gemm" | "attention", string, { attentionParts?: number }?][] = [
  [1, "gemm", "B fragment: ldmatrix takes the k half of the A layout (mma_tile.cuh)"],
  [2, "gemm", "K tail: the chunk at k = K is loaded instead of zero-filled (mma_ring.cuh)"],
  [3, "gemm", "M edge: row M is stored (gemm_mma.cu epilogue)"],
  [31, "gemm", "cp.async ring: waits for one group too few (mma_ring.cuh)"],
  [32, "gemm", "the next tile's first fragments are read before the barrier that makes them whole (mma_ring.cuh)"],
  [33, "gemm", "128×192 tile: the last, partial pass of A rows (rows 96–127 of 128, 48 per pass) is left out (mma_ring.cuh)"],
  [38, "gemm", "the second fragment set is loaded from the first k step again (mma_ring.cuh)"],
  [4, "attention", "key mask: col ≤ lim instead of col < lim (attention_mma.cuh)"],
  [5, "attention", "V fragment: ldmatrix.trans takes the wrong 8-key half (attention_mma.cuh)"],
  [6, "attention", "online softmax: the second row's output is rescaled by the first row's factor (attention_mma.cuh)"],
  [29, "attention", "K/V ring: K tile t is read before its cp.async group is waited for (attention_mma.cuh)"],
  [30, "attention", "warp skipping: a warp stops at its first row's keys, not its last row's (attention_mma.cuh)"],
  [36, "attention", "last-first order: a block loads the key tiles of the query tile its index names, not of the one it computes (attention_mma.cuh)"],
  [37, "attention", "split over the keys: every part starts at the first key tile (attention_mma.cuh)", { attentionParts: 3 }],
];

describe.skipIf(!harness)("the emulated cases catch planted kernel bugs", () => {
  for (const [n, op, what, settings] of PLANTED) {
    test(`bug ${n}, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { plant: n, ...settings });
      const caught = await firstFailure(planted, op === "gemm" ? gemms : attentions);
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).not.toBeNull();
    }, 120_000);
  }
});
