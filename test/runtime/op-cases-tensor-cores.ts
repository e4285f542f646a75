// GEMM and attention cases aimed at the edges of the CUDA mma.sync kernels' tiles, beyond the op
// sweep's (op-cases-heavy.ts, op-cases-fused.ts, op-cases-bf16.ts): gemm_mma.cu (128×256 output tiles
// of 8 warps, 128×192 of 6 or 128×128 of 4, each warp 64×64; K in steps of 32 through a 4-stage cp.async
// ring; the tile chosen by the model or forced: mmaTileGemmCases) and attention_mma.cuh's
// attention_mma_kernel (128 query rows per block, 32 per warp, or 64 and 16; key tiles of 64, K and V
// halves through a 3-slot ring; warps that skip key tiles their rows cannot see). Every case carries
// its tensor-core promise (op-precision.ts) and is one the library sends to mma.sync (GEMM: bf16/f16
// weights, K % 8 = 0; attention: D ∈ {16, 32, 64, 128}), in every mix of f32 and bf16 activations and
// outputs the DiT uses. cuda-emulated-tensor-cores.test.ts runs them
// on the CPU emulator.
import type { Backend, GemmEpilogue } from "../../src/runtime/backend.ts";
import type { HalfKind } from "../../src/runtime/dtype.ts";
import * as R from "../../src/runtime/reference.ts";
import type { DType } from "../../src/runtime/tensor.ts";
import { type OpCase, asStored, host, rng, runOp } from "./op-helpers.ts";
import { type Expected, bf16Output, tensorCoreAttention, tensorCoreGemmEpilogue } from "./op-precision.ts";

const stored = (e: Expected, out: DType) => (out === "bf16" ? bf16Output(e) : e);

export interface GemmShape {
  B: number; L: number; K: number; N: number; w: HalfKind; a: DType; out: DType;
  epi?: "gelu" | "residual" | "residual in place" | { split: number }; G?: number; bias?: boolean; label: string;
}

const GEMM_SHAPES: GemmShape[] = [
  { B: 1, L: 128, K: 32, N: 128, w: "bf16", a: "f32", out: "f32", label: "exactly one tile and one K step" },
  { B: 1, L: 129, K: 24, N: 129, w: "bf16", a: "f32", out: "f32", bias: true, label: "one past a tile in M and N, K under one step" },
  { B: 1, L: 255, K: 1000, N: 136, w: "f16", a: "bf16", out: "bf16", epi: "gelu", bias: true, label: "K over 32 steps: the ring wraps eight times" },
  { B: 3, L: 100, K: 72, N: 96, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 4, bias: true, label: "gated residual per frame, in place" },
  { B: 1, L: 70, K: 48, N: 105, w: "bf16", a: "f32", out: "bf16", epi: { split: 3 }, label: "split into odd parts of 35: single stores" },
  { B: 2, L: 20, K: 56, N: 260, w: "bf16", a: "bf16", out: "f32", epi: { split: 2 }, bias: true, label: "split into two parts across the N tiles" },
  { B: 1, L: 1, K: 16, N: 7, w: "f16", a: "f32", out: "f32", epi: "residual", label: "one row, N odd, a residual of its own" },
];

/** gemm_mma.cu's block tiles, by the names KINO_CUDA_GEMM_MMA_TILE takes. */
export type MmaTile = "128x128" | "128x192" | "128x256";

/** gemm_mma.cu's own edges, for its emulated tests only (the Hopper kernels' tests run GEMM_SHAPES), each
 *  with the tile it runs on. `auto`: the tile kc_gemm's model picks on the emulator's context (an A100's
 *  figures with two SMs, cuda-emulator/gemm.cpp; per K step a block of 128×256 takes 1024 cycles, of
 *  128×192 768, of 128×128 512 with two to an SM) — 128×192 over 2 × 2 and 3 × 2 blocks with tails in M,
 *  N and K, f16 and bf16 weights, a GELU into bf16 and single stores across an odd N; 128×256 on a tie
 *  with 128×128; 128×128 where four row tiles fill one wave of its four slots. `forced`: shapes for each
 *  tile forced (KINO_CUDA_GEMM_MMA_TILE): 3 × 3 and 2 × 3 blocks of 128×128 with every tail, a split and a
 *  gated residual in place; a split across 2 × 3 blocks of 128×192; a 128×256 tile over one row. */
