// Tensors and memory on the wasm backend: uploads and downloads per dtype, views, explicit frees,
// growth of the wasm memory under a running thread pool, and the errors a misuse gets.
import { afterAll, describe, expect, test } from "bun:test";
import { f32ToBf16Bits } from "../../src/runtime/dtype.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();
const { openWasmBackend } = await import("../../src/runtime/backends/wasm.ts");
const be = await openWasmBackend({ threads: 2 });
afterAll(() => be.dispose());

describe("upload / download", () => {
  test("f32 round-trips exactly; bf16 and f16 round to nearest even", async () => {
    const x = Float32Array.of(1, -2.5, 0.1, 3.4e38, 1e-8);
    expect(Array.from(await be.download(be.upload(x, [5])))).toEqual(Array.from(x));
    const b = be.upload(x, [5], "bf16");
    const raw = new Uint16Array((await be.downloadRaw(b)).buffer);
    expect(Array.from(raw)).toEqual(Array.from(x, f32ToBf16Bits));
    expect((await be.download(be.upload(x, [5], "f16")))[3]).toBe(Infinity); // 3.4e38 overflows f16
  });
  test("raw half bits and u8 frames upload as they are", async () => {
    const t = be.upload(Uint16Array.of(0x3f80, 0xc000), [2], "bf16");
    expect(Array.from(await be.download(t))).toEqual([1, -2]);
    const u = be.upload(Uint8Array.of(0, 7, 255), [3]);
    expect(u.dtype).toBe("u8");
    expect(Array.from(await be.downloadRaw(u))).toEqual([0, 7, 255]);
    expect(() => be.upload(Uint16Array.of(1), [1])).toThrow("needs dtype");
    expect(() => be.upload(new Float32Array(3), [2, 2])).toThrow("3 values");
  });
});

describe("views and frees", () => {
  test("a view writes into its base; reshape keeps the elements", async () => {
    const base = be.upload(new Float32Array(12), [3, 4]);
    be.fill(base.view([4], 4), 7); // row 1
    expect(Array.from(await be.download(base))).toEqual([0, 0, 0, 0, 7, 7, 7, 7, 0, 0, 0, 0]);
    expect((await be.download(base.reshape([2, 6])))[5]).toBe(7);
    expect(() => base.view([5], 8)).toThrow("does not fit");
    expect(() => base.reshape([5])).toThrow("cannot reshape");
    be.free(base);
  });
  test("free returns memory; freed tensors and views are refused", () => {
    const before = be.memory().inUse;
    const t = be.alloc([1000]);
    expect(be.memory().inUse).toBeGreaterThan(before);
    const v = t.view([10]);
    expect(() => be.free(v)).toThrow("cannot free a view");
    be.free(t);
    expect(be.memory().inUse).toBe(before);
    expect(() => be.fill(t, 1)).toThrow("was freed");
    expect(() => be.fill(v, 1)).toThrow("was freed");
    expect(() => be.free(t)).toThrow("double free");
  });
  test("a tensor of another backend is refused, and a disposed backend refuses work", async () => {
    const other = await openWasmBackend({ threads: 2 });
    const t = other.alloc([4]);
    expect(() => be.fill(t, 1)).toThrow("does not belong");
    other.dispose();
    expect(() => other.fill(t, 1)).toThrow("used after dispose()");
  });
  test("the memory grows past its first size and the worker threads see the new pages", async () => {
    const n = 24 << 20; // 96 MiB per tensor, well past the initial 16 MiB
    const a = be.alloc([n / 1024, 1024]), out = be.alloc([n / 1024, 1024]);
    be.fill(a, 1.5);
    be.axpby(out, a, a, 2, 1); // split across both threads
    const got = await be.download(out);
    expect(got[0]).toBe(4.5);
    expect(got[n - 1]).toBe(4.5);
    expect(be.memory().peak).toBeGreaterThanOrEqual(2 * n * 4);
    be.free(a, out);
  });
});

describe("shape checks", () => {
  test("a mismatched op fails at the call, naming the op and the shapes", () => {
    const a = be.alloc([3, 8]), w = be.alloc([5, 7]), out = be.alloc([3, 5]);
    expect(() => be.gemm(out, a, w)).toThrow("gemm: a [3, 8] does not end in K=7");
    expect(() => be.softmax(be.alloc([2, 2]), a)).toThrow("softmax: input 0 must be [2, 2], got [3, 8]");
    be.free(a, w, out);
  });
  test("a split gemm needs parts that divide N and an output of [parts, ..., N / parts]", () => {
    const a = be.alloc([4, 8]), w = be.alloc([6, 8]), flat = be.alloc([4, 6]), split = be.alloc([3, 4, 2]);
    expect(() => be.gemm(flat, a, w, null, { kind: "split", parts: 4 })).toThrow("gemm: split into 4 parts: must be an integer ≥ 1 dividing N=6");
    expect(() => be.gemm(flat, a, w, null, { kind: "split", parts: 3 })).toThrow("gemm: out must be [3, 4, 2], got [4, 6]");
    be.gemm(split, a, w, null, { kind: "split", parts: 3 });
    be.free(a, w, flat, split);
  });
});
