// The cases of the op sweep (ops.test.ts): every Backend op on awkward shapes — length 1, odd sizes,
// sizes that are not multiples of the kernels' tiles, large K (GEMM, attention and convolution cases
// are in op-cases-heavy.ts, the fused ops of the DiT block in op-cases-fused.ts) — each with its
// reference from src/runtime/reference.ts and a tolerance: a case passes when every element satisfies
// |got − ref| ≤ atol + rtol · max|ref| (op-precision.ts).
import * as R from "../../src/runtime/reference.ts";
import { gemmEpilogueCases, layerNormModulateCases, rmsNormRopeCases } from "./op-cases-fused.ts";
import { bf16AttentionCases, bf16GemmCases, bf16NormCases } from "./op-cases-bf16.ts";
import { attentionCases, convCases, gemmCases } from "./op-cases-heavy.ts";
import { type OpCase, asStored, host, rng, runOp, wanRopeTables } from "./op-helpers.ts";

const EXACT = { atol: 0, rtol: 0 };

function unaryCases(): OpCase[] {
  const r = rng(1);
  const cases: OpCase[] = [];
  for (const shape of [[1], [7], [3, 1001]]) {
    const x = host(shape, r(shape.reduce((a, b) => a * b), -10, 10));
    for (const [op, f] of [["gelu", R.gelu], ["geluExact", R.geluExact], ["silu", R.silu]] as const) {
      cases.push({ op, name: `[${shape}]`, atol: 1e-6, rtol: 1e-6, ref: () => f(x).f32,
        run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be[op](o, up(x)); return o; }) });
    }
    const y = host(shape, r(x.f32.length));
    cases.push({ op: "mul", name: `[${shape}]`, atol: 0, rtol: 1e-7, ref: () => R.mul(x, y).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.mul(o, up(x), up(y)); return o; }) });
    cases.push({ op: "axpby", name: `[${shape}] 0.3·a − 1.7·b`, atol: 0, rtol: 1e-6, ref: () => R.axpby(x, y, 0.3, -1.7).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.axpby(o, up(x), up(y), 0.3, -1.7); return o; }) });
    cases.push({ op: "fill", name: `[${shape}]`, ...EXACT, ref: () => new Float32Array(x.f32.length).fill(2.5),
      run: (be) => runOp(be, (_up, alloc) => { const o = alloc(shape); be.fill(o, 2.5); return o; }) });
  }
  return cases;
}

function normCases(): OpCase[] {
  const r = rng(2);
  const cases: OpCase[] = [];
  for (const shape of [[1, 1], [3, 7], [2, 5, 1536]]) {
    const C = shape[shape.length - 1]!, n = shape.reduce((a, b) => a * b);
    const x = host(shape, r(n).map((v) => 3 + 2 * v)); // mean ≠ 0 on purpose
    const w = host([C], r(C)), b = host([C], r(C));
    for (const [wt, bs] of [[null, null], [w, b]] as const) {
      cases.push({ op: "layerNorm", name: `[${shape}]${wt ? " affine" : ""}`, atol: 1e-5, rtol: 0,
        ref: () => R.layerNorm(x, 1e-6, wt, bs).f32,
        run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.layerNorm(o, up(x), 1e-6, wt && up(wt), bs && up(bs)); return o; }) });
      cases.push({ op: "rmsNorm", name: `[${shape}]${wt ? " weight" : ""}`, atol: 1e-5, rtol: 0,
        ref: () => R.rmsNorm(x, 1e-6, wt).f32,
        run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.rmsNorm(o, up(x), 1e-6, wt && up(wt)); return o; }) });
    }
    const big = host(shape, r(n, -30, 30));
    cases.push({ op: "softmax", name: `[${shape}] logits ±30`, atol: 1e-6, rtol: 0, ref: () => R.softmax(big).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.softmax(o, up(big)); return o; }) });
  }
  // in place: out === x
  const xi = host([4, 13], r(52));
  cases.push({ op: "rmsNorm", name: "[4,13] in place", atol: 1e-5, rtol: 0, ref: () => R.rmsNorm(xi, 1e-6).f32,
    run: (be) => runOp(be, (_up, _alloc, inOut) => { const t = inOut(xi); be.rmsNorm(t, t, 1e-6); return t; }) });
  for (const shape of [[1, 3, 1], [2, 5, 7], [1, 16, 2, 5, 6]]) {
    const C = shape[1]!, x = host(shape, r(shape.reduce((a, b) => a * b)));
    const g = host([C], r(C, 0.5, 1.5));
    cases.push({ op: "l2NormChannels", name: `[${shape}] gamma`, atol: 1e-5, rtol: 0,
      ref: () => R.l2NormChannels(x, 1e-12, Math.sqrt(C), g).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(shape); be.l2NormChannels(o, up(x), 1e-12, Math.sqrt(C), up(g)); return o; }) });
  }
  return cases;
}

