// Op-sweep cases for the three compute-heavy ops (GEMM, attention, convolution): the shapes walk
// across every blocking boundary of the CPU kernels (kernels/cpu/gemm.h: MR 4, NR 8, KC 256, MC 96,
// NC 512; attention.c: 128-query chunks, 64-key blocks), the CUDA tensor-core tiles (wgmma 128×256,
// mma.sync 128×128, attention 128 or 64 queries × 64 keys) and the thread split thresholds. Tolerances scale
// with the reduction length (op-precision.ts); GEMM and attention cases also carry what a tensor-core
// kernel, which rounds its inputs, must produce. The conv cases also cross the tiles of the CUDA
// tensor-core convs (conv_wgmma.cu: 128 voxels × 192, 128 or 96 channels, 64 channels a K step;
// conv_mma.cu: 128 voxels × 128 or 96 channels, 256 × 16 for Cout ≤ 16, 32 channels
// of one tap per K step).
import type { Conv3dOptions } from "../../src/runtime/backend.ts";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import { conv3dOutputShape } from "../../src/runtime/op-params.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType } from "../../src/runtime/tensor.ts";
import { type OpCase, asStored, host, rng, runOp } from "./op-helpers.ts";
import { reductionTol, tensorCoreAttention, tensorCoreConv, tensorCoreConv2d, tensorCoreGemm } from "./op-precision.ts";

export function gemmCases(): OpCase[] {
  const r = rng(11);
  const cases: OpCase[] = [];
  const shapes: [number[], number, DType, boolean][] = [
    [[1, 1], 1, "f32", false],
    [[1, 13], 7, "f32", true],
    [[3, 17], 5, "f32", true], // M ≤ 4: the matrix-vector path
    [[3, 100], 2001, "bf16", true], // M ≤ 4, threaded over N
    [[5, 3], 9, "f32", false],
    [[2, 3, 65], 33, "f32", true], // leading dims
    [[37, 129], 53, "f32", true],
    [[37, 129], 53, "bf16", true],
    [[37, 129], 53, "f16", false],
    [[8, 4096], 16, "f32", false], // large K, many KC blocks
    [[130, 300], 600, "f32", true], // crosses MC, KC and NC; threaded
    // K % 8 = 0 with half weights: the CUDA tensor-core kernels (wgmma needs N even)
    [[97, 520], 70, "f16", true],
    [[1, 8], 2, "bf16", false],
    [[2, 3, 40], 72, "f16", false],
    [[33, 64], 13, "bf16", true], // N odd: mma.sync even where wgmma is asked for
    [[257, 136], 258, "bf16", true], // past one 128×256 wgmma tile in M and in N
  ];
  for (const [aShape, N, dt, withBias] of shapes) {
    const K = aShape[aShape.length - 1]!;
    const M = aShape.reduce((x, y) => x * y) / K;
    const a = host(aShape, r(M * K)), w = host([N, K], r(N * K)), bias = host([N], r(N));
    const outShape = [...aShape.slice(0, -1), N];
    cases.push({
      op: "gemm", name: `M ${M} N ${N} K ${K} w ${dt}${withBias ? " +bias" : ""}`, ...reductionTol(K),
      ref: () => R.gemm(a, asStored(w, dt), withBias ? bias : null).f32,
      tensorCores: dt === "f32" ? undefined : () => tensorCoreGemm(a, asStored(w, dt), dt as HalfKind, withBias ? bias : null),
      run: (be) => runOp(be, (up, alloc) => {
        const o = alloc(outShape);
        be.gemm(o, up(a), up(w, dt), withBias ? up(bias) : null);
        return o;
      }),
    });
  }
  return cases;
}

interface AttnCase {
  B: number; Lq: number; Lk: number; H: number; D: number;
  kvLen?: number; block?: [number, number]; bias?: boolean; scale?: number;
}

