// Op-sweep cases for the fused ops of the DiT block (backend.ts): layerNormModulate (adaLN: norm1,
// norm2, the head), rmsNormRope (the q/k path), and gemm's epilogues (GELU after the FFN's
// up-projection, gated residuals after the output projections). The GEMM shapes cross the blocking
// edges of the CPU kernels (a K in two KC blocks is where an in-place residual must be read before the
// first partial sum overwrites it) and the CUDA tiles, and run on every forced GEMM path.
import type { GemmEpilogue } from "../../src/runtime/backend.ts";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType } from "../../src/runtime/tensor.ts";
import { type OpCase, asStored, host, rng, runOp, wanRopeTables } from "./op-helpers.ts";
import { epilogueTol, tensorCoreGemmEpilogue } from "./op-precision.ts";

const maxAbs = (xs: Float32Array) => xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

export function layerNormModulateCases(): OpCase[] {
  const r = rng(3);
  const cases: OpCase[] = [];
  // [B, L, C, G]: G = 1 per sample, G = L per token, in between per frame
  for (const [B, L, C, G] of [[1, 1, 1, 1], [2, 12, 7, 1], [2, 12, 7, 3], [1, 12, 37, 12], [1, 300, 1536, 2], [3, 10, 131, 5]]) {
    const x = host([B, L, C], r(B * L * C).map((v) => 3 + 2 * v)); // mean ≠ 0 on purpose
    const sc = host([B, G, C], r(B * G * C)), sh = host([B, G, C], r(B * G * C));
    // the norm's 1e-5 on unit-scale values, times the modulation's 1 + scale
    const atol = 1e-5 * (1 + maxAbs(sc.f32));
    const name = `x [${B},${L},${C}] table [${B},${G},${C}]`;
    cases.push({ op: "layerNormModulate", name, atol, rtol: 0, ref: () => R.layerNormModulate(x, 1e-6, sc, sh).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc([B, L, C]); be.layerNormModulate(o, up(x), 1e-6, up(sc), up(sh)); return o; }) });
    if (G === 3 || L === 300) {
      cases.push({ op: "layerNormModulate", name: `${name} in place`, atol, rtol: 0, ref: () => R.layerNormModulate(x, 1e-6, sc, sh).f32,
        run: (be) => runOp(be, (up, _alloc, inOut) => { const t = inOut(x); be.layerNormModulate(t, t, 1e-6, up(sc), up(sh)); return t; }) });
    }
  }
  return cases;
}

export function rmsNormRopeCases(): OpCase[] {
  const r = rng(8);
  const cases: OpCase[] = [];
  const configs = [
    { shape: [1, 1, 1, 2], axis: [2], pairs: [1, 0, 0] as const, grid: [1, 1, 1] as const, f0: 0, P: 1 }, // length 1
    { shape: [1, 14, 2, 16], axis: [6, 4, 4], pairs: [3, 2, 2] as const, grid: [2, 3, 2] as const, f0: 5, P: 10 }, // tokens past the grid
    { shape: [3, 7, 3, 10], axis: [2, 4, 4], pairs: [1, 2, 2] as const, grid: [1, 2, 3] as const, f0: 0, P: 4 }, // odd pair count, width 30
    { shape: [2, 48, 3, 128], axis: [44, 42, 42], pairs: [22, 21, 21] as const, grid: [2, 4, 6] as const, f0: 1000, P: 1024 },
    { shape: [1, 6, 2, 12], axis: [4, 4], pairs: [2, 2, 0] as const, grid: [1, 2, 3] as const, f0: 0, P: 4 }, // pairs past the used ones
  ];
  for (const c of configs) {
    const [, , H, D] = c.shape as [number, number, number, number];
    const x = host(c.shape, r(c.shape.reduce((a, b) => a * b)).map((v) => 4 * v));
    const w = host([H * D], r(H * D, 0.5, 1.5));
    const t = wanRopeTables(c.P, c.axis);
    const opts = { axisPairs: c.pairs, grid: c.grid, frameOffset: c.f0 };
    for (const [weight, inPlace] of [[w, false], [null, true]] as const) {
      const name = `x [${c.shape}] pairs ${c.pairs} grid ${c.grid} +${c.f0}${weight ? " weight" : ""}${inPlace ? " in place" : ""}`;
      cases.push({ op: "rmsNormRope", name, atol: 1e-5 * (weight ? 1.5 : 1), rtol: 0, ref: () => R.rmsNormRope(x, 1e-6, weight, { ...opts, ...t }).f32,
        run: (be) => runOp(be, (up, alloc, inOut) => {
          const o = inPlace ? inOut(x) : alloc(c.shape);
          be.rmsNormRope(o, inPlace ? o : up(x), 1e-6, weight && up(weight), { ...opts, cos: up(t.cos), sin: up(t.sin) });
          return o;
        }) });
    }
  }
  // the frame offset read at run time (frameOffsetAt): within the tables, and past them for the
  // grid's second frame (those tokens only normalized)
  const c = configs[1]!, [, , H, D] = c.shape as [number, number, number, number];
  const x = host(c.shape, r(c.shape.reduce((a, b) => a * b)).map((v) => 4 * v)), w = host([H * D], r(H * D, 0.5, 1.5)), t = wanRopeTables(c.P, c.axis);
  for (const [f0, at] of [[0, 5], [3, 6]] as const) {
    const opts = { axisPairs: c.pairs, grid: c.grid, frameOffset: f0 }, atHost = host([1], Float32Array.of(at));
    cases.push({ op: "rmsNormRope", name: `x [${c.shape}] grid ${c.grid} +${f0} + ${at} read at run time${f0 + at + 2 > c.P ? ", frames past the table" : ""} weight`, atol: 1.5e-5, rtol: 0,
      ref: () => R.rmsNormRope(x, 1e-6, w, { ...opts, ...t, frameOffsetAt: atHost }).f32,
      run: (be) => runOp(be, (up, alloc) => {
        const o = alloc(c.shape);
        be.rmsNormRope(o, up(x), 1e-6, up(w), { ...opts, cos: up(t.cos), sin: up(t.sin), frameOffsetAt: up(atHost) });
        return o;
      }) });
  }
  return cases;
}