const MMA_TILE_SHAPES: Record<"auto" | "forced", [GemmShape, MmaTile][]> = {
  auto: [
    [{ B: 1, L: 200, K: 136, N: 300, w: "f16", a: "f32", out: "bf16", epi: "gelu", bias: true,
      label: "2 × 2 tiles of 128×192: 72 rows, 108 columns and 8 k past the last whole ones; 4 tiles in 2 waves of 768 cycles" }, "128x192"],
    [{ B: 1, L: 136, K: 40, N: 515, w: "bf16", a: "bf16", out: "f32", label: "three 128×192 tiles across an odd N: single stores" }, "128x192"],
    [{ B: 2, L: 125, K: 72, N: 500, w: "bf16", a: "f32", out: "f32", epi: "residual", bias: true,
      label: "2 × 2 tiles of 128×256 in 2 waves, as long as 8 of 128×128 in 2 of 4 slots: the bigger tile" }, "128x256"],
    [{ B: 1, L: 400, K: 48, N: 100, w: "bf16", a: "bf16", out: "bf16", label: "4 row tiles: one wave of 128×128, two of the wider tiles" }, "128x128"],
  ],
  forced: [
    [{ B: 1, L: 260, K: 200, N: 300, w: "bf16", a: "f32", out: "f32", bias: true, label: "3 × 3 tiles of 128×128, every tail" }, "128x128"],
    [{ B: 2, L: 100, K: 88, N: 260, w: "f16", a: "bf16", out: "bf16", epi: { split: 2 }, bias: true, label: "split across 2 × 3 tiles of 128×128" }, "128x128"],
    [{ B: 3, L: 50, K: 72, N: 140, w: "bf16", a: "bf16", out: "f32", epi: "residual in place", G: 5, bias: true,
      label: "gated residual in place on 2 × 2 tiles of 128×128" }, "128x128"],
    [{ B: 2, L: 100, K: 56, N: 390, w: "bf16", a: "bf16", out: "bf16", epi: { split: 3 }, bias: true,
      label: "split into parts of 130 across 2 × 3 tiles of 128×192" }, "128x192"],
    [{ B: 1, L: 1, K: 24, N: 9, w: "f16", a: "f32", out: "f32", bias: true, label: "one row of a 128×256 tile" }, "128x256"],
  ],
};
/** MMA_TILE_SHAPES' cases, each with its tile. */
export const mmaTileGemmCases = (which: keyof typeof MMA_TILE_SHAPES): [OpCase, MmaTile][] => {
  const shapes = MMA_TILE_SHAPES[which];
  const cases = tensorCoreGemmCases(shapes.map(([s]) => s), 33);
  return cases.map((c, i) => [c, shapes[i]![1]]);
};

/** GEMM_SHAPES as cases; other shapes (a kernel's own edges) the same way, with their own seed. */
export function tensorCoreGemmCases(shapes: GemmShape[] = GEMM_SHAPES, seed = 31): OpCase[] {
  const r = rng(seed);
  return shapes.map((s) => {
    const { B, L, K, N } = s;
    const a = host([B, L, K], r(B * L * K)), w = host([N, K], r(N * K)), bias = s.bias ? host([N], r(N)) : null;
    const res = host([B, L, N], r(B * L * N)), gate = s.G ? host([B, s.G, N], r(B * s.G * N)) : null;
    const aRef = asStored(a, s.a), sw = asStored(w, s.w);
    const e: R.HostEpilogue | null = s.epi === "gelu" ? { kind: "gelu" } : typeof s.epi === "object" ? { kind: "split", parts: s.epi.split }
      : s.epi ? { kind: "residual", residual: res, gate } : null;
    const outShape = e?.kind === "split" ? [e.parts, B, L, N / e.parts] : [B, L, N];
    return {
      op: "gemm", name: `M ${B * L} N ${N} K ${K} w ${s.w}, a ${s.a} → ${s.out}${bias ? " +bias" : ""} (${s.label})`,
      atol: 0, rtol: 0, // the exact kernels' promise is not what these cases are for
      ref: () => R.gemm(aRef, sw, bias, e).f32,
      tensorCores: () => stored(tensorCoreGemmEpilogue(aRef, sw, s.w, bias, e ?? { kind: "split", parts: 1 }), s.out),
      run: (be) => runOp(be, (up, alloc, inOut) => {
        const o = s.epi === "residual in place" ? inOut(res) : alloc(outShape, s.out);
        const epi: GemmEpilogue | null = e?.kind !== "residual" ? e
          : { kind: "residual", residual: s.epi === "residual in place" ? o : up(res), gate: gate && up(gate) };
        be.gemm(o, up(a, s.a), up(w, s.w), bias && up(bias), epi);
        return o;
      }),
    };
  });
}

export interface AttentionShape {
  B: number; Lq: number; Lk: number; H: number; D: number; kvLen?: number; block?: [number, number]; bias?: boolean;
  scale?: number; rising?: boolean; in: DType; out: DType; label: string;
}

