// The mma.sync convolution's tile model (kernels/cuda/conv_mma_tiles.cuh) through the conv-tiles harness:
// for cuda-conv-mma-tiles.test.ts, which checks its picks on the GPUs it is for, cuda-emulated.test.ts,
// which checks that kc_conv3d launches them, and cuda-ptx.test.ts, which holds the registers it assumes
// to ptxas's.
import type { GpuFigures } from "./attention-tiles.ts";
import { buildEmulator } from "./emulated-backend.ts";

/** One tile as the model weighs it for a call: blocks per SM, waves, time (SM cycles per K step). */
export interface ConvTileFigures { blocks: number; waves: number; cycles: number }
/** The tile picked ("128x192") and each tile's figures. */
export interface ConvChoice { pick: string; tiles: Record<string, ConvTileFigures> }

export const buildConvTiles = () => buildEmulator("conv-tiles");

function run(harness: string, args: string[]): string[] {
  const r = Bun.spawnSync([harness, ...args], { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
  if (r.exitCode !== 0) throw new Error(`conv-tiles failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim().split("\n");
}

/** The model's choice for each call (M output voxels, Cout channels) on the GPU of `gpu`'s figures, in the calls' order. */
export function convModel(harness: string, gpu: GpuFigures, calls: { M: number; Cout: number }[]): ConvChoice[] {
  const out: ConvChoice[] = [];
  let at: ConvChoice | null = null;
  for (const line of run(harness, [...gpu.map(String), ...calls.flatMap((c) => [String(c.M), String(c.Cout)])])) {
    const t = /^tile (\d+x\d+) blocks (\d+) waves (\d+) cycles (\d+)$/.exec(line), p = /^pick (\d+x\d+)$/.exec(line);
    if (/^conv \d+ \d+$/.test(line)) out.push(at = { pick: "", tiles: {} });
    else if (t) at!.tiles[t[1]!] = { blocks: Number(t[2]), waves: Number(t[3]), cycles: Number(t[4]) };
    else if (p) at!.pick = p[1]!;
    else throw new Error(`conv-tiles printed ${line}`);
  }
  if (out.length !== calls.length) throw new Error(`conv-tiles answered ${out.length} of ${calls.length} calls`);
  return out;
}

/** The registers per thread the model assumes, per tile ("128x192") and target. */
export function convModelRegisters(harness: string): { tile: string; sm_80: number; sm_90a: number }[] {
  return run(harness, ["registers"]).map((line) => {
    const m = /^registers (\d+x\d+) sm_80 (\d+) sm_90a (\d+)$/.exec(line);
    if (!m) throw new Error(`conv-tiles printed ${line}`);
    return { tile: m[1]!, sm_80: Number(m[2]), sm_90a: Number(m[3]) };
  });
}
