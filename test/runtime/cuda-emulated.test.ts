// The CUDA tensor-core convolutions (kernels/cuda/conv_mma.cu and conv_wgmma.cu, the sources
// themselves, behind kc_conv3d's dispatch and the bf16 repacking of conv_pack.cu) without a GPU: the
// CPU emulator (cuda-emulator/emulator.h) runs them on the conv and conv2d cases of the op sweep, and
// each result must keep the tensor-core promise (op-precision.ts tensorCoreConv) — the im2col gather,
// the causal cache and the time padding without one, padding, strides, the upsampled input the repack
// reads (Conv3dOptions.upsample), every tile shape and its edges, the cp.async ring with its
// double-buffered fragments (mma.sync) or the producer's cp.async + TMA stage ring and the wgmma
// descriptors (wgmma), and the fragment layouts all show in the numbers. The exact SIMT kernel
// (conv_simt.cu) runs every case too, held to the exact promise — with the f32 copies its fused norm
// and upsample read and the residual in its stores: what kino-tiny's narrow convs run on a GPU.
// Each case runs on every block tile of the mma.sync kernel: on the one its model picks for the
// emulator's GPU (conv_mma_tiles.cuh; kc_conv3d must launch that one), and on each other one forced
// (KINO_CUDA_CONV_MMA_TILE). The emulator builds with AddressSanitizer, so a read or write outside any
// buffer fails the case too. On a GPU, ops.test.ts runs the same cases for real, and
// tools/gpu-check-conv.py at the Wan-VAE decoder's shapes.
//
// The last tests plant known bugs in the wgmma kernel (KC_PLANTED, common.cuh) and require the cases
// (or the emulator's proxy rule: wgmma reads cp.async data only after the writer's fence.proxy.async)
// to catch each one; and in the mma.sync kernel: in what it shares with the GEMM (mma_tile.cuh's B
// fragments, mma_ring.cuh's ring and fragment sets), in its own gather (the 128×192 tile's partial
// pass of voxel rows) and in the repack it runs on (the fused norm's SiLU on the cached frames, the
// fused upsample's columns); and in the SIMT kernel's gather (the right edge's padding).
import { afterAll, describe, expect, test } from "bun:test";
import { convCases } from "./op-cases-heavy.ts";
import type { OpCase } from "./op-helpers.ts";
import { compare } from "./op-precision.ts";
import type { GpuFigures } from "./cuda-emulator/attention-tiles.ts";
import { buildConvTiles, convModel } from "./cuda-emulator/conv-tiles.ts";
import { CONV_MMA_TILES, type ConvMmaTile, EmulatedConvBackend, buildConvEmulator } from "./cuda-emulator/emulated-backend.ts";

const [built, tiles] = await Promise.all([buildConvEmulator(), buildConvTiles()]);
const skip = "skip" in built ? built.skip : "skip" in tiles ? tiles.skip : undefined;
if (skip) console.log(`cuda-emulated.test.ts: skipped, ${skip}`);
const harness = "path" in built && "path" in tiles ? built.path : null;
const be = harness ? new EmulatedConvBackend(harness) : null;
const wg = harness ? new EmulatedConvBackend(harness, { kernel: "wgmma" }) : null;
const simt = harness ? new EmulatedConvBackend(harness, { kernel: "simt" }) : null;
const forced = harness ? Object.fromEntries(CONV_MMA_TILES.map((t) => [t, new EmulatedConvBackend(harness, { convMmaTile: t })])) : null;
const cases = convCases();
const results = new Map<string, Float32Array>();
afterAll(() => {
  be?.dispose();
  wg?.dispose();
  simt?.dispose();
  for (const f of Object.values(forced ?? {})) f.dispose();
});

/** The GPU of the conv harness's context (cuda-emulator/conv.cpp): two multiprocessors with an H100's figures. */
const EMULATED_GPU: GpuFigures = [2, 9, 0, 228 * 1024, 227 * 1024, 1024, 65536, 2048];
/** Each case's call (output voxels, channels), run on a backend that computes nothing, and the tile the model picks for it there. */
const dry = new EmulatedConvBackend("", { dry: true });
for (const c of cases) await c.run(dry);
const picks = new Map(harness && "path" in tiles ? convModel(tiles.path, EMULATED_GPU, dry.dims).map((m, i) => [cases[i]!.name, m.pick as ConvMmaTile]) : []);
/** A launch of the mma.sync kernel, by its threads and dynamic shared memory (conv_mma_tiles.cuh: 4 stages of (BM + BN) rows of 64 bytes). */
const TILE_LAUNCHES: Record<ConvMmaTile, string> = { "128x192": "threads 192 smem 81920", "256x96": "threads 256 smem 90112",
  "128x96": "threads 128 smem 57344", "256x16": "threads 256 smem 69632" };
const tileOf = (launch: string) => CONV_MMA_TILES.find((t) => launch.endsWith(TILE_LAUNCHES[t])) ?? null;
/** Per case, the tiles its mma.sync runs launched. */
const ranOn = new Map<string, Set<ConvMmaTile | null>>();
const record = (c: OpCase, b: EmulatedConvBackend) => {
  if (!ranOn.has(c.name)) ranOn.set(c.name, new Set());
  ranOn.get(c.name)!.add(tileOf(b.launches.at(-1)!.at(-1)!));
};

