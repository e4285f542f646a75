// The WebAssembly CPU backend: kernels/cpu/*.c compiled to wasm32 + SIMD128 (tools/build/cpu.ts,
// loaded by wasm-module.ts), tensors in the module's linear memory, work split over a pool of threads
// sharing that memory (wasm-pool.ts). Every op checks its operands with op-params.ts, then runs its kernel (a stride-1
// conv pads its input first; a multi-row GEMM reads a packed copy of its weight, wasm-packed.ts); all
// ops are synchronous, so `download` and `sync` resolve at once. Without SharedArrayBuffer the single-threaded
// build (no shared memory) runs on the calling thread.

import type * as B from "../backend.ts";
import { fromHalf, toHalf } from "../dtype.ts";
import { conv3dWithSeparateOps } from "../conv3d-unfused.ts";
import * as P from "../op-params.ts";
import { DTYPE_BYTES, type DType, type Shape, Tensor, numelOf, stridesOf } from "../tensor.ts";
import { type StagingHost, viaF32 } from "./wasm-bf16.ts";
import { type WasmKernels, wasmConv2d, wasmConv3d } from "./wasm-conv.ts";
import type { WasmHeap } from "./wasm-heap.ts";
import { WasmGraphs } from "./wasm-graph.ts";
import { DT_CODE, loadWasmModule } from "./wasm-module.ts";
import { PANEL, PackedWeights } from "./wasm-packed.ts";
import type { WasmPool } from "./wasm-pool.ts";

export interface WasmBackendOptions {
  /** Pool size; default min(2, hardware threads). 1 = no workers. */
  threads?: number;
  /** Ops with less work than this (elements, or FLOPs / 16) run on the calling thread only. The op
   *  sweep sets 0 so that every op's thread split is exercised. */
  parallelMinWork?: number;
  /** false: use the single-threaded build over an unshared memory even where SharedArrayBuffer
   *  exists (what hosts without it get; the op sweep covers that build this way). */
  sharedMemory?: boolean;
  /** Bytes of packed GEMM weight copies kept (wasm-packed.ts); 0 packs on every call. Default 256 MiB. */
  packedWeightBytes?: number;
}

/** Below this much work an op runs on the calling thread: waking the pool costs more than it saves. */
const PARALLEL_MIN_WORK = 1 << 15;

export async function openWasmBackend(opts: WasmBackendOptions = {}): Promise<B.Backend> {
  const m = await loadWasmModule(opts.threads, opts.sharedMemory !== false);
  return new WasmBackend(m.memory, m.heap, m.pool, m.description, opts.parallelMinWork ?? PARALLEL_MIN_WORK, new PackedWeights(m.heap, opts.packedWeightBytes));
}

class WasmBackend implements B.Backend {
  readonly name = "wasm";
  readonly device = "cpu";
  readonly #owned = new WeakSet<Tensor>();
  readonly #packed: PackedWeights;
  /** Recorded op sequences (wasm-graph.ts): the CUDA graph contract, kept on the CPU. */
  readonly graphs: WasmGraphs;
  /** bf16 activations run on f32 copies (wasm-bf16.ts); the CPU itself prefers f32. */
  readonly activationDtype = "f32" as const;
  readonly #staging: StagingHost;
  /** What the ops kept in other files (wasm-conv.ts) run kernels with. */
  readonly #kernels: WasmKernels;

