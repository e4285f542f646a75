// The CUDA tensor-core convolution (kernels/cuda/conv_mma.cu, the source itself) without a GPU: the
// CPU emulator (cuda-emulator/emulator.h) runs it on every conv and conv2d case of the op sweep, and
// each result must keep the tensor-core promise (op-precision.ts tensorCoreConv) — the im2col gather,
// the causal cache, padding, strides, the three tile shapes and their edges, the cp.async ring and
// the fragment layouts all show in the numbers. The emulator builds with AddressSanitizer, so a read
// or write outside any buffer fails the case too. On a GPU, ops.test.ts runs the same cases for real.
import { afterAll, describe, expect, test } from "bun:test";
import { convCases } from "./op-cases-heavy.ts";
import { compare } from "./op-precision.ts";
import { EmulatedConvBackend, buildEmulator } from "./cuda-emulator/emulated-backend.ts";

const built = await buildEmulator("conv");
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated.test.ts: skipped, ${skip}`);
const be = "path" in built ? new EmulatedConvBackend(built.path) : null;
const cases = convCases();
const results = new Map<string, Float32Array>();
afterAll(() => be?.dispose());

describe.skipIf(!be)("conv_mma.cu on the CPU emulator", () => {
  for (const c of cases) {
    test(`${c.op} ${c.name} keeps the tensor-core promise`, async () => {
      const got = await c.run(be!);
      results.set(c.name, got);
      const r = compare(got, c.tensorCores!());
      expect(r.ok, `max abs ${r.maxAbs}, ${(100 * r.used).toFixed(0)} % of the tolerance`).toBe(true);
    }, 120_000);
  }

  test("the cases ran all three tile shapes (128×128, 128×96, 256×16) and the repacking kernels", () => {
    const smem = new Set(be!.launches.flat().map((l) => /smem (\d+)/.exec(l)?.[1]));
    // 4 stages of (BM + BN) rows of 64 bytes
    for (const bytes of [4 * 256 * 64, 4 * 224 * 64, 4 * 272 * 64]) expect(smem).toContain(String(bytes));
    expect(be!.launches.every((l) => l.length === 3 || l.length === 2)).toBe(true); // [pack x,] pack w, conv
  });

  test("the emulated kernel rounds its operands: it breaks the exact kernels' promise", () => {
    const c = cases.find((k) => k.name.includes("Cin 40"))!;
    expect(compare(results.get(c.name)!, { want: c.ref(), atol: c.atol, rtol: c.rtol }).ok).toBe(false);
  });
});
