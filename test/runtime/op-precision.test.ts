// The op sweep's tolerances for the CUDA tensor-core kernels (op-precision.ts), tested without a GPU
// on TypeScript imitations of those kernels (tensor-core-emulation.ts), on the shapes that failed the
// exact tolerances on an H200 (and for conv3d, Wan-VAE-like channel counts): each promise accepts a
// kernel that rounds as the real one does, and rejects one that rounds more coarsely (activations
// rounded to bf16 where the promise is f16; P rounded to 5 significant bits instead of bf16's 8 —
// or 10× the kernel's error; conv operands rounded to 7 bits); the exact promise rejects the
// tensor-core kernels.
import { describe, expect, test } from "bun:test";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import { asStored, host, rng } from "./op-helpers.ts";
import { type Expected, compare, reductionTol, tensorCoreAttention, tensorCoreConv, tensorCoreGemm } from "./op-precision.ts";
import { emulateAttention, emulateConv, emulateGemm } from "./tensor-core-emulation.ts";

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

describe("conv3d on tensor cores", () => {
  const shapes: { x: number[]; w: number[]; kind: "f32" | "bf16" | "f16"; opts: Parameters<typeof R.conv3d>[3] }[] = [
    // a Wan-VAE residual conv in miniature: 3³ causal with a 2-frame cache, Cin past one 32-channel step
    { x: [1, 48, 2, 6, 8], w: [40, 48, 3, 3, 3], kind: "f32", opts: { pad: [1, 1, 1, 1] } },
    { x: [1, 64, 1, 5, 7], w: [24, 64, 1, 1, 1], kind: "f16", opts: {} }, // a 1×1×1 shortcut, f16 weights
    { x: [2, 20, 1, 9, 9], w: [3, 20, 1, 3, 3], kind: "bf16", opts: { stride: [1, 2, 2], pad: [0, 1, 0, 1], timePad: 0 } },
  ];
  for (const { x: xs, w: ws, kind, opts } of shapes) {
    const n = (s: number[]) => s.reduce((a, b) => a * b);
    const x = host(xs, r(n(xs))), w = asStored(host(ws, r(n(ws))), kind), bias = host([ws[0]!], r(ws[0]!));
    const tp = opts?.timePad ?? ws[2]! - 1;
    const prevShape = [xs[0]!, xs[1]!, tp, xs[3]!, xs[4]!];
    const withPrev = { ...opts, prev: tp ? host(prevShape, r(n(prevShape))) : undefined };
    const K = n(ws.slice(1));
    const exact: Expected = { want: R.conv3d(x, w, bias, withPrev).f32, ...reductionTol(K) };
    const promise = tensorCoreConv(x, w, bias, withPrev);
    const kernel = emulateConv(x, w, bias, withPrev);
    const name = `x [${xs}] w [${ws}] ${kind}`;

    test(`${name}: the kernel keeps its promise, not the exact one`, () => {
      expect(used(kernel, promise)).toBeLessThanOrEqual(1);
      expect(used(kernel, exact)).toBeGreaterThan(1);
    });
    test(`${name}: operands rounded to 7 significant bits instead of bf16's 8 break the promise`, () => {
      expect(used(emulateConv(x, w, bias, withPrev, 7), promise)).toBeGreaterThan(1);
    });
  }
});