  constructor(
    readonly wasmMemory: WebAssembly.Memory,
    readonly heap: WasmHeap,
    readonly pool: WasmPool,
    readonly description: string,
    readonly parallelMinWork: number,
    packed: PackedWeights,
  ) {
    this.#packed = packed;
    this.graphs = new WasmGraphs(heap, this as unknown as Record<string, unknown>);
    this.#staging = {
      heap,
      adopt: (t) => this.#owned.add(t),
      convert: (dst, dd, src, sd, n) => this.#run("kino_cast", [dst, DT_CODE[dd], src, DT_CODE[sd], n], n),
    };
    this.#kernels = { heap, ptr: (t) => this.#ptr(t), dst: (t) => this.#dst(t), opt: (t) => this.#opt(t), run: (k, args, work) => this.#run(k, args, work) };
  }

  // ---- memory ------------------------------------------------------------------------------------

  alloc(shape: Shape, dtype: DType = "f32"): Tensor {
    const t = new Tensor("cpu", shape, dtype, this.graphs.alloc(numelOf(shape) * DTYPE_BYTES[dtype]));
    this.#owned.add(t);
    return t;
  }

  upload(data: B.HostData, shape: Shape, dtype?: DType): Tensor {
    this.graphs.refuse("upload");
    const dt = dtype ?? (data instanceof Float32Array ? "f32" : data instanceof Uint8Array ? "u8" : undefined);
    if (!dt) throw new Error("upload: a Uint16Array needs dtype bf16 or f16");
    const t = this.alloc(shape, dt);
    this.write(t, data);
    return t;
  }

  write(t: Tensor, data: B.HostData): void {
    this.graphs.refuse("write");
    const ptr = this.#dst(t);
    if (data.length !== t.numel) throw new Error(`write: ${data.length} values for ${t}`);
    const buf = this.wasmMemory.buffer;
    if (data instanceof Float32Array) {
      if (t.dtype === "f32") new Float32Array(buf, ptr, t.numel).set(data);
      else if (t.dtype === "bf16" || t.dtype === "f16") new Uint16Array(buf, ptr, t.numel).set(toHalf(data, t.dtype));
      else throw new Error(`write: Float32Array into ${t}`);
    } else if (data instanceof Uint16Array && (t.dtype === "bf16" || t.dtype === "f16")) {
      new Uint16Array(buf, ptr, t.numel).set(data);
    } else if (data instanceof Uint8Array && t.dtype === "u8") {
      new Uint8Array(buf, ptr, t.numel).set(data);
    } else {
      throw new Error(`write: ${data.constructor.name} into ${t}`);
    }
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  download(t: Tensor): Promise<Float32Array> {
    this.graphs.refuse("download");
    return this.#download(t);
  }

  async #download(t: Tensor): Promise<Float32Array> {
    const ptr = this.#ptr(t), buf = this.wasmMemory.buffer;
    if (t.dtype === "f32") return new Float32Array(buf, ptr, t.numel).slice();
    if (t.dtype === "u8") return Float32Array.from(new Uint8Array(buf, ptr, t.numel));
    return fromHalf(new Uint16Array(buf, ptr, t.numel), t.dtype);
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  downloadRaw(t: Tensor): Promise<Uint8Array> {
    this.graphs.refuse("downloadRaw");
    return this.#downloadRaw(t);
  }

  async #downloadRaw(t: Tensor): Promise<Uint8Array> {
    return new Uint8Array(this.wasmMemory.buffer, this.#ptr(t), t.bytes).slice();
  }

  free(...tensors: Tensor[]): void {
    for (const t of tensors) {
      if (!this.#owned.has(t.owner)) throw new Error(`free: ${t} does not belong to this backend`);
      this.graphs.freeing(t.ptr); // refused while recording for a tensor from before the recording
      t.markFreed();
      this.#packed.drop(t);
      this.graphs.free(t.ptr);
    }
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  sync(): Promise<void> {
    this.graphs.refuse("sync");
    return Promise.resolve();
  }

  memory(): B.MemoryStats {
    return { inUse: this.heap.inUse, peak: this.heap.peak, allocations: this.heap.allocations + this.graphs.reused, systemAllocations: this.heap.grows };
  }

  dispose(): void {
    this.pool.stop();
  }

  /** The byte address of a live tensor of this backend. */
  #ptr(t: Tensor): number {
    if (!this.#owned.has(t.owner)) throw new Error(`${t} does not belong to this wasm backend`);
    if (t.freed && !this.graphs.launching) throw new Error(`${t} was freed`);
    return t.ptr;
  }

  /** The address of an op's output: its memory changes, so a packed copy of it is stale. */
  #dst(t: Tensor): number {
    this.#packed.drop(t);
    return this.#ptr(t);
  }

  #opt(t: Tensor | null | undefined): number {
    return t ? this.#ptr(t) : 0;
  }

  #run(kernel: string, args: number[], work: number): void {
    this.pool.run(kernel, args, work < this.parallelMinWork ? 1 : this.pool.threads);
  }

  /** Runs `f` with `data` copied into a temporary block of wasm memory (shape/index tables). */
  #withInts<T>(data: Int32Array, f: (ptr: number) => T): T {
    const ptr = this.heap.alloc(data.byteLength);
    try {
      new Int32Array(this.wasmMemory.buffer, ptr, data.length).set(data);
      return f(ptr);
    } finally {
      this.heap.free(ptr);
    }
  }

  // ---- ops ---------------------------------------------------------------------------------------

  gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: B.GemmEpilogue | null): void {
    const { M, N, K, split } = P.gemmDims(out, a, w, bias, epilogue);
    const e = P.gemmEpilogueDims(out, epilogue);
    if (viaF32(this.#staging, [a], [out], (f) => this.gemm(f(out), f(a), w, bias, epilogue))) return;
    const residual = epilogue?.kind === "residual" ? epilogue : null;
    const epi = [e.gelu ? 1 : 0, this.#opt(residual?.residual), this.#opt(residual?.gate), e.L, e.G];
    const dst = this.#dst(out);
    // more than 4 rows: the blocked path, from a packed copy of w (wasm-packed.ts) when there is one
    const wp = M > 4 && N * K > 0
      ? this.#packed.get(w, N, K, (ptr) => this.#run("kino_pack_w", [ptr, this.#ptr(w), DT_CODE[w.dtype], N, K], N * K))
      : 0;
    // A split output is one GEMM per part over the part's rows of w (and their panels of the packed
    // copy when a part is whole panels): each element's sum is the one the whole GEMM would make.
    const S = split || N, eb = DTYPE_BYTES[w.dtype];
    for (let p = 0; p < N / S; p++) {
      const o = dst + p * M * S * 4, b = bias ? this.#ptr(bias) + p * S * 4 : 0;
      if (wp && (S === N || S % PANEL === 0)) {
        this.#run("kino_gemm_packed", [o, this.#ptr(a), wp + p * S * K * 4, b, M, S, K, ...epi], (M * S * K) / 16);
      } else {
        this.#run("kino_gemm", [o, this.#ptr(a), this.#ptr(w) + p * S * K * eb, DT_CODE[w.dtype], b, M, S, K, ...epi], (M * S * K) / 16);
      }
    }
  }

  attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, o: B.AttentionOptions): void {
    const d = P.attentionDims(out, q, k, v, o);
    if (viaF32(this.#staging, [q, k, v], [out], (f) => this.attention(f(out), f(q), f(k), f(v), o))) return;
    const bc = o.blockCausal;
    const args = [this.#dst(out), this.#ptr(q), this.#ptr(k), this.#ptr(v), this.#opt(o.bias), d.B, d.Lq, d.Lk,
      d.kvLen, d.H, d.D, o.scale, bc?.blockSize ?? 0, bc?.qOffset ?? 0];
    this.#run("kino_attention", args, (d.B * d.H * d.Lq * d.kvLen * d.D) / 16);
  }

  layerNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null, bias?: Tensor | null): void {
    const { rows, cols } = P.activationRows("layerNorm", out, x, false);
    P.optionalVector("layerNorm", "weight", weight, cols);
    P.optionalVector("layerNorm", "bias", bias, cols);
    if (viaF32(this.#staging, [], [out], (f) => this.layerNorm(f(out), x, eps, weight, bias))) return;
    this.#run("kino_layer_norm", [this.#dst(out), this.#ptr(x), this.#opt(weight), this.#opt(bias), rows, cols, eps], rows * cols);
  }

  rmsNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null): void {
    const { rows, cols } = P.activationRows("rmsNorm", out, x, true);
    P.optionalVector("rmsNorm", "weight", weight, cols);
    if (viaF32(this.#staging, [x], [out], (f) => this.rmsNorm(f(out), f(x), eps, weight))) return;
    this.#run("kino_rms_norm", [this.#dst(out), this.#ptr(x), this.#opt(weight), rows, cols, eps], rows * cols);
  }

  layerNormModulate(out: Tensor, x: Tensor, eps: number, scale: Tensor, shift: Tensor): void {
    const g = P.groupedDims("layerNormModulate", out, x, [scale, shift]);
    if (viaF32(this.#staging, [], [out], (f) => this.layerNormModulate(f(out), x, eps, scale, shift))) return;
    const args = [this.#dst(out), this.#ptr(x), this.#ptr(scale), this.#ptr(shift), g.B, g.L, g.C, g.G, eps];
    this.#run("kino_layer_norm_modulate", args, x.numel);
  }

  rmsNormRope(out: Tensor, x: Tensor, eps: number, weight: Tensor | null, o: B.RopeOptions): void {
    const d = P.rmsNormRopeDims(out, x, weight, o);
    if (viaF32(this.#staging, [x], [out], (f) => this.rmsNormRope(f(out), f(x), eps, weight, o))) return;
    const args = [this.#dst(out), this.#ptr(x), this.#opt(weight), eps, this.#ptr(o.cos), this.#ptr(o.sin), d.B, d.L, d.H, d.D,
      d.P, d.pairs, d.pt, d.ph, d.pw, d.F, d.GH, d.GW, d.f0, this.#opt(o.frameOffsetAt)];
    this.#run("kino_rms_norm_rope", args, x.numel);
  }

  l2NormChannels(out: Tensor, x: Tensor, eps: number, scale: number, gamma?: Tensor | null): void {
    P.sameShapeF32("l2NormChannels", out, x);
    if (x.rank < 2) P.fail("l2NormChannels", `x must be [B, C, ...], got ${x}`);
    const [Bn, C] = x.shape as [number, number];
    P.optionalVector("l2NormChannels", "gamma", gamma, C);
    const S = numelOf(x.shape.slice(2));
    this.#run("kino_l2norm_channels", [this.#dst(out), this.#ptr(x), this.#opt(gamma), Bn, C, S, eps, scale], x.numel);
  }

  softmax(out: Tensor, x: Tensor): void {
    const { rows, cols } = P.rowsOf("softmax", out, x);
    this.#run("kino_softmax", [this.#dst(out), this.#ptr(x), rows, cols], rows * cols);
  }

  gelu(out: Tensor, x: Tensor): void {
    this.#run("kino_gelu", [this.#dst(out), this.#ptr(x), P.sameShapeF32("gelu", out, x)], x.numel);
  }

  geluExact(out: Tensor, x: Tensor): void {
    this.#run("kino_gelu_exact", [this.#dst(out), this.#ptr(x), P.sameShapeF32("geluExact", out, x)], x.numel);
  }

  silu(out: Tensor, x: Tensor): void {
    this.#run("kino_silu", [this.#dst(out), this.#ptr(x), P.sameShapeF32("silu", out, x)], x.numel);
  }

  mul(out: Tensor, a: Tensor, b: Tensor): void {
    this.#run("kino_mul", [this.#dst(out), this.#ptr(a), this.#ptr(b), P.sameShapeF32("mul", out, a, b)], out.numel);
  }

  axpby(out: Tensor, a: Tensor, b: Tensor, alpha: number, beta: number): void {
    const n = P.sameShapeActivation("axpby", out, a, b);
    if (viaF32(this.#staging, [a, b], [out], (f) => this.axpby(f(out), f(a), f(b), alpha, beta))) return;
    this.#run("kino_axpby", [this.#dst(out), this.#ptr(a), this.#ptr(b), n, alpha, beta], n);
  }

  fill(out: Tensor, value: number): void {
    this.#run("kino_fill", [this.#dst(out), P.sameShapeF32("fill", out), value], out.numel);
  }

  rope3d(out: Tensor, x: Tensor, o: B.RopeOptions): void {
    const d = P.ropeDims(out, x, o);
    if (viaF32(this.#staging, [x], [out], (f) => this.rope3d(f(out), f(x), o))) return;
    const args = [this.#dst(out), this.#ptr(x), this.#ptr(o.cos), this.#ptr(o.sin), d.B, d.L, d.H, d.D, d.P, d.pairs,
      d.pt, d.ph, d.pw, d.F, d.GH, d.GW, d.f0, this.#opt(o.frameOffsetAt)];
    this.#run("kino_rope3d", args, x.numel);
  }

  embedding(out: Tensor, table: Tensor, ids: Int32Array): void {
    P.expectDtype("embedding", "table", table, ...P.WEIGHT_DTYPES);
    if (table.rank !== 2) P.fail("embedding", `table must be [V, C], got ${table}`);
    const [V, C] = table.shape as [number, number];
    P.expectDtype("embedding", "out", out, "f32");
    P.expectShape("embedding", "out", out, [ids.length, C]);
    const bad = ids.findIndex((id) => id < 0 || id >= V);
    if (bad >= 0) P.fail("embedding", `id ${ids[bad]} at ${bad} outside [0, ${V})`);
    this.#withInts(ids, (idp) =>
      this.#run("kino_embedding", [this.#dst(out), this.#ptr(table), DT_CODE[table.dtype], idp, ids.length, C], out.numel));
  }

  t5RelativeBias(out: Tensor, table: Tensor, o: B.T5BiasOptions): void {
    const { H, Lq, Lk } = P.t5Dims(out, table, o);
    this.#withInts(P.t5BucketTable(Lq, Lk, o), (bp) =>
      this.#run("kino_t5_bias", [this.#dst(out), this.#ptr(table), bp, H, Lq, Lk], out.numel));
  }

  conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: B.Conv3dOptions = {}): void {
    conv3dWithSeparateOps(this, (o, xs, ws, b, op) => wasmConv3d(this.#kernels, o, xs, ws, b, op), out, x, w, bias, opts);
  }

  conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: B.Conv2dOptions = {}): void {
    wasmConv2d(this.#kernels, out, x, w, bias, opts);
  }

  upsampleNearest(out: Tensor, x: Tensor): void {
    const factors = P.upsampleFactors(out, x);
    if (out.numel === 0) return;
    const table = Int32Array.from([...out.shape, ...factors, ...stridesOf(x.shape)]);
    const r = out.rank;
    this.#withInts(table, (p) =>
      this.#run("kino_upsample_nearest", [this.#dst(out), this.#ptr(x), r, p, p + 4 * r, p + 8 * r], out.numel));
  }

  resize(out: Tensor, x: Tensor, opts: B.ResizeOptions = {}): void {
    const { planes, H, W, Ho, Wo, torch } = P.resizeDims(out, x, opts.filter);
    this.#run("kino_resize", [this.#dst(out), this.#ptr(x), planes, H, W, Ho, Wo, torch], out.numel * 16);
  }

  concat(out: Tensor, inputs: readonly Tensor[], dim: number): void {
    const d = P.normDim("concat", dim, out.rank);
    let at = 0;
    for (const t of inputs) {
      this.#copySlice(out, t, d, at, "concat", true);
      at += t.shape[d]!;
    }
    if (at !== out.shape[d]) P.fail("concat", `inputs fill ${at} of ${out.shape[d]} along dim ${d}`);
  }

  slice(out: Tensor, x: Tensor, dim: number, start: number): void {
    this.#copySlice(x, out, dim, start, "slice", false);
  }

  writeSlice(dst: Tensor, src: Tensor, dim: number, start: number): void {
    this.#copySlice(dst, src, dim, start, "writeSlice", true);
  }

  /** copyWithinCopies' disjoint row copies, in their order (each a synchronous kernel call). */
  copyWithin(t: Tensor, dim: number, to: number, from: number, len: number): void {
    const copies = P.copyWithinCopies(t, dim, to, from, len);
    if (copies.length === 0) return;
    const base = this.#dst(t);
    for (const c of copies) this.#run("kino_copy_rows", [base + c.dst, c.pitch, base + c.src, c.pitch, c.rowBytes, c.rows], (c.rows * c.rowBytes) / 4);
  }

  /** Copies between `big` and the range [start, start + len) of its dim `dim` held by `small`. */
  #copySlice(big: Tensor, small: Tensor, dim: number, start: number, op: string, intoBig: boolean): void {
    const s = P.sliceDims(op, big, small, dim, start);
    const es = DTYPE_BYTES[big.dtype];
    const rowBig = s.bigLen * s.inner * es, rowSmall = s.smallLen * s.inner * es;
    this.#packed.drop(intoBig ? big : small);
    const bigPtr = this.#ptr(big) + start * s.inner * es, smallPtr = this.#ptr(small);
    const args = intoBig
      ? [bigPtr, rowBig, smallPtr, rowSmall, rowSmall, s.outer]
      : [smallPtr, rowSmall, bigPtr, rowBig, rowSmall, s.outer];
    if (rowSmall > 0 && s.outer > 0) this.#run("kino_copy_rows", args, small.numel);
  }

  permute(out: Tensor, x: Tensor, perm: readonly number[]): void {
    P.permuteCheck(out, x, perm);
    if (out.numel === 0) return;
    if (out.rank === 0) return this.#run("kino_copy_rows", [this.#dst(out), 0, this.#ptr(x), 0, x.bytes, 1], 1);
    const xs = stridesOf(x.shape);
    const table = Int32Array.from([...out.shape, ...perm.map((p) => xs[p]!)]);
    const r = out.rank;
    this.#withInts(table, (p) =>
      this.#run("kino_permute", [this.#dst(out), this.#ptr(x), DTYPE_BYTES[x.dtype], r, p, p + 4 * r], out.numel));
  }

  cast(out: Tensor, x: Tensor): void {
    P.expectShape("cast", "out", out, x.shape);
    P.expectDtype("cast", "x", x, ...P.WEIGHT_DTYPES);
    P.expectDtype("cast", "out", out, ...P.WEIGHT_DTYPES);
    this.#run("kino_cast", [this.#dst(out), DT_CODE[out.dtype], this.#ptr(x), DT_CODE[x.dtype], x.numel], x.numel);
  }

  rgbToYuv420(out: Tensor, x: Tensor, range: B.FrameRange): void {
    const { T, H, W } = P.yuvDims("rgbToYuv420", x, out);
    this.#run("kino_rgb_to_yuv420", [this.#dst(out), this.#ptr(x), T, H, W, range[0], range[1]], x.numel);
  }

  yuv420ToRgb(out: Tensor, x: Tensor, range: B.FrameRange): void {
    const { T, H, W } = P.yuvDims("yuv420ToRgb", out, x);
    this.#run("kino_yuv420_to_rgb", [this.#dst(out), this.#ptr(x), T, H, W, range[0], range[1]], out.numel);
  }
}

