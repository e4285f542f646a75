// The mma.sync attention's tiling model (kernels/cuda/attention_mma_tiles.cuh) through the
// attention-tiles harness: for cuda-attention-mma-tiles.test.ts, which checks its picks on the GPUs it is
// for, cuda-emulated-tensor-cores.test.ts, which checks that kc_attention launches them, and
// cuda-ptx.test.ts, which holds the registers it assumes to ptxas's.
import { buildEmulator } from "./emulated-backend.ts";

import type { GpuFigures } from "./gpu-figures.ts";
export type { GpuFigures };

/** One kc_attention call as the model sees it. */
export interface AttentionCall { B: number; Lq: number; H: number; D: number; kvLen: number; blockSize: number; qOffset: number }

/** The model on one tiling: blocks per SM, cycles per key tile of a block, blocks, the fewest and most key
 *  tiles of a block, its time (cycles) in the kernel's last-first order and with query tiles in index order. */
export interface Tiling { perSm: number; step: number; blocks: number; keyTiles: [number, number]; cycles: number; inOrder: number }
/** The tiling picked, each tiling's figures, and on the pick the parts over the keys: how many, the waves of
 *  blocks they make and the key tiles of the largest part. */
export interface Choice { pick: 64 | 128; rows: Record<128 | 64, Tiling>; parts: { parts: number; waves: number; tiles: number } }

export const buildAttentionTiles = () => buildEmulator("attention-tiles");

function run(harness: string, args: string[]): string[] {
  const r = Bun.spawnSync([harness, ...args], { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
  if (r.exitCode !== 0) throw new Error(`attention-tiles failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim().split("\n");
}

/** The model's choice for each call on the GPU of `gpu`'s figures, in the calls' order. */
export function attentionModel(harness: string, gpu: GpuFigures, calls: AttentionCall[]): Choice[] {
  const args = calls.flatMap((c) => [c.B, c.Lq, c.H, c.D, c.kvLen, c.blockSize, c.qOffset].map(String));
  const out: Choice[] = [];
  let at: Choice | null = null;
  for (const line of run(harness, [...gpu.map(String), ...args])) {
    const t = /^rows (128|64) per_sm (\d+) step (\d+) blocks (\d+) key_tiles (\d+)-(\d+) cycles (\d+) in_order (\d+)$/.exec(line);
    const p = /^pick (128|64) parts (\d+) waves (\d+) tiles (\d+)$/.exec(line);
    if (/^attention( \d+){7}$/.test(line)) out.push(at = { pick: 128, rows: {} as Choice["rows"], parts: { parts: 1, waves: 0, tiles: 0 } });
    else if (t) {
      const [perSm, step, blocks, fewest, most, cycles, inOrder] = t.slice(2).map(Number) as number[];
      at!.rows[Number(t[1]) as 128 | 64] = { perSm: perSm!, step: step!, blocks: blocks!, keyTiles: [fewest!, most!], cycles: cycles!, inOrder: inOrder! };
    } else if (p) {
      at!.pick = Number(p[1]) as 64 | 128;
      at!.parts = { parts: Number(p[2]), waves: Number(p[3]), tiles: Number(p[4]) };
    }
    else throw new Error(`attention-tiles printed ${line}`);
  }
  if (out.length !== calls.length) throw new Error(`attention-tiles answered ${out.length} of ${calls.length} calls`);
  return out;
}

/** The registers per thread the model assumes, by head size and query rows per block, per target. */
export function modelRegisters(harness: string): { D: number; rows: number; sm_80: number; sm_90a: number }[] {
  return run(harness, ["registers"]).map((line) => {
    const m = /^registers D (\d+) rows (\d+) sm_80 (\d+) sm_90a (\d+)$/.exec(line);
    if (!m) throw new Error(`attention-tiles printed ${line}`);
    return { D: Number(m[1]), rows: Number(m[2]), sm_80: Number(m[3]), sm_90a: Number(m[4]) };
  });
}
