// Op-sweep cases for bf16 activations (backend.ts, "Activations"): every op that takes or makes a
// bf16 activation in the DiT — gemm (a bf16; out bf16 with no epilogue, GELU or a split; a bf16 into
// an f32 gated residual), attention (q/k/v bf16, out bf16, and each alone), layerNorm and
// layerNormModulate into bf16, rmsNorm / rmsNormRope / rope3d on bf16 (in place too), axpby on bf16.
// The reference takes a bf16 input as the values it holds (asStored) and holds a bf16 output to the
// f32 promise plus one rounding (op-precision.ts bf16Output); the CUDA passes force every GEMM and
// attention kernel on these cases too, against the tensor-core promise plus that rounding.
import type { GemmEpilogue } from "../../src/runtime/backend.ts";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType } from "../../src/runtime/tensor.ts";
import { type OpCase, asStored, host, rng, runOp, wanRopeTables } from "./op-helpers.ts";
import { type Expected, bf16Output, epilogueTol, reductionTol, tensorCoreAttention, tensorCoreGemmEpilogue } from "./op-precision.ts";

const maxAbs = (xs: Float32Array) => xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
/** The promise for an output of dtype `out`: as it is for f32, with one more rounding for bf16. */
const stored = (e: Expected, out: DType) => (out === "bf16" ? bf16Output(e) : e);

export function bf16GemmCases(): OpCase[] {
  const r = rng(21);
  const cases: OpCase[] = [];
  // [B, L, K], N, weight dtype
  const shapes: [number, number, number, number, DType][] = [
    [1, 1, 1, 1, "bf16"], // length 1 (SIMT everywhere: K % 8 ≠ 0)
    [2, 37, 129, 53, "bf16"], // edge tiles, K off 8: SIMT with bf16 a
    [1, 97, 520, 70, "f16"], // bf16 a into f16 weights: rounded to f16 for the tensor cores
    [2, 130, 264, 258, "bf16"], // past one 128×256 wgmma tile in M and N
    [1, 33, 64, 13, "bf16"], // N odd: single stores, mma.sync where wgmma is asked for
    [2, 65, 300, 600, "f32"], // f32 weights: SIMT with bf16 a and out
  ];
  for (const [B, L, K, N, dt] of shapes) {
    const a = host([B, L, K], r(B * L * K)), w = host([N, K], r(N * K)), bias = host([N], r(N));
    const a16 = asStored(a, "bf16"), sw = asStored(w, dt);
    const res = host([B, L, N], r(B * L * N)), gate = host([B, 1, N], r(B * N));
    const parts = [3, 2, 5].find((p) => N % p === 0) ?? N;
    // [label, a dtype, out dtype, epilogue]
    const variants: [string, DType, DType, R.HostEpilogue | null][] = [
      ["a bf16", "bf16", "f32", null],
      ["a f32 → bf16", "f32", "bf16", null],
      ["a bf16 → bf16, GELU", "bf16", "bf16", { kind: "gelu" }],
      [`a bf16 → bf16, split into ${parts} parts`, "bf16", "bf16", { kind: "split", parts }],
      ["a bf16, residual + gate in place", "bf16", "f32", { kind: "residual", residual: res, gate }],
    ];
    for (const [label, aDt, outDt, e] of variants) {
      const aRef = aDt === "bf16" ? a16 : a;
      const y = R.gemm(aRef, sw, bias).f32;
      const tol = e ? epilogueTol(y, K, e) : reductionTol(K);
      const outShape = e?.kind === "split" ? [e.parts, B, L, N / e.parts] : [B, L, N];
      cases.push({
        op: "gemm", name: `M ${B * L} N ${N} K ${K} w ${dt} +bias, ${label}`, ...tol,
        ref: () => R.gemm(aRef, sw, bias, e).f32,
        tensorCores: dt === "f32" ? undefined : () => stored(tensorCoreGemmEpilogue(aRef, sw, dt as HalfKind, bias, e ?? { kind: "split", parts: 1 }), outDt),
        run: (be) => runOp(be, (up, alloc, inOut) => {
          const inPlace = e?.kind === "residual";
          const o = inPlace ? inOut(res) : alloc(outShape, outDt);
          const epi: GemmEpilogue | null = e?.kind === "residual" ? { kind: "residual", residual: o, gate: up(gate) } : e;
          be.gemm(o, up(a, aDt), up(w, dt), up(bias), epi);
          return o;
        }),
        bf16Out: outDt === "bf16",
      } as OpCase & { bf16Out: boolean });
    }
  }
  return cases.map(withStoredRef);
}

