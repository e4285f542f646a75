// The mma.sync convolution's tile model (kernels/cuda/conv_mma_tiles.cuh, run by cuda-emulator/conv-tiles.cpp)
// on the GPUs it is for, from their figures (cudaDeviceProp, as kc_create reads them): which block tile
// kc_conv3d takes at the Wan2.1 VAE decoder's 3³ convs at 832x480 (tools/gpu-check-conv.py's levels: a
// chunk's frames at each level) on an A100 (108 SMs), an H100 or H200 (132), an L40S (142) and an A10 (72,
// sm_86), and the blocks per SM and waves behind each choice (conv_mma.cu's header has the table). That
// kc_conv3d launches the tile the model picks, and that each tile computes the right thing, is
// cuda-emulated.test.ts's; that the registers assumed are ptxas's, cuda-ptx.test.ts's.
import { describe, expect, test } from "bun:test";
import { GPU_FIGURES as GPUS } from "./cuda-emulator/gpu-figures.ts";
import { type ConvChoice, buildConvTiles, convModel, convModelRegisters } from "./cuda-emulator/conv-tiles.ts";
import { CONV_MMA_TILES } from "./cuda-emulator/emulated-backend.ts";
import { CONV_MMA_TILES as CHECKED_TILES } from "../../tools/gpu-verdicts-tiles.ts";

