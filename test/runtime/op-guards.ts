// Sentinel memory for the op sweep. A tensor an op writes is handed to it as a view into a larger
// allocation: GUARD_BYTES before it and after it, and its own elements, are filled with a known
// pattern first. After the op the guards must still hold the pattern — a kernel that writes past
// either end of its output (a tile tail without its bounds check) changes them — and an output
// element the op never wrote keeps the pattern, a NaN, which fails the comparison with the reference.
import type { Backend } from "../../src/runtime/backend.ts";
import { DTYPE_BYTES, type DType, type Shape, type Tensor, numelOf } from "../../src/runtime/tensor.ts";

/** Bytes of guard on each side: a multiple of 256, so the view keeps the allocation's alignment
 *  (the CUDA tensor-core kernels take 16-byte aligned operands). */
export const GUARD_BYTES = 1024;

/** One element of the pattern, little-endian: a quiet NaN for the float types (0xFFE5A5A5,
 *  0xFFE5), 0xA5 for u8. */
const PATTERN: Record<DType, number[]> = { f32: [0xa5, 0xa5, 0xe5, 0xff], bf16: [0xe5, 0xff], f16: [0xe5, 0xff], u8: [0xa5] };

export interface Guarded {
  /** What the op gets: the view between the guards. */
  tensor: Tensor;
  /** The allocation to free. */
  whole: Tensor;
}

function patternBytes(dtype: DType, numel: number): Uint8Array {
  const one = PATTERN[dtype];
  return Uint8Array.from({ length: numel * one.length }, (_, i) => one[i % one.length]!);
}

/** The pattern as the host array `write` takes for this dtype (same bits). */
function patternData(dtype: DType, numel: number): Float32Array | Uint16Array | Uint8Array {
  const bytes = patternBytes(dtype, numel);
  if (dtype === "f32") return new Float32Array(bytes.buffer);
  if (dtype === "u8") return bytes;
  return new Uint16Array(bytes.buffer);
}

/** A tensor of `shape` between two guards, every byte of the allocation holding the pattern. */
export function allocGuarded(be: Backend, shape: Shape, dtype: DType = "f32"): Guarded {
  const guard = GUARD_BYTES / DTYPE_BYTES[dtype], n = numelOf(shape);
  const whole = be.alloc([guard + n + guard], dtype);
  try {
    be.write(whole, patternData(dtype, whole.numel));
  } catch (e) {
    be.free(whole);
    throw e;
  }
  return { whole, tensor: whole.view(shape, guard) };
}

/** Zeroes the allocation, then frees it: the pattern must exist only around live outputs, or an
 *  out-of-bounds write that copies stale memory (an input read past its end) could write the pattern
 *  of an earlier case back into a guard and go unseen. */
export function freeGuarded(be: Backend, { whole }: Guarded): void {
  be.write(whole, whole.dtype === "u8" ? new Uint8Array(whole.numel) : new Float32Array(whole.numel));
  be.free(whole);
}

/** Describes each guard the op changed ("3 of 1024 bytes after out [5, 7] f32, the first at +0"); empty when none. */
export async function changedGuards(be: Backend, { whole, tensor }: Guarded): Promise<string[]> {
  const guard = GUARD_BYTES / DTYPE_BYTES[whole.dtype];
  const want = patternBytes(whole.dtype, guard);
  const sides: [string, Tensor][] = [["before", whole.view([guard], 0)], ["after", whole.view([guard], guard + tensor.numel)]];
  const problems: string[] = [];
  for (const [side, view] of sides) {
    const got = await be.downloadRaw(view);
    const changed: number[] = [];
    got.forEach((b, i) => b !== want[i] && changed.push(i));
    if (changed.length === 0) continue;
    const first = side === "before" ? `−${GUARD_BYTES - changed[changed.length - 1]!}` : `+${changed[0]!}`;
    problems.push(`${changed.length} of ${GUARD_BYTES} bytes ${side} out [${tensor.shape.join(", ")}] ${tensor.dtype}, the nearest at ${first}`);
  }
  return problems;
}
