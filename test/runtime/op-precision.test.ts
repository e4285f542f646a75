// The op sweep's tolerances for the CUDA tensor-core kernels (op-precision.ts), tested without a GPU
// on TypeScript imitations of those kernels (tensor-core-emulation.ts), on the shapes that failed the
// exact tolerances on an H200: each promise accepts a kernel that rounds as the real one does, and
// rejects one whose error is an order of magnitude larger (activations rounded to bf16 where the
// promise is f16; P rounded to 5 significant bits instead of bf16's 8); the exact promise rejects
// the tensor-core kernels.
import { describe, expect, test } from "bun:test";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import { asStored, host, rng } from "./op-helpers.ts";
import { type Expected, compare, reductionTol, tensorCoreAttention, tensorCoreGemm } from "./op-precision.ts";
import { emulateAttention, emulateGemm } from "./tensor-core-emulation.ts";

const r = rng(40);
/** How much of its tolerance `got` uses (≤ 1 passes), for readable failures. */
const used = (got: Float32Array, e: Expected) => compare(got, e).used;

describe("GEMM on tensor cores", () => {
  const shapes: [number, number, number, HalfKind][] = [[97, 520, 70, "f16"], [33, 64, 13, "bf16"], [257, 136, 258, "bf16"]];
  for (const [M, K, N, kind] of shapes) {
    const a = host([M, K], r(M * K)), w = asStored(host([N, K], r(N * K)), kind), bias = host([N], r(N));
    const exact: Expected = { want: R.gemm(a, w, bias).f32, ...reductionTol(K) };
    const promise = tensorCoreGemm(a, w, kind, bias);
    const kernel = emulateGemm(a, w, kind, bias);

    test(`M ${M} K ${K} N ${N} w ${kind}: the kernel keeps its promise, not the exact one`, () => {
      expect(used(kernel, promise)).toBeLessThanOrEqual(1);
      expect(used(kernel, exact)).toBeGreaterThan(1);
    });
    if (kind === "f16") {
      test(`M ${M} K ${K} N ${N} w f16: activations rounded to bf16 instead break the promise`, () => {
        expect(used(emulateGemm(a, w, "bf16", bias), promise)).toBeGreaterThan(1);
      });
    }
  }
});

describe("attention on tensor cores", () => {
  const configs = [
    { B: 1, Lq: 135, Lk: 130, H: 2, D: 64 },
    { B: 1, Lq: 33, Lk: 200, H: 1, D: 128, kvLen: 150 },
    { B: 1, Lq: 24, Lk: 80, H: 2, D: 16, blockCausal: { blockSize: 8, qOffset: 56 } },
    { B: 1, Lq: 130, Lk: 130, H: 2, D: 32, blockCausal: { blockSize: 40, qOffset: 0 } },
  ];
  for (const { B, Lq, Lk, H, D, ...mask } of configs) {
    const q = host([B, Lq, H, D], r(B * Lq * H * D)), k = host([B, Lk, H, D], r(B * Lk * H * D)), v = host([B, Lk, H, D], r(B * Lk * H * D));
    const opts = { scale: 1 / Math.sqrt(D), ...mask };
    const exact: Expected = { want: R.attention(q, k, v, opts).f32, atol: 1e-5, rtol: 0 };
    const promise = tensorCoreAttention(q, k, v, opts);
    const kernel = emulateAttention(q, k, v, opts);
    const name = `Lq ${Lq} Lk ${Lk} D ${D}${mask.kvLen ? ` kvLen ${mask.kvLen}` : ""}${mask.blockCausal ? ` block ${mask.blockCausal.blockSize}` : ""}`;

    test(`${name}: the kernel keeps its promise, not the exact one`, () => {
      expect(used(kernel, promise)).toBeLessThanOrEqual(1);
      expect(used(kernel, exact)).toBeGreaterThan(1);
    });
    test(`${name}: P rounded to 5 significant bits, or 10× the kernel's error, breaks the promise`, () => {
      expect(used(emulateAttention(q, k, v, opts, 5), promise)).toBeGreaterThan(1);
      expect(used(promise.want.map((x, i) => x + 10 * (kernel[i]! - x)), promise)).toBeGreaterThan(1);
    });
  }
});