const built = await buildConvTiles();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-conv-mma-tiles.test.ts: skipped, ${skip}`);

/** Output voxels (frames × rows × columns) and Cout of each level. */
const LEVELS = {
  "384→384 104x60 T1": { M: 1 * 60 * 104, Cout: 384 },
  "384→384 208x120 T2": { M: 2 * 120 * 208, Cout: 384 },
  "192→192 416x240 T4": { M: 4 * 240 * 416, Cout: 192 },
  "96→96 832x480 T4": { M: 4 * 480 * 832, Cout: 96 },
  "96→3 head": { M: 4 * 480 * 832, Cout: 3 },
};
type Level = keyof typeof LEVELS;
const ALL = Object.keys(LEVELS) as Level[];

function model(gpu: string): Record<Level, ConvChoice> {
  if ("skip" in built) throw new Error(built.skip);
  const out = convModel(built.path, GPUS[gpu]!, ALL.map((l) => LEVELS[l]));
  return Object.fromEntries(ALL.map((l, i) => [l, out[i]!])) as Record<Level, ConvChoice>;
}
const picks = (m: Record<Level, ConvChoice>) => Object.fromEntries(ALL.map((l) => [l, m[l].pick]));

describe.skipIf(!!skip)("the mma.sync convolution's tile model at the Wan-VAE decoder's levels", () => {
  test("A100, 108 SMs (2 cycles an MMA: every tile bound by the tensor cores): the tile whose waves fill best, ties to 128×192", () => {
    const m = model("A100");
    expect(picks(m)).toEqual({ "384→384 104x60 T1": "128x192", "384→384 208x120 T2": "128x192", "192→192 416x240 T4": "128x192",
      "96→96 832x480 T4": "256x96", "96→3 head": "256x16" });
    // 98 tiles of 128×192 and 100 of 256×96 in 108 slots, 196 of 128×96 in 216: one wave each, 768 cycles each: a tie
    expect(m["384→384 104x60 T1"].tiles).toEqual({ "128x192": { blocks: 1, waves: 1, cycles: 768 }, "256x96": { blocks: 1, waves: 1, cycles: 768 },
      "128x96": { blocks: 2, waves: 1, cycles: 768 }, "256x16": { blocks: 2, waves: 3, cycles: 1968 } });
    // Cout 96 in one 96-wide column: 6240 tiles of 256×96 or 12480 of 128×96 two to an SM, 58 waves; 128×192 pads Cout to 192
    expect(m["96→96 832x480 T4"].tiles["256x96"]).toEqual({ blocks: 1, waves: 58, cycles: 58 * 768 });
    expect(m["96→96 832x480 T4"].tiles["128x192"]!.cycles).toBe(2 * 58 * 768);
  });

  test("H100/H200, 132 SMs (1 cycle an MMA: shared memory the bound, least per MMA for 64×64 warps): 128×192 wherever Cout fills it", () => {
    const m = model("H100");
    expect(picks(m)).toEqual({ "384→384 104x60 T1": "128x192", "384→384 208x120 T2": "128x192", "192→192 416x240 T4": "128x192",
      "96→96 832x480 T4": "256x96", "96→3 head": "256x16" });
    // 780 tiles of 128×192 or of 256×96 in 132 slots: 6 waves at 544 and 624 cycles (68 and 78 KiB of shared memory a K step);
    // 1560 of 128×96 in 264: 6 waves of two blocks at 336
    expect(m["384→384 208x120 T2"].tiles).toEqual({ "128x192": { blocks: 1, waves: 6, cycles: 6 * 544 }, "256x96": { blocks: 1, waves: 6, cycles: 6 * 624 },
      "128x96": { blocks: 2, waves: 6, cycles: 6 * 2 * 336 }, "256x16": { blocks: 2, waves: 18, cycles: 18 * 2 * 328 } });
  });

  test("L40S, 142 SMs, and A10, 72 (one block of any tile an SM, 4 cycles an MMA): the tile that quantizes best, 128×96 where its waves fill and the wider ones' do not", () => {
    const l40s = model("L40S"), a10 = model("A10");
    expect(picks(l40s)).toEqual({ "384→384 104x60 T1": "128x192", "384→384 208x120 T2": "128x96", "192→192 416x240 T4": "128x192",
      "96→96 832x480 T4": "256x96", "96→3 head": "256x16" });
    expect(picks(a10)).toEqual({ "384→384 104x60 T1": "128x96", "384→384 208x120 T2": "128x192", "192→192 416x240 T4": "128x96",
      "96→96 832x480 T4": "256x96", "96→3 head": "256x16" });
    for (const m of [l40s, a10]) for (const l of ALL) expect(Object.values(m[l].tiles).map((t) => t.blocks)).toEqual([1, 1, 1, 1]);
    // 1560 tiles of 128×96 in 11 waves of 142 (10.99) at 768 cycles, against 780 of 128×192 in 6 (5.49) at 1536
    expect(l40s["384→384 208x120 T2"].tiles["128x96"]).toEqual({ blocks: 1, waves: 11, cycles: 11 * 768 });
    expect(l40s["384→384 208x120 T2"].tiles["128x192"]).toEqual({ blocks: 1, waves: 6, cycles: 6 * 1536 });
    // 196 tiles of 128×96 in 3 waves of 72 (2.72), against 98 of 128×192 in 2 (1.36)
    expect(a10["384→384 104x60 T1"].tiles["128x96"]).toEqual({ blocks: 1, waves: 3, cycles: 3 * 768 });
    expect(a10["384→384 104x60 T1"].tiles["128x192"]).toEqual({ blocks: 1, waves: 2, cycles: 2 * 1536 });
  });

  test("Cout ≤ 16 takes the narrow tile on every GPU, and only there: 17 channels already take a wide one", () => {
    if ("skip" in built) throw new Error(built.skip);
    for (const gpu of Object.values(GPUS)) {
      const [head, c16, c17] = convModel(built.path, gpu, [{ M: 1597440, Cout: 3 }, { M: 1597440, Cout: 16 }, { M: 1597440, Cout: 17 }]);
      expect([head!.pick, c16!.pick]).toEqual(["256x16", "256x16"]);
      expect(c17!.pick).not.toBe("256x16");
    }
  });

  test("the tiles, in the model's order, are the ones the emulated tests force and the device check's verdict weighs", () => {
    if ("skip" in built) throw new Error(built.skip);
    const tiles = convModelRegisters(built.path).map((r) => r.tile);
    expect(tiles).toEqual([...CONV_MMA_TILES]);
    expect(tiles).toEqual([...CHECKED_TILES]);
  });
});
