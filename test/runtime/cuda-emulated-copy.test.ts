// The CUDA backend's copyWithin without a GPU: the row copies it enqueues (op-params.ts copyWithinCopies,
// what CudaBackend.copyWithin hands kc_copy_rows one after another on its stream) run through
// kernels/cuda/copy.cu on the CPU emulator, on one buffer, in their order — a KV cache's eviction
// (every layer's K and V down by one chunk: 6 copies), with a sink, moves up, disjoint and empty moves,
// in f32 and bf16, on addresses 16-byte aligned (the 16-byte copy path) and not (the 4-byte one) —
// and must give the reference's result byte for byte. The emulator builds with AddressSanitizer, so a
// copy past the buffer fails too. On a GPU, ops.test.ts runs the op sweep's copyWithin cases for real.
import { describe, expect, test } from "bun:test";
import { copyWithinCopies } from "../../src/runtime/op-params.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType } from "../../src/runtime/tensor.ts";
import { toHalf } from "../../src/runtime/dtype.ts";
import { buildEmulator, runHarness } from "./cuda-emulator/emulated-backend.ts";
import { host, rng } from "./op-helpers.ts";

const built = await buildEmulator("copy");
const skip = "skip" in built ? built.skip : undefined;
const harness = "path" in built ? built.path : "";
if (skip) console.log(`cuda-emulated-copy.test.ts: skipped, ${skip}`);

/** The tensor's bytes after the copies CudaBackend.copyWithin enqueues, run by the emulated kernel. */
function emulatedCopyWithin(harness: string, bytes: Uint8Array, shape: number[], dtype: DType, to: number, from: number, len: number) {
  const copies = copyWithinCopies({ shape, dtype }, 1, to, from, len);
  const head = new BigInt64Array([BigInt(bytes.length), BigInt(copies.length), ...copies.flatMap((c) => [c.dst, c.src, c.pitch, c.rows, c.rowBytes].map(BigInt))]);
  return { out: runHarness(harness, "copyWithin", [head, bytes]).out, copies: copies.length };
}

describe.skipIf(!!skip)("copyWithin's row copies through copy.cu on the CPU emulator", () => {
  const r = rng(9);
  // [layers·2, frames, heads, head dim]: 21 token frames, like a 21-frame window of one-token frames
  const cases = [
    { shape: [6, 21, 2, 8], to: 0, from: 3, len: 18, copies: 6, what: "an eviction: 18 frames down by a 3-frame chunk" },
    { shape: [6, 21, 2, 8], to: 1, from: 4, len: 17, copies: 6, what: "an eviction past a 1-frame sink" },
    { shape: [6, 21, 2, 8], to: 6, from: 2, len: 13, copies: 4, what: "a move up over overlapping ranges" },
    { shape: [6, 21, 2, 8], to: 0, from: 18, len: 3, copies: 1, what: "a cut's chunk into the sink (disjoint)" },
    { shape: [6, 21, 2, 8], to: 4, from: 4, len: 9, copies: 0, what: "a move onto itself" },
    { shape: [3, 21, 1, 3], to: 0, from: 2, len: 19, copies: 10, what: "narrow rows of 3 elements (copy.cu's 4- and 1-byte paths)" },
  ];
  for (const c of cases) {
    for (const dtype of ["f32", "bf16"] as const) {
      test(`${c.what}, ${dtype}`, () => {
        const x = host(c.shape, r(c.shape.reduce((a, b) => a * b)));
        const stored = dtype === "f32" ? x.f32 : toHalf(x.f32, "bf16");
        const bytes = new Uint8Array(stored.buffer.slice(0));
        const { out, copies } = emulatedCopyWithin(harness, bytes, c.shape, dtype, c.to, c.from, c.len);
        expect(copies).toBe(c.copies);
        if (dtype === "f32") expect(Buffer.from(out).equals(Buffer.from(R.copyWithin(x, 1, c.to, c.from, c.len).f32.buffer))).toBe(true);
        else {
          // bf16: the same move of 2-byte elements, on the bits
          const bits = new Uint16Array(stored as Uint16Array), moved = bits.slice();
          const [outer, size] = [c.shape[0]!, c.shape[1]!], inner = c.shape[2]! * c.shape[3]!;
          for (let o = 0; o < outer; o++) moved.set(bits.subarray((o * size + c.from) * inner, (o * size + c.from + c.len) * inner), (o * size + c.to) * inner);
          expect(Buffer.from(out).equals(Buffer.from(moved.buffer))).toBe(true);
        }
      }, 60_000);
    }
  }
});