function ropeCases(): OpCase[] {
  const r = rng(4);
  const cases: OpCase[] = [];
  const configs = [
    { shape: [1, 14, 2, 16], axis: [6, 4, 4], pairs: [3, 2, 2] as const, grid: [2, 3, 2] as const, f0: 5, P: 10 },
    { shape: [2, 48, 3, 128], axis: [44, 42, 42], pairs: [22, 21, 21] as const, grid: [2, 4, 6] as const, f0: 1000, P: 1024 },
  ];
  for (const c of configs) {
    const x = host(c.shape, r(c.shape.reduce((a, b) => a * b)));
    const t = wanRopeTables(c.P, c.axis);
    const opts = { axisPairs: c.pairs, grid: c.grid, frameOffset: c.f0 };
    const name = `x [${c.shape}] pairs ${c.pairs} grid ${c.grid} +${c.f0}`;
    cases.push({ op: "rope3d", name, atol: 1e-6, rtol: 0, ref: () => R.rope3d(x, { ...opts, ...t }).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(c.shape); be.rope3d(o, up(x), { ...opts, cos: up(t.cos), sin: up(t.sin) }); return o; }) });
    cases.push({ op: "rope3d", name: `${name} in place`, atol: 1e-6, rtol: 0, ref: () => R.rope3d(x, { ...opts, ...t }).f32,
      run: (be) => runOp(be, (up, _alloc, inOut) => { const o = inOut(x); be.rope3d(o, o, { ...opts, cos: up(t.cos), sin: up(t.sin) }); return o; }) });
  }
  // the frame offset partly read at run time (frameOffsetAt): 2 + 3 frames; and one that puts the
  // second of the grid's two frames past the 10-row table, whose tokens then pass unrotated
  const c = configs[0]!, x = host(c.shape, r(c.shape.reduce((a, b) => a * b))), t = wanRopeTables(c.P, c.axis);
  for (const [f0, at] of [[2, 3], [3, 6]] as const) {
    const opts = { axisPairs: c.pairs, grid: c.grid, frameOffset: f0 }, atHost = host([1], Float32Array.of(at));
    cases.push({ op: "rope3d", name: `x [${c.shape}] grid ${c.grid} +${f0} + ${at} read at run time${f0 + at + 2 > c.P ? ", frames past the table" : ""}`, atol: 1e-6, rtol: 0,
      ref: () => R.rope3d(x, { ...opts, ...t, frameOffsetAt: atHost }).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(c.shape); be.rope3d(o, up(x), { ...opts, cos: up(t.cos), sin: up(t.sin), frameOffsetAt: up(atHost) }); return o; }) });
  }
  return cases;
}

function lookupCases(): OpCase[] {
  const r = rng(5);
  const cases: OpCase[] = [];
  const ids = Int32Array.from([0, 49, 3, 3, 17, 1, 48, 25, 9, 0, 33, 12, 7]);
  for (const dt of ["f32", "bf16", "f16"] as const) {
    const table = host([50, 7], r(350));
    cases.push({ op: "embedding", name: `[50,7] ${dt}, 13 ids`, ...EXACT, ref: () => R.embedding(asStored(table, dt), ids).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc([ids.length, 7]); be.embedding(o, up(table, dt), ids); return o; }) });
  }
  for (const [H, Lq, Lk, bidirectional] of [[4, 150, 150, true], [2, 1, 9, true], [3, 20, 300, false]] as const) {
    const o = { numBuckets: 32, maxDistance: 128, bidirectional };
    const table = host([32, H], r(32 * H));
    cases.push({ op: "t5RelativeBias", name: `H ${H} Lq ${Lq} Lk ${Lk}${bidirectional ? "" : " causal"}`, ...EXACT,
      ref: () => R.t5RelativeBias(table, Lq, Lk, o).f32,
      run: (be) => runOp(be, (up, alloc) => { const out = alloc([H, Lq, Lk]); be.t5RelativeBias(out, up(table), o); return out; }) });
  }
  return cases;
}