export function gemmEpilogueCases(): OpCase[] {
  const r = rng(14);
  const cases: OpCase[] = [];
  // [B, L, K], N, weight dtype, gate rows G per item (dividing L)
  const shapes: [number, number, number, number, DType, number][] = [
    [1, 1, 1, 1, "f32", 1], // length 1
    [2, 2, 17, 5, "f32", 2], // M = 4: the matrix-vector path; a gate row per token
    [1, 5, 0, 3, "f32", 1], // K = 0: the epilogue of the bias
    [2, 37, 129, 53, "bf16", 1], // edge tiles; one gate row per item
    [2, 65, 300, 600, "f32", 5], // K in two KC blocks, N past NC; threaded
    [1, 97, 520, 70, "f16", 97], // tensor cores; a gate row per token
    [2, 130, 264, 258, "bf16", 2], // past one 128×256 wgmma tile in M and in N; per-frame gates
    [1, 33, 64, 13, "bf16", 3], // N odd: mma.sync where wgmma is asked for
  ];
  for (const [B, L, K, N, dt, G] of shapes) {
    const a = host([B, L, K], r(B * L * K)), w = host([N, K], r(N * K)), bias = host([N], r(N));
    const stored = asStored(w, dt);
    const y = R.gemm(a, stored, bias).f32;
    const res = host([B, L, N], r(B * L * N)), gate = host([B, G, N], r(B * G * N));
    // a split output (q|k|v joined): parts of 200 columns (whole panels of the CPU's packed weights),
    // 35 (odd: no float2 pairs on CUDA), 86, and one column each where N is prime
    const parts = [3, 2, 5].find((p) => N % p === 0) ?? N;
    const epilogues: [string, R.HostEpilogue, boolean][] = [
      ["GELU", { kind: "gelu" }, false],
      [`residual + gate [${B},${G},${N}], in place`, { kind: "residual", residual: res, gate }, true],
      ["residual", { kind: "residual", residual: res }, false],
      [`split into ${parts} parts`, { kind: "split", parts }, false],
    ];
    for (const [label, e, inPlace] of epilogues) {
      cases.push({
        op: "gemm", name: `M ${B * L} N ${N} K ${K} w ${dt} +bias, ${label}`, ...epilogueTol(y, K, e),
        ref: () => R.gemm(a, stored, bias, e).f32,
        tensorCores: dt === "f32" ? undefined : () => tensorCoreGemmEpilogue(a, stored, dt as HalfKind, bias, e),
        run: (be) => runOp(be, (up, alloc, inOut) => {
          const o = inPlace ? inOut(res) : alloc(e.kind === "split" ? [e.parts, B, L, N / e.parts] : [B, L, N]);
          const epi: GemmEpilogue = e.kind !== "residual" ? e : { kind: "residual", residual: inPlace ? o : up(res), gate: e.gate && up(e.gate) };
          be.gemm(o, up(a), up(w, dt), up(bias), epi);
          return o;
        }),
      });
    }
  }
  return cases;
}