export function attentionCases(): OpCase[] {
  const r = rng(12);
  const configs: AttnCase[] = [
    { B: 1, Lq: 1, Lk: 1, H: 1, D: 1 },
    { B: 1, Lq: 5, Lk: 7, H: 2, D: 8 },
    { B: 2, Lq: 13, Lk: 29, H: 3, D: 20 }, // D not a multiple of 8
    { B: 1, Lq: 135, Lk: 130, H: 2, D: 64 }, // crosses the 128-query chunk and the 64-key block
    { B: 1, Lq: 33, Lk: 200, H: 1, D: 128, kvLen: 150 }, // reading the filled part of a KV cache
    { B: 1, Lq: 24, Lk: 80, H: 2, D: 16, block: [8, 56] }, // the last chunk of a block-causal sequence
    { B: 2, Lq: 10, Lk: 30, H: 1, D: 12, block: [4, 3] }, // queries starting mid-block
    { B: 1, Lq: 130, Lk: 130, H: 2, D: 32, block: [40, 0] }, // full block-causal self-attention
    { B: 1, Lq: 9, Lk: 11, H: 2, D: 8, bias: true, scale: 1 }, // T5: additive bias, no scaling
    { B: 1, Lq: 20, Lk: 20, H: 1, D: 384 }, // the VAE's single-head attention
    { B: 1, Lq: 257, Lk: 257, H: 2, D: 80 }, // CLIP ViT-H/14: 257 tokens, head size 80
    { B: 1, Lq: 3, Lk: 5, H: 1, D: 5, kvLen: 0 }, // nothing visible → zeros
    { B: 2, Lq: 1, Lk: 65, H: 3, D: 16 }, // one query (a decode step), one key past a 64-key tile
    { B: 1, Lq: 64, Lk: 64, H: 1, D: 128, kvLen: 1 }, // one visible key: softmax weight exactly 1
  ];
  return configs.map((c) => {
    const { B, Lq, Lk, H, D } = c;
    const kvLen = c.kvLen ?? Lk;
    const q = host([B, Lq, H, D], r(B * Lq * H * D)), k = host([B, Lk, H, D], r(B * Lk * H * D));
    const v = host([B, Lk, H, D], r(B * Lk * H * D));
    const bias = c.bias ? host([H, Lq, kvLen], r(H * Lq * kvLen, -3, 3)) : undefined;
    const opts = {
      scale: c.scale ?? 1 / Math.sqrt(D),
      kvLen: c.kvLen,
      blockCausal: c.block ? { blockSize: c.block[0], qOffset: c.block[1] } : undefined,
    };
    const extras = [c.kvLen !== undefined && `kvLen ${kvLen}`, c.block && `block ${c.block[0]} q+${c.block[1]}`, c.bias && "bias"];
    return {
      op: "attention",
      headDim: D,
      name: `B ${B} Lq ${Lq} Lk ${Lk} H ${H} D ${D}${extras.filter(Boolean).map((e) => `, ${e}`).join("")}`,
      atol: 1e-5, rtol: 0,
      ref: () => R.attention(q, k, v, { ...opts, bias }).f32,
      tensorCores: () => tensorCoreAttention(q, k, v, { ...opts, bias }),
      run: (be) => runOp(be, (up, alloc) => {
        const o = alloc([B, Lq, H, D]);
        be.attention(o, up(q), up(k), up(v), { ...opts, bias: bias && up(bias) });
        return o;
      }),
    };
  });
}

interface ConvCase {
  x: number[]; w: number[]; opts?: Conv3dOptions; prev?: boolean; dt?: DType; bias?: boolean; label?: string;
  /** The Wan-VAE's norm and SiLU fused in front (Conv3dOptions.normSilu), with a gamma or without. */
  norm?: "gamma" | "plain";
  /** A residual added to the output in the same op (Conv3dOptions.residual). */
  residual?: boolean;
}