function layoutCases(): OpCase[] {
  const r = rng(6);
  const cases: OpCase[] = [];
  const x = host([2, 10, 3, 4], r(240));
  cases.push({ op: "slice", name: "[2,10,3,4] dim 1 [3,8)", ...EXACT, ref: () => R.slice(x, 1, 3, 5).f32,
    run: (be) => runOp(be, (up, alloc) => { const o = alloc([2, 5, 3, 4]); be.slice(o, up(x), 1, 3); return o; }) });
  cases.push({ op: "slice", name: "[2,10,3,4] dim −1 [1,4)", ...EXACT, ref: () => R.slice(x, 3, 1, 3).f32,
    run: (be) => runOp(be, (up, alloc) => { const o = alloc([2, 10, 3, 3]); be.slice(o, up(x), -1, 1); return o; }) });
  const cache = host([2, 20, 2, 8], r(640)), kNew = host([2, 6, 2, 8], r(192));
  cases.push({ op: "writeSlice", name: "KV append [2,6,2,8] → [2,20,2,8] at 7", ...EXACT, ref: () => R.writeSlice(cache, kNew, 1, 7).f32,
    run: (be) => runOp(be, (up, _alloc, inOut) => { const c = inOut(cache); be.writeSlice(c, up(kNew), 1, 7); return c; }) });
  // copyWithin: a KV cache's eviction (the kept frames down by one chunk, over 6 pieces; with a sink
  // left in place), a move up over overlapping ranges, disjoint ranges, an empty move, bf16
  const frames = host([3, 21, 2, 8], r(1008));
  for (const [to, from, len, dt] of [[0, 3, 18, "f32"], [1, 4, 17, "f32"], [6, 2, 13, "f32"], [0, 18, 3, "f32"], [4, 4, 9, "f32"], [2, 7, 14, "bf16"]] as const) {
    const stored = asStored(frames, dt);
    cases.push({ op: "copyWithin", name: `[3,21,2,8] dim 1 [${from},${from + len}) → ${to} ${dt}`, ...EXACT, ref: () => R.copyWithin(stored, 1, to, from, len).f32,
      run: (be) => runOp(be, (_up, _alloc, inOut) => { const t = inOut(stored, dt); be.copyWithin(t, 1, to, from, len); return t; }) });
  }
  const parts = [host([2, 1, 5], r(10)), host([2, 3, 5], r(30)), host([2, 2, 5], r(20))];
  for (const dim of [1, 0, 2]) {
    const second = dim === 0 ? [1, 3, 5] : [2, 3, 1];
    const ins = dim === 1 ? parts : [host([2, 3, 5], r(30)), host(second, r(second.reduce((a, b) => a * b)))];
    const outShape = R.concat(ins, dim).shape;
    for (const dt of dim === 1 ? (["f32", "bf16"] as const) : (["f32"] as const)) {
      const stored = ins.map((h) => asStored(h, dt));
      cases.push({ op: "concat", name: `${ins.length} inputs dim ${dim} ${dt}`, ...EXACT, ref: () => R.concat(stored, dim).f32,
        run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape, dt); be.concat(o, ins.map((h) => up(h, dt)), dim); return o; }) });
    }
  }
  const perms: [number[], number[]][] = [[[2, 3, 4, 5], [0, 2, 1, 3]], [[2, 3, 4, 5], [3, 1, 2, 0]], [[1, 2, 3, 4, 2, 2], [0, 2, 4, 1, 3, 5]], [[7], [0]]];
  for (const [shape, perm] of perms) {
    const xp = host([...shape], r(shape.reduce((a, b) => a * b)));
    const outShape = perm.map((p) => shape[p]!);
    cases.push({ op: "permute", name: `[${shape}] perm [${perm}]`, ...EXACT, ref: () => R.permute(xp, perm).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape); be.permute(o, up(xp), perm); return o; }) });
  }
  const bytes = host([3, 4, 5], Uint8Array.from({ length: 60 }, (_, i) => (i * 37) & 255));
  cases.push({ op: "permute", name: "u8 [3,4,5] perm [2,0,1]", ...EXACT, ref: () => Float32Array.from(R.permute(bytes, [2, 0, 1]).data),
    run: (be) => runOp(be, (up, alloc) => { const o = alloc([5, 3, 4], "u8"); be.permute(o, up(bytes), [2, 0, 1]); return o; }) });
  for (const [inShape, outShape] of [[[5], [15]], [[1, 2, 3, 4], [1, 2, 6, 8]], [[1, 2, 2, 3, 3], [1, 2, 2, 6, 6]], [[2, 3, 1, 2, 5], [2, 3, 2, 4, 10]]]) {
    const xu = host(inShape!, r(inShape!.reduce((a, b) => a * b)));
    cases.push({ op: "upsampleNearest", name: `[${inShape}] → [${outShape}]`, ...EXACT, ref: () => R.upsampleNearest(xu, outShape!).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape!); be.upsampleNearest(o, up(xu)); return o; }) });
  }
  // Up (the native-size frames to a requested size), down (antialiased), one axis each way, 1-pixel sides.
  for (const [inShape, outShape] of [[[3, 2, 8, 8], [3, 2, 17, 30]], [[3, 1, 64, 64], [3, 1, 9, 13]], [[2, 7, 5], [2, 3, 11]], [[1, 1], [3, 2]], [[4, 1], [1, 1]]]) {
    const xs = host(inShape!, r(inShape!.reduce((a, b) => a * b)));
    const [Ho, Wo] = outShape!.slice(-2) as [number, number];
    cases.push({ op: "resize", name: `[${inShape}] → [${outShape}]`, atol: 1e-5, rtol: 0, ref: () => R.resize(xs, Ho, Wo).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape!); be.resize(o, up(xs)); return o; }) });
  }
  // PyTorch's bicubic (an input image to CLIP's 224² and to the VAE's size): up, down by more than 16×
  // (it never widens), odd ratios, taps clamped at both borders, 1-pixel sides.
  for (const [inShape, outShape] of [[[3, 27, 41], [3, 56, 56]], [[3, 75, 97], [3, 56, 56]], [[1, 400, 37], [1, 20, 5]], [[2, 7, 5], [2, 3, 11]], [[1, 1], [3, 2]], [[4, 1], [1, 1]]]) {
    const xs = host(inShape!, r(inShape!.reduce((a, b) => a * b)));
    const [Ho, Wo] = outShape!.slice(-2) as [number, number];
    cases.push({ op: "resize", name: `torch [${inShape}] → [${outShape}]`, atol: 1e-5, rtol: 0, ref: () => R.resize(xs, Ho, Wo, { filter: "torch" }).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape!); be.resize(o, up(xs), { filter: "torch" }); return o; }) });
  }
  for (const [from, to] of [["f32", "bf16"], ["f32", "f16"], ["bf16", "f32"], ["f16", "bf16"]] as const) {
    const xc = host([3, 33], r(99, -70000, 70000).map((v, i) => (i % 3 ? v / 1e4 : i % 2 ? v * 1e-9 : v)));
    const want = asStored(asStored(xc, from), to).f32;
    cases.push({ op: "cast", name: `${from} → ${to} [3,33]`, ...EXACT, ref: () => want,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc([3, 33], to); be.cast(o, up(xc, from)); return o; }) });
  }
  return cases;
}