const ATTENTION_SHAPES: AttentionShape[] = [
  { B: 2, Lq: 70, Lk: 150, H: 3, D: 64, bias: true, scale: 1, in: "f32", out: "f32", label: "T5: bias, no scaling; query and key tiles cut short" },
  { B: 1, Lq: 100, Lk: 300, H: 2, D: 128, kvLen: 250, block: [48, 150], in: "bf16", out: "bf16", label: "a KV cache's filled part under a block-causal mask" },
  { B: 1, Lq: 64, Lk: 64, H: 2, D: 64, in: "bf16", out: "f32", label: "exactly one query and one key tile" },
  { B: 1, Lq: 129, Lk: 257, H: 1, D: 32, block: [64, 128], in: "f32", out: "bf16", label: "blocks on the key tiles, one query past a tile" },
  { B: 2, Lq: 1, Lk: 200, H: 4, D: 128, kvLen: 130, in: "bf16", out: "bf16", label: "one query (a decode step) over a cache" },
  { B: 1, Lq: 80, Lk: 80, H: 2, D: 16, block: [20, 0], bias: true, scale: 0.5, in: "f32", out: "f32", label: "bias and mask together" },
  { B: 1, Lq: 48, Lk: 200, H: 2, D: 64, rising: true, in: "f32", out: "f32", label: "logits rising along the keys: every tile rescales the last" },
  { B: 2, Lq: 300, Lk: 200, H: 2, D: 64, in: "bf16", out: "f32", label: "three 128-row query blocks, the last cut short, over heads and batch items" },
  { B: 1, Lq: 260, Lk: 400, H: 1, D: 128, block: [100, 37], bias: true, in: "f32", out: "bf16",
    label: "a block boundary mid-tile: the warps of one query block see different key tiles, the last block's warps past Lq none" },
  { B: 1, Lq: 140, Lk: 300, H: 2, D: 128, kvLen: 190, bias: true, in: "bf16", out: "f32", label: "a cache's filled part with a bias: the mask inside a key tile" },
];

/** The attention cases, or those of the head sizes in `dims` (a forced wgmma path takes D 64 and 128
 *  only, and refuses the others by contract: attention.cu); `shapes`: others than these. */
export function tensorCoreAttentionCases(dims?: readonly number[], shapes: readonly AttentionShape[] = ATTENTION_SHAPES): OpCase[] {
  const r = rng(32);
  const cases = shapes.map((s) => {
    const { B, Lq, Lk, H, D } = s;
    const kvLen = s.kvLen ?? Lk;
    const q = host([B, Lq, H, D], r(B * Lq * H * D)), v = host([B, Lk, H, D], r(B * Lk * H * D));
    // rising: key j scaled by 1 + j/16, so each key tile holds larger logits than the one before
    const kv = r(B * Lk * H * D).map((x, i) => (s.rising ? x * (1 + Math.floor(i / (H * D)) % Lk / 16) : x));
    const k = host([B, Lk, H, D], kv);
    const bias = s.bias ? host([H, Lq, kvLen], r(H * Lq * kvLen, -3, 3)) : undefined;
    const opts = {
      scale: s.scale ?? 1 / Math.sqrt(D), kvLen: s.kvLen,
      blockCausal: s.block ? { blockSize: s.block[0], qOffset: s.block[1] } : undefined,
    };
    const [qr, kr, vr] = [q, k, v].map((h) => asStored(h, s.in)) as [R.Host, R.Host, R.Host];
    const extras = [s.kvLen !== undefined && `kvLen ${kvLen}`, s.block && `block ${s.block[0]} q+${s.block[1]}`, s.bias && "bias"].filter(Boolean);
    return {
      headDim: D,
      op: "attention", name: `B ${B} Lq ${Lq} Lk ${Lk} H ${H} D ${D}${extras.map((e) => `, ${e}`).join("")}, ${s.in} → ${s.out} (${s.label})`,
      atol: 0, rtol: 0,
      ref: () => R.attention(qr, kr, vr, { ...opts, bias }).f32,
      tensorCores: () => stored(tensorCoreAttention(qr, kr, vr, { ...opts, bias }), s.out),
      run: (be: Backend) => runOp(be, (up, alloc) => {
        const o = alloc([B, Lq, H, D], s.out);
        be.attention(o, up(q, s.in), up(k, s.in), up(v, s.in), { ...opts, bias: bias && up(bias) });
        return o;
      }),
    };
  });
  // filtered after all are made, so that each case's random inputs are the same either way
  return dims ? cases.filter((_, i) => dims.includes(shapes[i]!.D)) : cases;
}
