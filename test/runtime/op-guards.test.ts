// The op sweep's sentinel memory (op-guards.ts) on the wasm backend: an op that writes one element
// past either end of its output fails runOp, naming the bytes; an element it never writes comes back
// NaN, so the comparison with the reference fails.
import { afterAll, expect, test } from "bun:test";
import { openWasmBackend } from "../../src/runtime/backends/wasm.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { GUARD_BYTES } from "./op-guards.ts";
import { runOp } from "./op-helpers.ts";

await buildCpuWasm();
const be = await openWasmBackend({ threads: 1 });
afterAll(() => be.dispose());

const guard = GUARD_BYTES / 4;
/** `fill` over n elements of out's allocation starting `shift` elements from out's own start. */
const fillShifted = (out: Tensor, n: number, shift: number) => be.fill(out.owner.view([n], guard + shift), 1);

test("a fill of exactly its output passes and returns the output", async () => {
  expect(await runOp(be, (_up, alloc) => { const o = alloc([5]); fillShifted(o, 5, 0); return o; })).toEqual(new Float32Array(5).fill(1));
});

test("one element written past the end fails, naming the first changed byte after the output", async () => {
  const run = runOp(be, (_up, alloc) => { const o = alloc([5]); fillShifted(o, 6, 0); return o; });
  await expect(run).rejects.toThrow("the op wrote outside its output: 4 of 1024 bytes after out [5] f32, the nearest at +0");
});

test("one element written before the start fails, naming the byte nearest the output", async () => {
  const run = runOp(be, (_up, alloc) => { const o = alloc([5]); fillShifted(o, 6, -1); return o; });
  await expect(run).rejects.toThrow("4 of 1024 bytes before out [5] f32, the nearest at −1");
});

test("an output element the op does not write comes back NaN", async () => {
  const got = await runOp(be, (_up, alloc) => { const o = alloc([5]); fillShifted(o, 4, 0); return o; });
  expect([...got.subarray(0, 4)]).toEqual([1, 1, 1, 1]);
  expect(got[4]).toBeNaN();
});
