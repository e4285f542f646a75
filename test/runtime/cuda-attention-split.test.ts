// The Hopper attention's stream-K schedule (kernels/cuda/attention_split.cuh, walked by
// cuda-emulator/attention-split.cpp on the host): every key tile walked once, every cut item combined
// once from exactly its parts' slots — over every small launch — and what it buys at the shapes kino
// serves: the most key tiles one block walks, against whole items round-robin. That the kernels compute
// the right thing under it is cuda-emulated-wgmma.test.ts's.
import { describe, expect, test } from "bun:test";
import { buildEmulator } from "./cuda-emulator/emulated-backend.ts";

const built = await buildEmulator("attention-split");
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-attention-split.test.ts: skipped, ${skip}`);

function run(args: (string | number)[]): string[] {
  if ("skip" in built) throw new Error(built.skip);
  const r = Bun.spawnSync([built.path, ...args.map(String)], { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
  if (r.exitCode !== 0) throw new Error(`attention-split failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim().split("\n");
}

interface Launch { grid: number; busiest: number; whole: number; cut: number }
function launches(shapes: [items: number, tiles: number, sms: number][]): Launch[] {
  return run(shapes.flat()).map((line) => {
    const m = /^grid (\d+) busiest (\d+) whole (\d+) cut (\d+)$/.exec(line);
    if (!m) throw new Error(`attention-split printed ${line}`);
    return { grid: Number(m[1]), busiest: Number(m[2]), whole: Number(m[3]), cut: Number(m[4]) };
  });
}

describe.skipIf(!!skip)("the wgmma attention's stream-K schedule", () => {
  test("every launch up to 60 items of up to 9 key tiles on up to 16 multiprocessors, split wherever a boundary cuts an item, walks each tile once and combines each cut item once", () => {
    const [line] = run(["sweep", 60, 9, 16]);
    const [, checked, split] = /^checked (\d+) split (\d+)$/.exec(line!)!.map(Number);
    expect(checked).toBe(60 * 9 * 16);
    expect(split).toBeGreaterThan(checked! / 2); // most of them cut items (the checks above ran on those)
  });

  test("Wan2.1-1.3B's streaming chunk (4680 queries, 12 heads: 444 items): the busiest block walks 16 % fewer key tiles on 132 SMs, 18 % on 108", () => {
    // 128-key tiles; a full 21-frame window (32 760 keys: 256 tiles), the first chunk (4680 keys: 37)
    const [h200, a100, h100pcie, first] = launches([[444, 256, 132], [444, 256, 108], [444, 256, 114], [444, 37, 132]]);
    // 132 SMs: 4 rounds of whole items (3.36 would do) → ⌈444 · 256 / 132⌉
    expect(h200).toEqual({ grid: 132, busiest: 862, whole: 1024, cut: 120 });
    expect(a100).toEqual({ grid: 108, busiest: 1053, whole: 1280, cut: 96 });
    expect(h100pcie).toEqual({ grid: 114, busiest: 998, whole: 1024, cut: 108 });
    expect(first).toEqual({ grid: 132, busiest: 125, whole: 148, cut: 120 });
  });

  test("items that divide among the blocks, or whose few key tiles would not pay, are walked whole; fewer items than blocks spread over all of them", () => {
    const [even, small, single, cross] = launches([[264, 256, 132], [12, 256, 132], [5, 1, 132], [444, 4, 132]]);
    // the chunk's cross-attention over 512 text tokens: 16 key tiles whole, 14 split — not worth a combine
    expect(cross).toEqual({ grid: 0, busiest: 16, whole: 16, cut: 0 });
    expect(even).toEqual({ grid: 0, busiest: 512, whole: 512, cut: 0 });
    expect(small).toEqual({ grid: 132, busiest: 24, whole: 256, cut: 12 }); // 12 heads of one query tile over 132 blocks
    expect(single).toEqual({ grid: 0, busiest: 1, whole: 1, cut: 0 }); // one key tile an item: nothing to cut
  });
});
