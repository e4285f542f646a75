// f32 ↔ bf16 / f16 conversions: the host side of uploads, downloads and the reference.
import { describe, expect, test } from "bun:test";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits, roundThroughHalf } from "../../src/runtime/dtype.ts";

const bits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0]!;
const fromBits = (b: number) => new Float32Array(Uint32Array.of(b).buffer)[0]!;

describe("bf16", () => {
  test("rounds to nearest, ties to even", () => {
    expect(f32ToBf16Bits(1)).toBe(0x3f80);
    expect(f32ToBf16Bits(fromBits(0x3f808000))).toBe(0x3f80); // tie, even stays
    expect(f32ToBf16Bits(fromBits(0x3f818000))).toBe(0x3f82); // tie, odd rounds up
    expect(f32ToBf16Bits(fromBits(0x3f808001))).toBe(0x3f81); // above the tie
    expect(f32ToBf16Bits(-2.5)).toBe(0xc020);
    expect(f32ToBf16Bits(3.4e38)).toBe(0x7f80); // rounds past the largest bf16: inf
  });
  test("keeps NaN a NaN and every bf16 value round-trips", () => {
    expect(Number.isNaN(bf16BitsToF32(f32ToBf16Bits(NaN)))).toBe(true);
    for (let h = 0; h < 65536; h++) {
      const v = bf16BitsToF32(h);
      if (!Number.isNaN(v)) expect(f32ToBf16Bits(v)).toBe(h);
    }
  });
});

describe("f16", () => {
  test("known values, overflow and subnormals", () => {
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(-0)).toBe(0x8000);
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // the tie above the largest half goes to inf
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16Bits(2 ** -25)).toBe(0x0000); // tie to even: 0
    expect(f32ToF16Bits(3 * 2 ** -26)).toBe(0x0001);
    expect(f32ToF16Bits(1 / 3)).toBe(0x3555);
    expect(f16BitsToF32(0x7c00)).toBe(Infinity);
    expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
  });
  test("every f16 value round-trips", () => {
    for (let h = 0; h < 65536; h++) {
      const v = f16BitsToF32(h);
      if (!Number.isNaN(v)) expect(f32ToF16Bits(v)).toBe(h);
    }
  });
  test("roundThroughHalf gives the value a half tensor holds", () => {
    const x = Float32Array.of(0.1, 1000.3, -7e-6);
    const r = roundThroughHalf(x, "f16");
    expect(Array.from(r)).toEqual([f16BitsToF32(0x2e66), f16BitsToF32(f32ToF16Bits(1000.3)), f16BitsToF32(f32ToF16Bits(-7e-6))]);
    expect(bits(roundThroughHalf(Float32Array.of(1.00390625), "bf16")[0]!)).toBe(0x3f800000);
  });
});