/** Cases marked bf16Out are held to the f32 promise plus one rounding on the exact kernels too. */
function withStoredRef(c: OpCase & { bf16Out?: boolean }): OpCase {
  if (!c.bf16Out) return c;
  let e: Expected | null = null;
  return { ...c, expected: () => (e ??= bf16Output({ want: c.ref(), atol: c.atol, rtol: c.rtol })) };
}

export function bf16AttentionCases(): OpCase[] {
  const r = rng(22);
  const configs = [
    { B: 1, Lq: 5, Lk: 7, H: 2, D: 8 }, // SIMT on CUDA (D 8), widening bf16
    { B: 1, Lq: 135, Lk: 130, H: 2, D: 64 },
    { B: 1, Lq: 33, Lk: 200, H: 1, D: 128, kvLen: 150 }, // a KV cache's filled part
    { B: 2, Lq: 130, Lk: 130, H: 2, D: 32, block: [40, 0] as [number, number] },
    { B: 1, Lq: 64, Lk: 512, H: 2, D: 128 }, // the DiT's head size over several key tiles
  ];
  const cases: OpCase[] = [];
  for (const c of configs) {
    const { B, Lq, Lk, H, D } = c;
    const q = host([B, Lq, H, D], r(B * Lq * H * D)), k = host([B, Lk, H, D], r(B * Lk * H * D)), v = host([B, Lk, H, D], r(B * Lk * H * D));
    const opts = { scale: 1 / Math.sqrt(D), kvLen: c.kvLen, blockCausal: c.block ? { blockSize: c.block[0], qOffset: c.block[1] } : undefined };
    for (const [inDt, outDt] of [["bf16", "bf16"], ["bf16", "f32"], ["f32", "bf16"]] as const) {
      const [qr, kr, vr] = [q, k, v].map((h) => (inDt === "bf16" ? asStored(h, "bf16") : h)) as [R.Host, R.Host, R.Host];
      const ref = () => R.attention(qr, kr, vr, opts).f32;
      cases.push(withStoredRef({
        headDim: D,
        op: "attention", name: `B ${B} Lq ${Lq} Lk ${Lk} H ${H} D ${D}${c.kvLen ? `, kvLen ${c.kvLen}` : ""}${c.block ? `, block ${c.block}` : ""}, q/k/v ${inDt} → ${outDt}`,
        atol: 1e-5, rtol: 0, ref,
        tensorCores: () => stored(tensorCoreAttention(qr, kr, vr, opts), outDt),
        run: (be) => runOp(be, (up, alloc) => {
          const o = alloc([B, Lq, H, D], outDt);
          be.attention(o, up(q, inDt), up(k, inDt), up(v, inDt), opts);
          return o;
        }),
        bf16Out: outDt === "bf16",
      } as OpCase & { bf16Out: boolean }));
    }
  }
  return cases;
}

