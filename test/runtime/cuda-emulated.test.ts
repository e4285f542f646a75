// The CUDA tensor-core convolutions (kernels/cuda/conv_mma.cu and conv_wgmma.cu, the sources
// themselves, behind kc_conv3d's dispatch and the bf16 repacking of conv_pack.cu) without a GPU: the
// CPU emulator (cuda-emulator/emulator.h) runs them on the conv and conv2d cases of the op sweep, and
// each result must keep the tensor-core promise (op-precision.ts tensorCoreConv) — the im2col gather,
// the causal cache and the time padding without one, padding, strides, every tile shape and its
// edges, the cp.async ring (mma.sync) or the producer's cp.async + TMA stage ring and the wgmma
// descriptors (wgmma), and the fragment layouts all show in the numbers. The emulator builds with
// AddressSanitizer, so a read or write outside any buffer fails the case too. On a GPU, ops.test.ts
// runs the same cases for real, and tools/gpu-check-conv.py at the Wan-VAE decoder's shapes.
//
// The last tests plant known bugs in the wgmma kernel (KC_PLANTED, common.cuh) and require the cases
// (or the emulator's proxy rule: wgmma reads cp.async data only after the writer's fence.proxy.async)
// to catch each one; and two in what the mma.sync kernel shares with the GEMM (mma_tile.cuh: the B
// fragments, and the ring that only the convolution still runs).
import { afterAll, describe, expect, test } from "bun:test";
import { convCases } from "./op-cases-heavy.ts";
import type { OpCase } from "./op-helpers.ts";
import { compare } from "./op-precision.ts";
import { EmulatedConvBackend, buildConvEmulator } from "./cuda-emulator/emulated-backend.ts";

const built = await buildConvEmulator();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated.test.ts: skipped, ${skip}`);
const harness = "path" in built ? built.path : null;
const be = harness ? new EmulatedConvBackend(harness) : null;
const wg = harness ? new EmulatedConvBackend(harness, { kernel: "wgmma" }) : null;
const cases = convCases();
const results = new Map<string, Float32Array>();
afterAll(() => {
  be?.dispose();
  wg?.dispose();
});

/** Whether a forced wgmma path runs wgmma for a case (conv.cu: Cout ≥ 32), by the weight shape in its name. */
const takesWgmma = (c: OpCase) => Number(/ w \[(\d+),/.exec(c.name)![1]) >= 32;
const wgmmaCases = cases.filter(takesWgmma);
const fusesNorm = (c: OpCase) => c.name.includes("norm, SiLU fused");

/** How a case failed on an emulated backend (the promise, or the harness's message), or null. */
async function failure(b: EmulatedConvBackend, c: OpCase): Promise<string | null> {
  let got: Float32Array;
  try {
    got = await c.run(b);
  } catch (e) {
    return `the harness failed: ${(e as Error).message.split("\n").find((l) => /emulator:|kc_|ERROR/.test(l)) ?? (e as Error).message.slice(0, 300)}`;
  }
  const r = compare(got, c.tensorCores!());
  return r.ok ? null : `max abs ${r.maxAbs.toExponential(2)}, ${(100 * r.used).toFixed(0)} % of the tolerance`;
}

describe.skipIf(!be)("conv_mma.cu on the CPU emulator", () => {
  for (const c of cases) {
    test(`${c.op} ${c.name} keeps the tensor-core promise`, async () => {
      const got = await c.run(be!);
      results.set(c.name, got);
      expect(be!.ran.at(-1)).toBe("mma.sync");
      const r = compare(got, c.tensorCores!());
      expect(r.ok, `max abs ${r.maxAbs}, ${(100 * r.used).toFixed(0)} % of the tolerance`).toBe(true);
    }, 120_000);
  }

  test("the cases ran all three tile shapes (128×128, 128×96, 256×16) and the repacking kernels", () => {
    const smem = new Set(be!.launches.flat().map((l) => /smem (\d+)/.exec(l)?.[1]));
    // 4 stages of (BM + BN) rows of 64 bytes
    for (const bytes of [4 * 256 * 64, 4 * 224 * 64, 4 * 272 * 64]) expect(smem).toContain(String(bytes));
    // [norm factors,] [pack x,] pack w, conv: the fused norm's factor pass in the cases that ask for it
    expect(be!.launches.every((l) => l.length >= 2 && l.length <= 4)).toBe(true);
    expect(be!.launches.filter((l) => l.length === 4)).toHaveLength(cases.filter(fusesNorm).length);
  });

  test("the emulated kernel rounds its operands: it breaks the exact kernels' promise", () => {
    const c = cases.find((k) => k.name.includes("Cin 40"))!;
    expect(compare(results.get(c.name)!, { want: c.ref(), atol: c.atol, rtol: c.rtol }).ok).toBe(false);
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

// Each planted bug (KC_PLANTED(n) in conv_wgmma.cu), what it breaks, and what must report it.
const PLANTED: [number, string, string | RegExp][] = [
  [26, "the producer announces its cp.async stages without fence.proxy.async", /the harness failed: .*emulator: wgmma reads shared address 0x[0-9a-f]+, which thread \d+ wrote \(cp\.async or st\.shared\) with no fence\.proxy\.async/],
  [27, "the A tile is written unswizzled (chunk c of row r at c, not c ^ (r % 8))", /% of the tolerance|max abs NaN/],
  [28, "the producer announces a stage before cp.async.wait_group saw its copies land", /% of the tolerance|max abs NaN/],
];

// Each planted bug of mma_tile.cuh and the repack (conv_pack.cu) (KC_PLANTED(n)) that the mma.sync conv
// cases must catch.
const PLANTED_MMA: [number, string][] = [
  [1, "B fragment: ldmatrix takes the k half of the A layout"],
  [7, "cp.async ring (kc_mma_pipeline): waits for one group too few"],
  [39, "the repack's fused norm leaves SiLU off the cached frames"],
];

describe.skipIf(!harness)("the emulated cases catch planted conv bugs", () => {
  for (const [n, what, how, kernel] of [...PLANTED.map(([n, what, how]) => [n, what, how, "wgmma"] as const),
    ...PLANTED_MMA.map(([n, what]) => [n, what, /% of the tolerance|max abs NaN/, "mma.sync"] as const)]) {
    test(`bug ${n} (${kernel}), ${what}`, async () => {
      const planted = new EmulatedConvBackend(harness!, { kernel, plant: n });
      let caught: string | null = null;
      for (const c of kernel === "wgmma" ? wgmmaCases : cases) {
        const why = await failure(planted, c);
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
