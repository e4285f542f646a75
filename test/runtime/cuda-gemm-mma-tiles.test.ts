// The mma.sync GEMM's tile model (kernels/cuda/gemm_mma_tiles.cuh, run by cuda-emulator/gemm-tiles.cpp)
// on the GPUs it is for, from their figures (cudaDeviceProp, as kc_create reads them): which block tile
// kc_gemm takes at Wan2.1-1.3B's GEMMs (M = 4680 tokens) and at 4096³ on an A100 (108 SMs), an H100 or
// H200 (132) and an L40S (142), and the blocks per SM and waves behind each choice (gemm_mma.cu's header
// has the table). That kc_gemm launches the tile the model picks, and that each tile computes the
// right thing, is cuda-emulated-tensor-cores.test.ts's.
import { describe, expect, test } from "bun:test";
import { buildEmulator } from "./cuda-emulator/emulated-backend.ts";
import { GPU_FIGURES as GPUS } from "./cuda-emulator/gpu-figures.ts";

const built = await buildEmulator("gemm-tiles");
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-gemm-mma-tiles.test.ts: skipped, ${skip}`);

const SHAPES = { "4096³": [4096, 4096], QKV: [4680, 4608], "O, cross-Q, FFN down": [4680, 1536], "FFN up": [4680, 8960] };
type Shape = keyof typeof SHAPES;

interface Choice { pick: string; tiles: Record<string, { blocks: number; waves: number; cycles: number }> }
function model(gpu: keyof typeof GPUS, shapes: Shape[]): Record<string, Choice> {
  if ("skip" in built) throw new Error(built.skip);
  const r = Bun.spawnSync([built.path, ...GPUS[gpu].map(String), ...shapes.flatMap((s) => SHAPES[s].map(String))],
    { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
  if (r.exitCode !== 0) throw new Error(`gemm-tiles failed: ${r.stderr.toString()}`);
  const out: Record<string, Choice> = {};
  let at: Choice | null = null;
  for (const line of r.stdout.toString().trim().split("\n")) {
    const g = /^gemm (\d+) (\d+)$/.exec(line), t = /^tile (\S+) blocks (\d+) waves (\d+) cycles (\d+)$/.exec(line), p = /^pick (\S+)$/.exec(line);
    if (g) out[shapes[Object.keys(out).length]!] = at = { pick: "", tiles: {} };
    else if (t) at!.tiles[t[1]!] = { blocks: Number(t[2]), waves: Number(t[3]), cycles: Number(t[4]) };
    else if (p) at!.pick = p[1]!;
    else throw new Error(`gemm-tiles printed ${line}`);
  }
  return out;
}
const ALL = Object.keys(SHAPES) as Shape[];

describe.skipIf(!!skip)("the mma.sync GEMM's tile model", () => {
  test("A100, 108 SMs (2 cycles an MMA: every tile bound by the tensor cores): 128×192 where 128×256 leaves a wave two-thirds empty", () => {
    const m = model("A100", ALL);
    expect(Object.fromEntries(ALL.map((s) => [s, m[s]!.pick]))).toEqual({ "4096³": "128x256", QKV: "128x192", "O, cross-Q, FFN down": "128x192", "FFN up": "128x256" });
    // 222 tiles of 128×256 take 3 waves, the third holding 6 tiles; 296 of 128×192 take 3 full ones at 3/4 the cycles
    expect(m["O, cross-Q, FFN down"]!.tiles).toEqual({ "128x256": { blocks: 1, waves: 3, cycles: 3072 }, "128x192": { blocks: 1, waves: 3, cycles: 2304 },
      "128x128": { blocks: 2, waves: 3, cycles: 3072 } });
    // a tie between 128×256 and two blocks of 128×128 per SM (twice the tiles, twice the slots) goes to the bigger tile
    expect(m["4096³"]!.tiles["128x256"]!.cycles).toBe(m["4096³"]!.tiles["128x128"]!.cycles);
  });

  test("H100/H200, 132 SMs (1 cycle an MMA: shared memory the bound, least for 128×256): 128×192 at QKV only", () => {
    const m = model("H100", ALL);
    expect(Object.fromEntries(ALL.map((s) => [s, m[s]!.pick]))).toEqual({ "4096³": "128x256", QKV: "128x192", "O, cross-Q, FFN down": "128x256", "FFN up": "128x256" });
    // 666 tiles of 128×256: 5.05 waves → 6 at 704 cycles; 888 of 128×192: 6.73 → 7 at 544
    expect(m.QKV!.tiles).toEqual({ "128x256": { blocks: 1, waves: 6, cycles: 4224 }, "128x192": { blocks: 1, waves: 7, cycles: 3808 },
      "128x128": { blocks: 2, waves: 6, cycles: 4608 } });
  });

  test("L40S, 142 SMs (99 KiB a block, 100 an SM: one block of any tile): the narrowest tile that quantizes best", () => {
    const m = model("L40S", ALL);
    expect(Object.fromEntries(ALL.map((s) => [s, m[s]!.pick]))).toEqual({ "4096³": "128x192", QKV: "128x256", "O, cross-Q, FFN down": "128x256", "FFN up": "128x128" });
    for (const s of ALL) expect(Object.values(m[s]!.tiles).map((t) => t.blocks)).toEqual([1, 1, 1]);
    expect(m["FFN up"]!.tiles).toEqual({ "128x256": { blocks: 1, waves: 10, cycles: 20480 }, "128x192": { blocks: 1, waves: 13, cycles: 19968 },
      "128x128": { blocks: 1, waves: 19, cycles: 19456 } });
  });
});