/** Whether a forced wgmma path runs wgmma for a case (conv.cu: Cout ≥ 32), by the weight shape in its name. */
const takesWgmma = (c: OpCase) => Number(/ w \[(\d+),/.exec(c.name)![1]) >= 32;
const wgmmaCases = cases.filter(takesWgmma);
const fusesNorm = (c: OpCase) => c.name.includes("norm, SiLU fused");

/** How a case failed on an emulated backend (the tensor-core promise, or with `exact` the exact one the
 *  SIMT kernel keeps: the case's own tolerance on its f32 reference; or the harness's message), or null. */
async function failure(b: EmulatedConvBackend, c: OpCase, exact = false): Promise<string | null> {
  let got: Float32Array;
  try {
    got = await c.run(b);
  } catch (e) {
    return `the harness failed: ${(e as Error).message.split("\n").find((l) => /emulator:|kc_|ERROR/.test(l)) ?? (e as Error).message.slice(0, 300)}`;
  }
  const r = compare(got, exact ? { want: c.ref(), atol: c.atol, rtol: c.rtol } : c.tensorCores!());
  return r.ok ? null : `max abs ${r.maxAbs.toExponential(2)}, ${(100 * r.used).toFixed(0)} % of the tolerance`;
}

describe.skipIf(!be)("conv_mma.cu on the CPU emulator, on the tile its model picks", () => {
  for (const c of cases) {
    test(`${c.op} ${c.name} runs ${picks.get(c.name) ?? "?"} and keeps the tensor-core promise`, async () => {
      const got = await c.run(be!);
      results.set(c.name, got);
      expect(be!.ran.at(-1)).toBe("mma.sync");
      record(c, be!);
      expect(tileOf(be!.launches.at(-1)!.at(-1)!)).toBe(picks.get(c.name)!);
      const r = compare(got, c.tensorCores!());
      expect(r.ok, `max abs ${r.maxAbs}, ${(100 * r.used).toFixed(0)} % of the tolerance`).toBe(true);
    }, 120_000);
  }

  test("the model picks more than one tile for the cases; each call runs the repacking kernels and one conv", () => {
    expect(new Set(picks.values()).size).toBeGreaterThanOrEqual(3);
    // [norm factors,] [pack x,] pack w, conv: the fused norm's factor pass in the cases that ask for it
    expect(be!.launches.every((l) => l.length >= 2 && l.length <= 4)).toBe(true);
    expect(be!.launches.filter((l) => l.length === 4)).toHaveLength(cases.filter(fusesNorm).length);
  });

  test("the emulated kernel rounds its operands: it breaks the exact kernels' promise", () => {
    const c = cases.find((k) => k.name.includes("Cin 40"))!;
    expect(compare(results.get(c.name)!, { want: c.ref(), atol: c.atol, rtol: c.rtol }).ok).toBe(false);
  });
});

describe.skipIf(!forced)("conv_mma.cu on the CPU emulator, with each other tile forced", () => {
  for (const tile of CONV_MMA_TILES) {
    for (const c of cases.filter((k) => picks.get(k.name) !== tile)) {
      test(`${tile}: ${c.op} ${c.name} keeps the tensor-core promise`, async () => {
        const f = forced![tile]!;
        const got = await c.run(f);
        expect(f.ran.at(-1)).toBe("mma.sync");
        record(c, f);
        expect(tileOf(f.launches.at(-1)!.at(-1)!)).toBe(tile);
        const r = compare(got, c.tensorCores!());
        expect(r.ok, `max abs ${r.maxAbs}, ${(100 * r.used).toFixed(0)} % of the tolerance`).toBe(true);
      }, 120_000);
    }
  }

  test("every case ran on every tile, and each tile over several blocks of voxels and of channels", () => {
    for (const c of cases) expect([c.name, [...ranOn.get(c.name)!].sort()]).toEqual([c.name, [...CONV_MMA_TILES].sort()]);
    for (const tile of CONV_MMA_TILES) {
      const [bm, bn] = tile.split("x").map(Number) as [number, number];
      const calls = [be!, forced![tile]!].flatMap((b) => b.dims.filter((_, i) => tileOf(b.launches[i]!.at(-1)!) === tile));
      expect([tile, calls.some((d) => d.M > bm && d.Cout > bn)]).toEqual([tile, true]);
      expect([tile, calls.some((d) => d.M % bm !== 0 && d.Cout % bn !== 0)]).toEqual([tile, true]); // tails both ways
    }
  });
});

describe.skipIf(!wg)("conv_wgmma.cu on the CPU emulator (conv path forced to wgmma on an sm_90 context)", () => {
  for (const c of wgmmaCases) {
    test(`${c.op} ${c.name} runs wgmma and keeps the tensor-core promise`, async () => {
      const why = await failure(wg!, c);
      expect(wg!.ran.at(-1)).toBe("wgmma");
      expect(why).toBeNull();
    }, 120_000);
  }

  test("the cases ran all three tile widths (192, 128, 96) on the 384-thread block, over several tiles in M and N", () => {
    const launches = wg!.launches.map((l) => l.at(-1)!);
    const grid = (l: string) => /grid (\d+),\d+,\d+ threads (\d+) smem (\d+)/.exec(l)!.slice(1).map(Number);
    // 5 stages of 128 voxel rows and BN weight rows, 128 bytes each, + 1 KiB to align the ring
    const smem = new Set(launches.map((l) => grid(l)[2]));
    for (const bn of [192, 128, 96]) expect(smem).toContain(5 * (128 + bn) * 128 + 1024);
    expect(launches.every((l) => grid(l)[1] === 384)).toBe(true);
    expect(launches.some((l) => grid(l)[0]! >= 4)).toBe(true); // 2 × 2 tiles (Cout 200, 144 voxels)
    // [norm factors,] [pack x,] pack w, conv: nothing fell back
    expect(wg!.launches.every((l) => l.length >= 2 && l.length <= 4)).toBe(true);
    expect(wg!.launches.filter((l) => l.length === 4)).toHaveLength(wgmmaCases.filter(fusesNorm).length);
  });

  test("forced wgmma leaves Cout < 32 to mma.sync, which keeps its promise", async () => {
    const c = cases.find((k) => !takesWgmma(k) && k.name.includes("causal 3³"))!;
    expect(await failure(wg!, c)).toBeNull();
    expect(wg!.ran.at(-1)).toBe("mma.sync");
  }, 60_000);
});

describe.skipIf(!simt)("conv_simt.cu on the CPU emulator (conv path forced to SIMT), with the fused norm, upsample and residual", () => {
  for (const c of cases) {
    test(`${c.op} ${c.name} runs SIMT and keeps the exact promise`, async () => {
      const why = await failure(simt!, c, true);
      expect(simt!.ran.at(-1)).toBe("simt");
      expect(why).toBeNull();
    }, 120_000);
  }
});

// Each planted bug (KC_PLANTED(n) in conv_wgmma.cu), what it breaks, and what must report it.
const PLANTED: [number, string, string | RegExp][] = [
  [26, "the producer announces its cp.async stages without fence.proxy.async", /the harness failed: .*emulator: wgmma reads shared address 0x[0-9a-f]+, which thread \d+ wrote \(cp\.async or st\.shared\) with no fence\.proxy\.async/],
  [27, "the A tile is written unswizzled (chunk c of row r at c, not c ^ (r % 8))", /% of the tolerance|max abs NaN/],
  [28, "the producer announces a stage before cp.async.wait_group saw its copies land", /% of the tolerance|max abs NaN/],
];

// Each planted bug of the mma.sync kernel and the repack (KC_PLANTED(n): mma_tile.cuh, mma_ring.cuh,
// conv_mma.cu, conv_pack.cu) that the mma.sync conv cases must catch, and the tile it needs forced.
const PLANTED_MMA: [number, string, ConvMmaTile?][] = [
  [1, "B fragment: ldmatrix takes the k half of the A layout (mma_tile.cuh)"],
  [31, "cp.async ring: waits for one group too few (mma_ring.cuh)"],
  [32, "the next tile's first fragments are read before the barrier that makes them whole (mma_ring.cuh)"],
  [38, "the second fragment set is loaded from the first k step again (mma_ring.cuh)"],
  [39, "the repack's fused norm leaves SiLU off the cached frames (conv_pack.cu)"],
  [40, "128×192 tile: the last, partial pass of voxel rows (rows 96–127 of 128, 48 per pass) is left out (conv_mma.cu)", "128x192"],
  [41, "the odd channels of a fragment pair stored without their residual (conv_mma.cu)"],
  [42, "the repack's upsample reads the odd columns from the x column to the right of theirs (conv_pack.cu)"],
];

// The SIMT kernel's (conv_simt.cu), which the conv cases must catch on the exact promise.
const PLANTED_SIMT: [number, string][] = [[43, "the input gather reads the next row's first value for the right edge's padding (conv_simt.cu)"]];

describe.skipIf(!harness)("the emulated cases catch planted conv bugs", () => {
  for (const [n, what, how, kernel, tile] of [...PLANTED.map(([n, what, how]) => [n, what, how, "wgmma", undefined] as const),
    ...PLANTED_MMA.map(([n, what, tile]) => [n, what, /% of the tolerance|max abs NaN/, "mma.sync", tile] as const),
    ...PLANTED_SIMT.map(([n, what]) => [n, what, /% of the tolerance|max abs NaN/, "simt", undefined] as const)]) {
    test(`bug ${n} (${kernel}), ${what}`, async () => {
      const planted = new EmulatedConvBackend(harness!, { kernel, plant: n, convMmaTile: tile });
      let caught: string | null = null;
      for (const c of kernel === "wgmma" ? wgmmaCases : cases) {
        const why = await failure(planted, c, kernel === "simt");
        if (why) {
          caught = `${c.name}: ${why}`;
          break;
        }
      }
      planted.dispose();
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).toMatch(how);
    }, 120_000);
  }
});