export function bf16NormCases(): OpCase[] {
  const r = rng(23);
  const cases: OpCase[] = [];
  const bf = (c: OpCase) => withStoredRef({ ...c, bf16Out: true } as OpCase & { bf16Out: boolean });
  for (const shape of [[1, 1], [3, 7], [2, 5, 1536]]) {
    const C = shape[shape.length - 1]!, n = shape.reduce((a, b) => a * b);
    const x = host(shape, r(n).map((v) => 3 + 2 * v)), w = host([C], r(C)), b = host([C], r(C));
    cases.push(bf({ op: "layerNorm", name: `[${shape}] affine → bf16`, atol: 1e-5, rtol: 0, ref: () => R.layerNorm(x, 1e-6, w, b).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape, "bf16"); be.layerNorm(o, up(x), 1e-6, up(w), up(b)); return o; }) }));
    const x16 = asStored(host(shape, r(n, -4, 4)), "bf16");
    cases.push(bf({ op: "rmsNorm", name: `[${shape}] bf16 weight, in place`, atol: 1e-5 * maxAbs(w.f32), rtol: 0, ref: () => R.rmsNorm(x16, 1e-6, w).f32,
      run: (be) => runOp(be, (up, _alloc, inOut) => { const t = inOut(x16, "bf16"); be.rmsNorm(t, t, 1e-6, up(w)); return t; }) }));
  }
  for (const [B, L, C, G] of [[1, 1, 1, 1], [2, 12, 7, 3], [1, 300, 1536, 2]]) {
    const x = host([B, L, C], r(B * L * C).map((v) => 3 + 2 * v));
    const sc = host([B, G, C], r(B * G * C)), sh = host([B, G, C], r(B * G * C));
    cases.push(bf({ op: "layerNormModulate", name: `x [${B},${L},${C}] table [${B},${G},${C}] → bf16`, atol: 1e-5 * (1 + maxAbs(sc.f32)), rtol: 0,
      ref: () => R.layerNormModulate(x, 1e-6, sc, sh).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc([B, L, C], "bf16"); be.layerNormModulate(o, up(x), 1e-6, up(sc), up(sh)); return o; }) }));
  }
  const configs = [
    { shape: [1, 14, 2, 16], axis: [6, 4, 4], pairs: [3, 2, 2] as const, grid: [2, 3, 2] as const, f0: 5, P: 10 },
    { shape: [2, 48, 3, 128], axis: [44, 42, 42], pairs: [22, 21, 21] as const, grid: [2, 4, 6] as const, f0: 1000, P: 1024 },
  ];
  for (const c of configs) {
    const [, , H, D] = c.shape as [number, number, number, number];
    const x16 = asStored(host(c.shape, r(c.shape.reduce((a, b) => a * b)).map((v) => 4 * v)), "bf16");
    const w = host([H * D], r(H * D, 0.5, 1.5));
    const t = wanRopeTables(c.P, c.axis);
    const opts = { axisPairs: c.pairs, grid: c.grid, frameOffset: c.f0 };
    const name = `x [${c.shape}] bf16 pairs ${c.pairs} +${c.f0}`;
    for (const inPlace of [false, true]) {
      cases.push(bf({ op: "rmsNormRope", name: `${name} weight${inPlace ? " in place" : ""}`, atol: 1.5e-5, rtol: 0,
        ref: () => R.rmsNormRope(x16, 1e-6, w, { ...opts, ...t }).f32,
        run: (be) => runOp(be, (up, alloc, inOut) => {
          const o = inPlace ? inOut(x16, "bf16") : alloc(c.shape, "bf16");
          be.rmsNormRope(o, inPlace ? o : up(x16, "bf16"), 1e-6, up(w), { ...opts, cos: up(t.cos), sin: up(t.sin) });
          return o;
        }) }));
    }
    cases.push(bf({ op: "rope3d", name: `${name} in place`, atol: 1e-6 * 4, rtol: 0, ref: () => R.rope3d(x16, { ...opts, ...t }).f32,
      run: (be) => runOp(be, (up, _alloc, inOut) => { const o = inOut(x16, "bf16"); be.rope3d(o, o, { ...opts, cos: up(t.cos), sin: up(t.sin) }); return o; }) }));
  }
  for (const shape of [[1], [3, 1001]]) {
    const n = shape.reduce((a, b) => a * b);
    const a = asStored(host(shape, r(n)), "bf16"), b = asStored(host(shape, r(n)), "bf16");
    cases.push(bf({ op: "axpby", name: `[${shape}] bf16 a + b, in place`, atol: 1e-7, rtol: 1e-6, ref: () => R.axpby(a, b, 1, 1).f32,
      run: (be) => runOp(be, (up, _alloc, inOut) => { const o = inOut(a, "bf16"); be.axpby(o, o, up(b, "bf16"), 1, 1); return o; }) }));
  }
  return cases;
}