export function convCases(): OpCase[] {
  const r = rng(13);
  const configs: ConvCase[] = [
    { x: [1, 1, 1, 1, 1], w: [1, 1, 1, 1, 1] },
    { x: [2, 3, 4, 7, 9], w: [5, 3, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, bias: true, label: "causal 3³" },
    { x: [1, 3, 2, 7, 9], w: [5, 3, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, prev: true, label: "with a 2-frame cache" },
    { x: [1, 4, 5, 6, 6], w: [4, 4, 3, 1, 1], opts: { stride: [2, 1, 1], timePad: 0 }, label: "temporal downsample" },
    { x: [1, 16, 2, 8, 12], w: [24, 16, 1, 2, 2], opts: { stride: [1, 2, 2], timePad: 0 }, bias: true, dt: "bf16", label: "patch embed" },
    { x: [1, 16, 3, 12, 12], w: [24, 16, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, dt: "f16", label: "threaded" },
    { x: [1, 8, 1, 16, 20], w: [8, 8, 1, 1, 1], bias: true, label: "1×1×1" },
    { x: [1, 3, 2, 9, 9], w: [2, 3, 2, 3, 3], opts: { stride: [1, 2, 2], pad: [0, 1, 0, 1], timePad: 1 }, label: "asymmetric pad, stride 2" },
    // stride 1 runs kernels/cpu/conv_direct.c on the wasm backend: its block edges
    { x: [1, 12, 2, 10, 16], w: [12, 12, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, prev: true, bias: true, label: "VAE 3³, K in two blocks" },
    { x: [1, 4, 1, 6, 21], w: [100, 4, 1, 3, 3], opts: { pad: [1, 1, 1, 1], timePad: 0 }, bias: true, label: "Cout in two blocks" },
    { x: [1, 3, 2, 5, 7], w: [2, 3, 1, 2, 2], opts: { pad: [0, 1, 2, 0], timePad: 0 }, label: "asymmetric pad, stride 1" },
    { x: [2, 5, 2, 4, 4], w: [3, 5, 3, 1, 1], prev: true, dt: "bf16", label: "time conv, batch 2 with a cache" },
    // the nearest ×2 upsample read by the conv (Conv3dOptions.upsample; on CUDA the repack reads x at
    // half the size): odd H and W, Cin off the multiples of 8; the causal time padding, batch 2, a residual
    { x: [1, 20, 2, 5, 7], w: [40, 20, 1, 3, 3], opts: { pad: [1, 1, 1, 1], timePad: 0, upsample: true }, bias: true, label: "upsampled from 5x7, Cin 20" },
    { x: [2, 12, 2, 3, 4], w: [36, 12, 3, 3, 3], opts: { pad: [1, 1, 1, 1], upsample: true }, dt: "bf16", residual: true, label: "upsampled, no cache, batch 2, a residual" },
    // the CUDA tensor-core conv: Cin past one 32-channel K step, voxels over three 128-row tiles, Cout
    // over two 96-channel tiles; then two 128-channel tiles, batch folded into the voxel rows
    { x: [1, 40, 2, 9, 17], w: [130, 40, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, prev: true, bias: true, label: "Cin 40, Cout 130, 306 voxels" },
    { x: [2, 32, 1, 6, 7], w: [256, 32, 1, 3, 3], opts: { pad: [1, 1, 1, 1], timePad: 0 }, bias: true, dt: "bf16", residual: true, label: "Cout 256, batch 2, a residual" },
    // and the wgmma conv (conv_wgmma.cu: 128 voxels × 192, 128 or 96 channels, K in steps of two
    // 32-channel slices): an odd number of slices (Cin 20, 27 taps) with stride 2 everywhere and a
    // 96-wide tile; the causal time padding without a cache, two 128-wide tiles with a tail, batch 2
    { x: [1, 20, 3, 9, 11], w: [40, 20, 3, 3, 3], opts: { stride: [2, 2, 2], pad: [1, 1, 1, 1] }, bias: true, label: "stride 2, Cin 20, Cout 40" },
    { x: [2, 36, 2, 4, 9], w: [200, 36, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, label: "no cache, Cout 200, batch 2" },
    // the norm and SiLU fused in: over Cin padded to 64 channels on the tensor cores, on the cached
    // frames too; and without gamma or a cache, batch 2 (on a GPU the exact kernel takes it: few channels)
    { x: [1, 40, 2, 9, 17], w: [130, 40, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, prev: true, bias: true, norm: "gamma", residual: true, label: "norm, SiLU fused, Cin 40, a cache, a residual" },
    { x: [2, 12, 3, 5, 6], w: [16, 12, 3, 3, 3], opts: { pad: [1, 1, 1, 1] }, norm: "plain", label: "norm, SiLU fused, batch 2" },
  ];
  const cases: OpCase[] = configs.map((c) => {
    const n = (s: number[]) => s.reduce((a, b) => a * b);
    const x = host(c.x, r(n(c.x))), w = host(c.w, r(n(c.w))), bias = host([c.w[0]!], r(c.w[0]!));
    const gamma = c.norm === "gamma" ? host([c.x[1]!], r(c.x[1]!).map((v) => v + 1.5)) : null;
    const norm = c.norm ? { eps: 1e-12, scale: Math.sqrt(c.x[1]!) } : undefined;
    const tp = c.opts?.timePad ?? c.w[2]! - 1;
    const prevShape = [c.x[0]!, c.x[1]!, tp, c.x[3]!, c.x[4]!];
    const prev = c.prev ? host(prevShape, r(n(prevShape))) : undefined;
    const dt = c.dt ?? "f32";
    const outShape = conv3dOutputShape(c.x, c.w, c.opts);
    const residual = c.residual ? host(outShape, r(n(outShape))) : undefined;
    const K = c.w[1]! * c.w[2]! * c.w[3]! * c.w[4]!;
    return {
      op: "conv3d", name: `x [${c.x}] w [${c.w}] ${dt}${c.label ? ` (${c.label})` : ""}`, ...reductionTol(K),
      ref: () => R.conv3d(x, asStored(w, dt), c.bias ? bias : null, { ...c.opts, prev, normSilu: norm && { ...norm, gamma }, residual }).f32,
      tensorCores: () => tensorCoreConv(x, asStored(w, dt), c.bias ? bias : null, { ...c.opts, prev, normSilu: norm && { ...norm, gamma }, residual }),
      run: (be) => runOp(be, (up, alloc) => {
        const o = alloc(outShape);
        be.conv3d(o, up(x), up(w, dt), c.bias ? up(bias) : null,
          { ...c.opts, prev: prev && up(prev), normSilu: norm && { ...norm, gamma: gamma && up(gamma) }, residual: residual && up(residual) });
        return o;
      }),
    };
  });
  const conv2d: [number[], number[], [number, number], [number, number, number, number]][] = [
    [[1, 3, 8, 10], [4, 3, 3, 3], [1, 1], [1, 1, 1, 1]],
    [[2, 4, 9, 9], [6, 4, 3, 3], [2, 2], [0, 1, 0, 1]], // Wan-VAE downsample: ZeroPad2d((0,1,0,1)) + stride 2
  ];
  for (const [xs, ws, stride, pad] of conv2d) {
    const x = host([...xs], r(xs.reduce((a, b) => a * b))), w = host([...ws], r(ws.reduce((a, b) => a * b)));
    const o5 = conv3dOutputShape([xs[0]!, xs[1]!, 1, xs[2]!, xs[3]!], [ws[0]!, ws[1]!, 1, ws[2]!, ws[3]!], { stride: [1, ...stride], pad, timePad: 0 });
    const outShape = [o5[0]!, o5[1]!, o5[3]!, o5[4]!];
    cases.push({
      op: "conv2d", name: `x [${xs}] w [${ws}] stride ${stride} pad ${pad}`, ...reductionTol(ws[1]! * ws[2]! * ws[3]!),
      ref: () => R.conv2d(x, w, null, { stride, pad }).f32,
      tensorCores: () => tensorCoreConv2d(x, w, null, { stride, pad }),
      run: (be) => runOp(be, (up, alloc) => { const o = alloc(outShape); be.conv2d(o, up(x), up(w), null, { stride, pad }); return o; }),
    });
  }
  return cases;
}