function yuvCases(): OpCase[] {
  const r = rng(7);
  const cases: OpCase[] = [];
  for (const [T, H, W] of [[1, 2, 2], [2, 6, 8], [3, 10, 14]]) {
    // a little out of range (clamped), and the samples where rounding could part: 0 lands on 127.5
    // exactly (rounded up), ±1 and their neighbours, tiny values that vanish in x + 1, NaN (code 0)
    const edges = [0, 1, -1, 1 - 2 ** -24, -1 + 2 ** -24, 1e-30, -1e-30, NaN, Infinity, -Infinity, 0.5, 2 ** -9];
    for (const [lo, hi] of [[-1, 1], [0, 1]] as const) {
      const values = r(3 * T * H * W, lo - 0.1, hi + 0.1);
      edges.forEach((v, i) => (values[(i * 7) % values.length] = v));
      const x = host([3, T, H, W], values);
      cases.push({ op: "rgbToYuv420", name: `[3,${T},${H},${W}] range [${lo},${hi}]`, ...EXACT,
        ref: () => Float32Array.from(R.rgbToYuv420(x, [lo, hi]).data),
        run: (be) => runOp(be, (up, alloc) => { const o = alloc([T, (H * W * 3) / 2], "u8"); be.rgbToYuv420(o, up(x), [lo, hi]); return o; }) });
    }
    const yuv = host([T, (H * W * 3) / 2], Uint8Array.from(r((T * H * W * 3) / 2, 0, 256), Math.floor));
    cases.push({ op: "yuv420ToRgb", name: `[${T}, ${H}x${W}] range [0,1]`, atol: 1e-5, rtol: 0,
      ref: () => R.yuv420ToRgb(yuv, H, W, [0, 1]).f32,
      run: (be) => runOp(be, (up, alloc) => { const o = alloc([3, T, H, W]); be.yuv420ToRgb(o, up(yuv), [0, 1]); return o; }) });
  }
  return cases;
}

export function allCases(): OpCase[] {
  return [
    ...gemmCases(), ...gemmEpilogueCases(), ...attentionCases(), ...convCases(), ...unaryCases(), ...normCases(),
    ...layerNormModulateCases(), ...ropeCases(), ...rmsNormRopeCases(), ...lookupCases(), ...layoutCases(), ...yuvCases(),
    ...bf16GemmCases(), ...bf16AttentionCases(), ...bf16NormCases(),
  ];
}
