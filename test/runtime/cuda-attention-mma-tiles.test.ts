// The mma.sync attention's tiling model (kernels/cuda/attention_mma_tiles.cuh, run by
// cuda-emulator/attention-tiles.cpp) on the GPUs it is for, from their figures (cudaDeviceProp, as
// kc_create reads them): how many query rows per block kc_attention takes at Wan2.1-1.3B's
// self-attention (12 heads × 128, 4680 tokens a chunk) — uniform keys, a streaming chunk under a
// block-causal mask, a block-causal pass over a whole clip — and at smaller grids, on an A100 (108 SMs),
// an H100 or H200 (132), an L40S (142) and an A10 (72, sm_86), with the blocks per SM, cycles per key
// tile and waves behind each pick (attention.cu's header has the table). That kc_attention launches the
// pick is cuda-emulated-tensor-cores.test.ts's; that the registers assumed are ptxas's, cuda-ptx.test.ts's.
import { describe, expect, test } from "bun:test";
import { type AttentionCall, type Choice, attentionModel, buildAttentionTiles } from "./cuda-emulator/attention-tiles.ts";
import { GPU_FIGURES as GPUS } from "./cuda-emulator/gpu-figures.ts";

const built = await buildAttentionTiles();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-attention-mma-tiles.test.ts: skipped, ${skip}`);

const wan = (Lq: number, kvLen: number, blockSize = 0, qOffset = 0): AttentionCall => ({ B: 1, Lq, H: 12, D: 128, kvLen, blockSize, qOffset });
const SHAPES = {
  "Wan, 4680 keys": wan(4680, 4680),
  "Wan, 32760 keys": wan(4680, 32760),
  "streaming chunk 2, block-causal": wan(4680, 9360, 4680, 4680),
  "block-causal clip of 4 chunks": wan(18720, 18720, 4680),
  "3120 tokens": wan(3120, 3120),
  "1020 tokens": wan(1020, 1020),
  "a decode step": wan(1, 4680),
};
type Shape = keyof typeof SHAPES;
const ALL = Object.keys(SHAPES) as Shape[];

function modelOf(gpu: string, calls: AttentionCall[]): Choice[] {
  if ("skip" in built) throw new Error(built.skip);
  return attentionModel(built.path, GPUS[gpu]!, calls);
}
function model(gpu: string, shapes: Shape[] = ALL): Record<string, Choice> {
  const out = modelOf(gpu, shapes.map((s) => SHAPES[s]));
  return Object.fromEntries(shapes.map((s, i) => [s, out[i]!]));
}
const picks = (m: Record<string, Choice>) => Object.fromEntries(Object.entries(m).map(([s, c]) => [s, c.pick]));

/** Per head of the block-causal clip, each query tile's key tiles (the visible keys of its last row, in 64s). */
function keyTiles(c: AttentionCall, rows: number): number[] {
  return Array.from({ length: Math.ceil(c.Lq / rows) }, (_, x) => {
    const last = Math.min((x + 1) * rows, c.Lq) - 1;
    return Math.ceil(Math.min(c.kvLen, (Math.floor((c.qOffset + last) / c.blockSize) + 1) * c.blockSize) / 64);
  });
}

describe.skipIf(!!skip)("the mma.sync attention's tiling model", () => {
  test("A100, 108 SMs (2 cycles an MMA: 128 rows bound by the tensor cores, 64 by shared memory): 128 rows at Wan's shapes, 64 where 128 leaves a second wave mostly empty", () => {
    const m = model("A100");
    expect(picks(m)).toEqual({ "Wan, 4680 keys": 128, "Wan, 32760 keys": 128, "streaming chunk 2, block-causal": 128, "block-causal clip of 4 chunks": 128,
      "3120 tokens": 64, "1020 tokens": 64, "a decode step": 64 });
    // 444 blocks of 128 rows in 216 slots: 3 waves (2.06), 74 key tiles at 2 · 2048 cycles; 888 of 64 rows: 5 waves (4.11) at 2 · 1280
    expect(m["Wan, 4680 keys"]!.rows).toMatchObject({ 128: { perSm: 2, step: 2048, blocks: 444, keyTiles: [74, 74], cycles: 3 * 74 * 2 * 2048 },
      64: { perSm: 2, step: 1280, blocks: 888, keyTiles: [74, 74], cycles: 5 * 74 * 2 * 1280 } });
    // 300 blocks: 2 waves (1.39) of 128 rows, 3 (2.72) of 64 at 5/8 the cycles
    expect(m["3120 tokens"]!.rows).toMatchObject({ 128: { blocks: 300, cycles: 2 * 49 * 2 * 2048 }, 64: { blocks: 588, cycles: 3 * 49 * 2 * 1280 } });
  });

  test("H100/H200, 132 SMs (1 cycle an MMA: shared memory bounds both, 64 rows at 5/3 the cycles per query): 128 rows but for grids of at most one 128-row block an SM", () => {
    const m = model("H100");
    expect(picks(m)).toEqual({ "Wan, 4680 keys": 128, "Wan, 32760 keys": 128, "streaming chunk 2, block-causal": 128, "block-causal clip of 4 chunks": 128,
      "3120 tokens": 128, "1020 tokens": 64, "a decode step": 64 });
    // 444 blocks in 264 slots: 2 waves (1.68) at 2 · 1536; 888: 4 waves (3.36) at 2 · 1280
    expect(m["Wan, 4680 keys"]!.rows).toMatchObject({ 128: { perSm: 2, step: 1536, cycles: 2 * 74 * 2 * 1536 }, 64: { perSm: 2, step: 1280, cycles: 4 * 74 * 2 * 1280 } });
    // 96 blocks of 128 rows or 192 of 64: one wave either way, 64 rows at 1280 cycles a key tile to 1536
    expect(m["1020 tokens"]!.rows).toMatchObject({ 128: { blocks: 96, cycles: 16 * 2 * 1536 }, 64: { blocks: 192, cycles: 16 * 2 * 1280 } });
  });

  test("L40S, 142 SMs, and A10, 72 (100 KiB an SM: one block of either; 4 cycles an MMA: the same cycles per query): 64 rows wherever they fill waves better, 128 on a tie", () => {
    const l40s = model("L40S"), a10 = model("A10");
    expect(picks(l40s)).toEqual({ "Wan, 4680 keys": 64, "Wan, 32760 keys": 64, "streaming chunk 2, block-causal": 64, "block-causal clip of 4 chunks": 64,
      "3120 tokens": 64, "1020 tokens": 128, "a decode step": 64 });
    expect(picks(a10)).toEqual({ ...picks(l40s), "1020 tokens": 64 });
    // 444 blocks on 142 SMs: 4 waves (3.13) at 4096 cycles; 888: 7 (6.25) at 2048
    expect(l40s["Wan, 4680 keys"]!.rows).toMatchObject({ 128: { perSm: 1, step: 4096, cycles: 4 * 74 * 4096 }, 64: { perSm: 1, step: 2048, cycles: 7 * 74 * 2048 } });
    // 96 blocks in one wave, 192 in two at half the cycles: a tie, which goes to 128 rows
    expect(l40s["1020 tokens"]!.rows[128].cycles).toBe(l40s["1020 tokens"]!.rows[64].cycles);
    // A10: 444 blocks on 72 SMs, 7 waves (6.17); 888, 13 (12.33)
    expect(a10["Wan, 4680 keys"]!.rows).toMatchObject({ 128: { cycles: 7 * 74 * 4096 }, 64: { cycles: 13 * 74 * 2048 } });
  });

  test("every block of a streaming chunk sees the same keys: waves in closed form, the picks of unmasked attention over as many keys", () => {
    for (const gpu of Object.keys(GPUS)) {
      const m = model(gpu, ["streaming chunk 2, block-causal"]), plain = modelOf(gpu, [wan(4680, 9360)])[0]!;
      expect(m["streaming chunk 2, block-causal"]!.rows).toEqual(plain.rows);
      expect(m["streaming chunk 2, block-causal"]!.rows[128].keyTiles).toEqual([147, 147]);
    }
  });

  test("a block-causal clip: the list schedule lies between the perfect balance of its key tiles and that plus the longest block; launching each head's query tiles last-first shortens it", () => {
    const clip = SHAPES["block-causal clip of 4 chunks"];
    for (const gpu of Object.keys(GPUS)) {
      const m = model(gpu, ["block-causal clip of 4 chunks"])["block-causal clip of 4 chunks"]!;
      for (const rows of [128, 64] as const) {
        const t = m.rows[rows], tiles = keyTiles(clip, rows), pace = t.perSm * t.step, slots = GPUS[gpu]![0] * t.perSm;
        expect(t.keyTiles).toEqual([74, 293]);
        expect(t.blocks).toBe(tiles.length * 12);
        const balanced = Math.ceil((12 * tiles.reduce((a, b) => a + b, 0)) / slots) * pace;
        expect(t.cycles).toBeGreaterThanOrEqual(balanced);
        expect(t.cycles).toBeLessThanOrEqual(balanced + 293 * pace);
        expect(t.cycles).toBeLessThan(t.inOrder); // the longest tiles first leave the short ones to even out the last wave
      }
    }
    // on 108 and 132 SMs the bounds alone decide: 64 rows' perfect balance is past 128 rows' worst
    for (const gpu of ["A100", "H100"]) {
      const m = model(gpu, ["block-causal clip of 4 chunks"])["block-causal clip of 4 chunks"]!;
      const bound = (rows: 128 | 64) => (12 * keyTiles(clip, rows).reduce((a, b) => a + b, 0)) / (GPUS[gpu]![0] * m.rows[rows].perSm) * m.rows[rows].perSm * m.rows[rows].step;
      expect(bound(64)).toBeGreaterThan(bound(128) + 293 * 2 * m.rows[128].step);
    }
  });

  test("parts over the keys fill a part-empty last wave: Wan's chunk in 4 parts on 108 and 132 SMs; a decode step's few blocks in 4; none where they save under a tenth, parts would span under 16 key tiles, or work is uneven", () => {
    const parts = (gpu: string) => Object.fromEntries(Object.entries(model(gpu)).map(([s, c]) => [s, c.parts.parts]));
    // A100: 444 blocks of 512 key tiles in 216 slots, 3 waves (1536 tiles a slot) → 4 parts of 128, 9 waves (1152)
    expect(model("A100")["Wan, 32760 keys"]!.parts).toEqual({ parts: 4, waves: 9, tiles: 128 });
    // H200: 2 waves (1024) → 7 waves of 128 (896); at 4680 keys 2 · 74 = 148 → 7 · 19 = 133
    expect(model("H100")["Wan, 32760 keys"]!.parts).toEqual({ parts: 4, waves: 7, tiles: 128 });
    expect(model("H100")["Wan, 4680 keys"]!.parts).toEqual({ parts: 4, waves: 7, tiles: 19 });
    // 3120 tokens: 300 blocks in 264 slots, 2 waves of 49 → 3 parts, 4 waves of 17; a decode step's 12 blocks of
    // 74 key tiles leave most SMs idle → 4 parts of 19; 1020 tokens' 16 key tiles cannot be cut into parts of 16
    expect(parts("H100")).toEqual({ "Wan, 4680 keys": 4, "Wan, 32760 keys": 4, "streaming chunk 2, block-causal": 4, "block-causal clip of 4 chunks": 1,
      "3120 tokens": 3, "1020 tokens": 1, "a decode step": 4 });
    // L40S, 64 rows: 888 blocks in 142 slots, 7 waves (3584) → at best 3 parts, 19 waves of 171 (3249): 9 % saved, kept whole
    expect(parts("L40S")["Wan, 32760 keys"]).toBe(1);
  });
});
