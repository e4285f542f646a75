// f32 ↔ bf16 / f16 conversions on the host (uploads, downloads, the reference). Rounding is
// round-to-nearest-even, as PyTorch's `.to(torch.bfloat16)` and the kernels' own conversions do;
// NaN stays NaN. The kernels carry the same arithmetic in kernels/cpu/dtype.h.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0]!;
  if ((b & 0x7fffffff) > 0x7f800000) return ((b >>> 16) | 0x40) & 0xffff; // quiet NaN
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bf16BitsToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0]!;
}

export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → inf
  if (e <= 0) {
    // subnormal half (or zero): shift the implicit-1 mantissa right, rounding to nearest even
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let h = mant >>> shift;
    if (rest > half || (rest === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // may carry into the exponent: still correct
  return sign | h;
}

export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export type HalfKind = "bf16" | "f16";

export function toHalf(values: Float32Array, kind: HalfKind): Uint16Array {
  const out = new Uint16Array(values.length);
  const conv = kind === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
  for (let i = 0; i < values.length; i++) out[i] = conv(values[i]!);
  return out;
}

export function fromHalf(bits: Uint16Array, kind: HalfKind): Float32Array {
  const out = new Float32Array(bits.length);
  if (kind === "bf16") {
    const wide = new Uint32Array(out.buffer);
    for (let i = 0; i < bits.length; i++) wide[i] = bits[i]! << 16;
  } else {
    for (let i = 0; i < bits.length; i++) out[i] = f16BitsToF32(bits[i]!);
  }
  return out;
}

/** The values a tensor of `kind` would hold: f32 → half → f32 (for references that round first). */
export function roundThroughHalf(values: Float32Array, kind: HalfKind): Float32Array {
  return fromHalf(toHalf(values, kind), kind);
}
