// Conv3dOptions.upsample at the op's edges, on the WebAssembly backend (the op sweep holds its values
// on every backend: op-cases-heavy.ts): the output size follows from the upsampled input, the
// combinations it does not take are refused naming the option, and the backend that runs the upsample
// as its own op (conv3d-unfused.ts) gives the copy back.
import { afterAll, describe, expect, test } from "bun:test";
import { conv3dOutputShape } from "../../src/runtime/op-params.ts";
import type { Conv3dOptions } from "../../src/runtime/backend.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();
const { openWasmBackend } = await import("../../src/runtime/backends/wasm.ts");
const be = await openWasmBackend({ threads: 1 });
afterAll(() => be.dispose());

describe("conv3d with upsample", () => {
  test("the output is sized from 2H × 2W with the usual pad and stride rules", () => {
    const opts = { pad: [1, 1, 1, 1], timePad: 0, upsample: true } as const;
    expect(conv3dOutputShape([1, 4, 2, 5, 7], [8, 4, 1, 3, 3], opts)).toEqual([1, 8, 2, 10, 14]);
    expect(conv3dOutputShape([1, 4, 2, 5, 7], [8, 4, 1, 3, 3], { ...opts, stride: [1, 2, 2] })).toEqual([1, 8, 2, 5, 7]);
    expect(conv3dOutputShape([1, 4, 2, 5, 7], [8, 4, 1, 3, 3], { ...opts, upsample: false })).toEqual([1, 8, 2, 5, 7]);
  });

  test("a cache, the fused norm, or a value that is not a boolean are refused, naming the option", () => {
    const x = be.alloc([1, 4, 2, 3, 3]), w = be.alloc([8, 4, 3, 3, 3]), out = be.alloc([1, 8, 2, 6, 6]);
    const prev = be.alloc([1, 4, 2, 3, 3]);
    const conv = (opts: Conv3dOptions) => () => be.conv3d(out, x, w, null, { pad: [1, 1, 1, 1], upsample: true, ...opts });
    expect(conv({ prev })).toThrow("upsample with a cache (prev) is not supported");
    expect(conv({ normSilu: { eps: 1e-12, scale: 2 } })).toThrow("upsample with normSilu is not supported");
    expect(conv({ upsample: 1 as unknown as boolean })).toThrow("upsample must be true or false, got 1");
    be.free(x, w, out, prev);
  });

  test("the upsampled copy the unfused path makes is given back", async () => {
    const x = be.upload(Float32Array.from({ length: 4 * 2 * 3 * 3 }, (_, i) => i % 5), [1, 4, 2, 3, 3]);
    const w = be.upload(new Float32Array(8 * 4 * 9).fill(1), [8, 4, 1, 3, 3]), out = be.alloc([1, 8, 2, 6, 6]);
    const before = be.memory().inUse;
    be.conv3d(out, x, w, null, { pad: [1, 1, 1, 1], timePad: 0, upsample: true });
    await be.sync();
    expect(be.memory().inUse).toBe(before);
    // output (0, 0): the 2×2 window of the upsampled input at (0..1, 0..1) is x's (0, 0) four times
    const got = await be.download(out);
    const x0 = [0, 1, 2, 3].reduce((s, c) => s + ((c * 18) % 5), 0);
    expect(got[0]).toBe(4 * x0);
    be.free(x, w, out);
  });
});
