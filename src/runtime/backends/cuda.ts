// The CUDA backend: kino's Backend over build/libkino_cuda.so (kernels/cuda; found and bound by
// cuda-library.ts, opened by cuda-open.ts), called through bun:ffi. Every op validates its shapes with op-params.ts (the same
// checks as the wasm backend), then enqueues kernels on the library's one stream; only download* and
// sync wait (readbackRaw does not: cuda-transfers.ts). Device memory comes from the library's caching
// allocator; CUDA graphs (`graphs`) from cuda-graph.ts where the library has them; which kernel an op
// runs from cuda-kernel-paths.ts. A call that fails once a kernel fault has lost the context
// (kernels/cuda/context_lost.cuh) throws DeviceLostError: the process cannot use the GPU again.

import type { Pointer } from "bun:ffi";
import type {
  AttentionOptions, Backend, Conv2dOptions, Conv3dOptions, FrameRange, GemmEpilogue, HostData, MemoryStats, ResizeOptions, RopeOptions,
  T5BiasOptions,
} from "../backend.ts";
import { DeviceLostError } from "../device-lost.ts";
import * as P from "../op-params.ts";
import { type DType, type Shape, DTYPE_BYTES, Tensor, numelOf } from "../tensor.ts";
import { CudaGraphs } from "./cuda-graph.ts";
import { KernelPaths, type KernelOp } from "./cuda-kernel-paths.ts";
import type { CudaGraphLibrary, CudaLibrary, CudaReadbackLibrary } from "./cuda-library.ts";
import { CudaTransfers, DT } from "./cuda-transfers.ts";

export { CUDA_KERNEL_PATHS, type KernelOp } from "./cuda-kernel-paths.ts";
export { CUDA_GRAPH_SYMBOLS, CUDA_READBACK_SYMBOLS, CUDA_SYMBOLS, type CudaLibrary, locateCudaLibrary } from "./cuda-library.ts";

export class CudaBackend implements Backend {
  readonly name = "cuda" as const;
  readonly device = "cuda" as const;
  readonly description: string;
  readonly smVersion: number;
  /** The GPU's PCI bus id ("0000:19:00.0"): the same physical device under any CUDA_VISIBLE_DEVICES index. */
  readonly pciBusId: string;
  #disposed = false;
  readonly #paths: KernelPaths;
  readonly #io: CudaTransfers;
  /** CUDA graphs, where the library has the graph symbols (a library built before them has none). */
  readonly graphs?: CudaGraphs;
  /** Backend.readbackRaw, where the library has the readback symbols. */
  readonly readbackRaw?: (t: Tensor) => Promise<Uint8Array>;

  /** lib and ctx are public for benchmarks (tools/gpu-check) that call the C ABI with bf16 buffers. */
  constructor(readonly lib: CudaLibrary, readonly ctx: Pointer, graphLib: CudaGraphLibrary | null = null, readbackLib: CudaReadbackLibrary | null = null) {
    if (graphLib) this.graphs = new CudaGraphs(this, graphLib);
    this.#paths = new KernelPaths(() => this.k, ctx, (rc, op) => this.check(rc, op));
    this.#io = new CudaTransfers(
      { symbols: () => this.k, ctx, check: (rc, op) => this.check(rc, op), failure: (op) => this.failure(op), alloc: (sh, dt) => this.alloc(sh, dt), free: (t) => this.free(t) },
      readbackLib,
    );
    if (this.#io.canReadBack) this.readbackRaw = (t) => this.#readbackRaw(t);
    const name = new Uint8Array(256);
    const info = new BigInt64Array(8);
    this.check(lib.symbols.kc_device_info(ctx, name, name.length, info), "device info");
    this.smVersion = Number(info[0]) * 10 + Number(info[1]);
    const gib = Math.round(Number(info[3]) / 2 ** 30);
    this.description = `CUDA ${new TextDecoder().decode(name.subarray(0, name.indexOf(0)))} (sm_${this.smVersion}, ${gib} GiB)`;
    const bus = new Uint8Array(32);
    this.check(lib.symbols.kc_device_pci_bus_id(ctx, bus, bus.length), "PCI bus id");
    this.pciBusId = new TextDecoder().decode(bus.subarray(0, bus.indexOf(0)));
  }

  private get k() {
    if (this.#disposed) throw new Error("cuda backend used after dispose()");
    return this.lib.symbols;
  }

  /** Throws with the library's message when a C call failed. */
  check(rc: number, op: string): void {
    if (rc !== 0) throw this.failure(op);
  }

  /** What a failed C call throws: the library's message, as a DeviceLostError once the context is lost. */
  failure(op: string): Error {
    const k = this.lib.symbols;
    const detail = `cuda ${op}: ${k.kc_last_error(this.ctx)}`;
    const lost = k.kc_context_lost(this.ctx);
    if (!lost) return new Error(detail);
    const name = String(k.kc_error_name(lost));
    return new DeviceLostError(name, lost, `The CUDA device context is lost (${name}, error ${lost}): ${detail}`);
  }

  // ---- kernel paths ------------------------------------------------------------------------------
  /**
   * Forces the named kernel (a key of CUDA_KERNEL_PATHS[op]) for the ops given, or "auto" to let the
   * library choose again; ops left out keep the path this method last gave them (auto at open:
   * KINO_CUDA_GEMM / KINO_CUDA_ATTENTION / KINO_CUDA_CONV are not seen here). Throws the device's reason when it cannot run
   * a kernel at all (wgmma on anything but sm_90).
   */
  setKernelPaths(paths: Partial<Record<KernelOp, string>>): void {
    this.#paths.set(paths);
  }

  /** bf16 where the tensor cores run (sm_80+) and GEMMs are not held to exact f32 (the SIMT path,
   *  exact mode): their inputs are rounded to bf16 anyway, so storing them bf16 saves the pass. */
  get activationDtype(): "f32" | "bf16" {
    return this.smVersion >= 80 && !this.#paths.forced("gemm", "simt") ? "bf16" : "f32";
  }

  /** The kernel the last `gemm` / `attention` / `conv3d` (or `conv2d`) call ran (a key of
   *  CUDA_KERNEL_PATHS[op]), or null when it ran none (an empty output, nothing visible). */
  ranKernel(op: KernelOp): string | null {
    return this.#paths.ran(op);
  }

  // ---- memory ------------------------------------------------------------------------------------
  alloc(shape: Shape, dtype: DType = "f32"): Tensor {
    const bytes = numelOf(shape) * DTYPE_BYTES[dtype];
    const p = this.k.kc_alloc(this.ctx, Math.max(bytes, 1));
    if (!p) throw this.failure(`alloc [${shape.join(", ")}] ${dtype}`);
    const t = new Tensor("cuda", shape, dtype, Number(p));
    this.graphs?.allocated(t);
    return t;
  }

  upload(data: HostData, shape: Shape, dtype?: DType): Tensor {
    this.graphs?.refuse("upload");
    const dt = dtype ?? (data instanceof Float32Array ? "f32" : data instanceof Uint8Array ? "u8" : undefined);
    if (!dt) throw new Error("upload: a Uint16Array needs dtype bf16 or f16");
    const t = this.alloc(shape, dt);
    try {
      this.write(t, data);
    } catch (e) {
      this.free(t);
      throw e;
    }
    return t;
  }

  write(t: Tensor, data: HostData): void {
    this.graphs?.refuse("write");
    this.#io.write(t, data);
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  download(t: Tensor): Promise<Float32Array> {
    this.graphs?.refuse("download");
    return this.#io.download(t);
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  downloadRaw(t: Tensor): Promise<Uint8Array> {
    this.graphs?.refuse("downloadRaw");
    return this.#io.downloadRaw(t);
  }

  /** Refused synchronously while a graph records (a copy on another stream cannot join it). */
  #readbackRaw(t: Tensor): Promise<Uint8Array> {
    this.graphs?.refuse("readbackRaw");
    return this.#io.readbackRaw(t);
  }

  free(...tensors: Tensor[]): void {
    for (const t of tensors) {
      this.graphs?.freeing(t);
      t.markFreed();
      this.check(this.k.kc_free(this.ctx, t.ptr), "free");
    }
  }

  /** Refused synchronously while a graph records (a recording cannot wait for its results). */
  sync(): Promise<void> {
    this.graphs?.refuse("sync");
    return this.#sync();
  }

  async #sync(): Promise<void> {
    this.check(this.k.kc_synchronize(this.ctx), "sync");
  }

  memory(): MemoryStats {
    const s = new BigInt64Array(8); // kernels/cuda/alloc.cu kc_memory_stats
    this.k.kc_memory_stats(this.ctx, s);
    return { inUse: Number(s[0]), peak: Number(s[2]), allocations: Number(s[4]), systemAllocations: Number(s[3]) };
  }

  dispose(): void {
    if (this.#disposed) return;
    this.graphs?.dispose();
    this.#io.dispose();
    this.lib.symbols.kc_destroy(this.ctx);
    this.lib.close();
    this.#disposed = true;
  }

  // ---- linear algebra ----------------------------------------------------------------------------
  gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: GemmEpilogue | null): void {
    const { M, N, K, split } = P.gemmDims(out, a, w, bias, epilogue);
    const e = P.gemmEpilogueDims(out, epilogue);
    const residual = epilogue?.kind === "residual" ? epilogue : null;
    this.#paths.clear("gemm");
    if (M === 0 || N === 0) return;
    this.check(this.k.kc_gemm(this.ctx, out.ptr, a.ptr, DT[a.dtype], w.ptr, DT[w.dtype], bias?.ptr ?? 0, M, N, K, e.gelu ? 1 : 0,
      residual?.residual.ptr ?? 0, residual?.gate?.ptr ?? 0, e.L, e.G, split, DT[out.dtype]), "gemm");
    this.#paths.record("gemm");
  }

  attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): void {
    const { B, Lq, Lk, kvLen, H, D } = P.attentionDims(out, q, k, v, opts);
    const bc = opts.blockCausal;
    this.#paths.clear("attention");
    this.check(this.k.kc_attention(this.ctx, out.ptr, q.ptr, k.ptr, v.ptr, DT[q.dtype], opts.bias?.ptr ?? 0, B, Lq, Lk, kvLen, H, D,
      opts.scale, bc?.blockSize ?? 0, bc?.qOffset ?? 0, DT[out.dtype]), "attention");
    this.#paths.record("attention");
  }

  // ---- normalisation -----------------------------------------------------------------------------
  layerNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null, bias?: Tensor | null): void {
    const { rows, cols } = P.activationRows("layerNorm", out, x, false);
    P.optionalVector("layerNorm", "weight", weight, cols);
    P.optionalVector("layerNorm", "bias", bias, cols);
    this.check(this.k.kc_layer_norm(this.ctx, out.ptr, x.ptr, rows, cols, eps, weight?.ptr ?? 0, bias?.ptr ?? 0, 0, 0, 0, 0, DT[out.dtype]),
      "layerNorm");
  }

  rmsNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null): void {
    const { rows, cols } = P.activationRows("rmsNorm", out, x, true);
    P.optionalVector("rmsNorm", "weight", weight, cols);
    this.check(this.k.kc_rms_norm(this.ctx, out.ptr, x.ptr, rows, cols, eps, weight?.ptr ?? 0, DT[x.dtype]), "rmsNorm");
  }

  layerNormModulate(out: Tensor, x: Tensor, eps: number, scale: Tensor, shift: Tensor): void {
    const { B, L, C, G } = P.groupedDims("layerNormModulate", out, x, [scale, shift]);
    this.check(this.k.kc_layer_norm(this.ctx, out.ptr, x.ptr, B * L, C, eps, 0, 0, scale.ptr, shift.ptr, L, G, DT[out.dtype]), "layerNormModulate");
  }

  rmsNormRope(out: Tensor, x: Tensor, eps: number, weight: Tensor | null, opts: RopeOptions): void {
    const d = P.rmsNormRopeDims(out, x, weight, opts);
    this.check(this.k.kc_rms_norm_rope(this.ctx, out.ptr, x.ptr, weight?.ptr ?? 0, eps, d.B, d.L, d.H, d.D, opts.cos.ptr, opts.sin.ptr,
      d.P, d.pairs, d.pt, d.ph, d.pw, d.F, d.GH, d.GW, d.f0, opts.frameOffsetAt?.ptr ?? 0, DT[x.dtype]), "rmsNormRope");
  }

  l2NormChannels(out: Tensor, x: Tensor, eps: number, scale: number, gamma?: Tensor | null): void {
    P.sameShapeF32("l2NormChannels", out, x);
    if (x.rank < 2) P.fail("l2NormChannels", `x must be [B, C, ...], got [${x.shape.join(", ")}]`);
    const [B, C] = x.shape as [number, number];
    P.optionalVector("l2NormChannels", "gamma", gamma, C);
    const S = numelOf(x.shape.slice(2));
    this.check(this.k.kc_l2_norm_channels(this.ctx, out.ptr, x.ptr, B, C, S, eps, scale, gamma?.ptr ?? 0), "l2NormChannels");
  }

  softmax(out: Tensor, x: Tensor): void {
    const { rows, cols } = P.rowsOf("softmax", out, x);
    this.check(this.k.kc_softmax(this.ctx, out.ptr, x.ptr, rows, cols), "softmax");
  }

  // ---- elementwise -------------------------------------------------------------------------------
  gelu(out: Tensor, x: Tensor): void {
    this.check(this.k.kc_gelu(this.ctx, out.ptr, x.ptr, P.sameShapeF32("gelu", out, x)), "gelu");
  }

  geluExact(out: Tensor, x: Tensor): void {
    this.check(this.k.kc_gelu_exact(this.ctx, out.ptr, x.ptr, P.sameShapeF32("geluExact", out, x)), "geluExact");
  }

  silu(out: Tensor, x: Tensor): void {
    this.check(this.k.kc_silu(this.ctx, out.ptr, x.ptr, P.sameShapeF32("silu", out, x)), "silu");
  }

  mul(out: Tensor, a: Tensor, b: Tensor): void {
    this.check(this.k.kc_mul(this.ctx, out.ptr, a.ptr, b.ptr, P.sameShapeF32("mul", out, a, b)), "mul");
  }

  axpby(out: Tensor, a: Tensor, b: Tensor, alpha: number, beta: number): void {
    const n = P.sameShapeActivation("axpby", out, a, b);
    this.check(this.k.kc_axpby(this.ctx, out.ptr, a.ptr, b.ptr, alpha, beta, n, DT[out.dtype]), "axpby");
  }

  fill(out: Tensor, value: number): void {
    this.check(this.k.kc_fill(this.ctx, out.ptr, value, P.sameShapeF32("fill", out)), "fill");
  }

  rope3d(out: Tensor, x: Tensor, opts: RopeOptions): void {
    const d = P.ropeDims(out, x, opts);
    this.check(this.k.kc_rope3d(this.ctx, out.ptr, x.ptr, d.B, d.L, d.H, d.D, opts.cos.ptr, opts.sin.ptr, d.P, d.pairs, d.pt, d.ph,
      d.pw, d.F, d.GH, d.GW, d.f0, opts.frameOffsetAt?.ptr ?? 0, DT[x.dtype]), "rope3d");
  }

  // ---- lookup and position bias ------------------------------------------------------------------
  embedding(out: Tensor, table: Tensor, ids: Int32Array): void {
    const op = "embedding";
    this.graphs?.refuse(op); // the ids are copied from host memory
    P.expectDtype(op, "table", table, ...P.WEIGHT_DTYPES);
    P.expectDtype(op, "out", out, "f32");
    if (table.rank !== 2) P.fail(op, `table must be [V, C], got [${table.shape.join(", ")}]`);
    const [V, C] = table.shape as [number, number];
    P.expectShape(op, "out", out, [ids.length, C]);
    for (const id of ids) if (id < 0 || id >= V) P.fail(op, `id ${id} outside [0, ${V})`);
    this.check(this.k.kc_embedding(this.ctx, out.ptr, table.ptr, DT[table.dtype], ids, ids.length, C), op);
  }

  t5RelativeBias(out: Tensor, table: Tensor, opts: T5BiasOptions): void {
    this.graphs?.refuse("t5RelativeBias"); // the bucket table is copied from host memory
    const { H, Lq, Lk } = P.t5Dims(out, table, opts);
    if (H * Lq * Lk === 0) return;
    const buckets = P.t5BucketTable(Lq, Lk, opts);
    this.check(this.k.kc_t5_relative_bias(this.ctx, out.ptr, table.ptr, buckets, H, Lq, Lk), "t5RelativeBias");
  }

  // ---- convolution and resampling ----------------------------------------------------------------
  conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}): void {
    const g = P.conv3dGeometry(out, x, w, bias, opts);
    const geom = new Int32Array([g.Cin, g.Cout, g.T, g.H, g.W, g.kt, g.kh, g.kw, g.st, g.sh, g.sw, g.timePad, g.top, g.left, g.To, g.Ho, g.Wo]);
    const ns = opts.normSilu;
    this.check(this.k.kc_conv3d(this.ctx, out.ptr, x.ptr, opts.prev?.ptr ?? 0, w.ptr, DT[w.dtype], bias?.ptr ?? 0, opts.residual?.ptr ?? 0, g.B, geom,
      opts.upsample ? 1 : 0, ns ? 1 : 0, ns?.gamma?.ptr ?? 0, ns?.eps ?? 0, ns?.scale ?? 0), "conv3d");
    this.#paths.record("conv3d");
  }

  conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv2dOptions = {}): void {
    const op = "conv2d";
    if (x.rank !== 4 || w.rank !== 4 || out.rank !== 4) P.fail(op, `x, w and out must be 4-D, got ${x}, ${w}, ${out}`);
    const [sh, sw] = opts.stride ?? [1, 1];
    const as5 = (t: Tensor) => t.reshape([t.dim(0), t.dim(1), 1, t.dim(2), t.dim(3)]);
    this.conv3d(as5(out), as5(x), as5(w), bias, { stride: [1, sh, sw], pad: opts.pad, timePad: 0 });
  }

  resize(out: Tensor, x: Tensor, opts: ResizeOptions = {}): void {
    const { planes, H, W, Ho, Wo, torch } = P.resizeDims(out, x, opts.filter);
    this.check(this.k.kc_resize(this.ctx, out.ptr, x.ptr, planes, H, W, Ho, Wo, torch), "resize");
  }

  upsampleNearest(out: Tensor, x: Tensor): void {
    const factors = P.upsampleFactors(out, x);
    if (out.numel === 0) return;
    this.gather(out, x, out.shape, factors, stridesOf(x.shape), "upsampleNearest");
  }

  // ---- data movement -----------------------------------------------------------------------------
  concat(out: Tensor, inputs: readonly Tensor[], dim: number): void {
    if (inputs.length === 0) P.fail("concat", "no inputs");
    const d = P.normDim("concat", dim, out.rank);
    const total = inputs.reduce((n, t) => n + t.dim(d), 0);
    if (total !== out.dim(d)) P.fail("concat", `inputs sum to ${total} along dim ${d}, out has ${out.dim(d)}`);
    let at = 0;
    for (const t of inputs) {
      this.writeSlice(out, t, d, at);
      at += t.dim(d);
    }
  }

  slice(out: Tensor, x: Tensor, dim: number, start: number): void {
    const s = P.sliceDims("slice", x, out, dim, start);
    const e = DTYPE_BYTES[x.dtype];
    const row = s.smallLen * s.inner * e;
    this.check(this.k.kc_copy_rows(this.ctx, out.ptr, row, x.ptr + start * s.inner * e, s.bigLen * s.inner * e, s.outer, row), "slice");
  }

  writeSlice(dst: Tensor, src: Tensor, dim: number, start: number): void {
    const s = P.sliceDims("writeSlice", dst, src, dim, start);
    const e = DTYPE_BYTES[dst.dtype];
    const row = s.smallLen * s.inner * e;
    this.check(this.k.kc_copy_rows(this.ctx, dst.ptr + start * s.inner * e, s.bigLen * s.inner * e, src.ptr, row, s.outer, row), "writeSlice");
  }

  /** copyWithinCopies' disjoint row copies, one copy kernel each, in stream order. */
  copyWithin(t: Tensor, dim: number, to: number, from: number, len: number): void {
    for (const c of P.copyWithinCopies(t, dim, to, from, len)) {
      this.check(this.k.kc_copy_rows(this.ctx, t.ptr + c.dst, c.pitch, t.ptr + c.src, c.pitch, c.rows, c.rowBytes), "copyWithin");
    }
  }

  permute(out: Tensor, x: Tensor, perm: readonly number[]): void {
    P.permuteCheck(out, x, perm);
    if (out.numel === 0) return;
    const xs = stridesOf(x.shape);
    this.gather(out, x, out.shape, perm.map(() => 1), perm.map((p) => xs[p]!), "permute");
  }

  cast(out: Tensor, x: Tensor): void {
    P.expectShape("cast", "out", out, x.shape);
    P.expectDtype("cast", "out", out, "f32", "bf16", "f16");
    P.expectDtype("cast", "x", x, "f32", "bf16", "f16");
    this.check(this.k.kc_convert(this.ctx, out.ptr, DT[out.dtype], x.ptr, DT[x.dtype], x.numel), "cast");
  }

  private gather(out: Tensor, x: Tensor, shape: Shape, div: number[], inStride: number[], op: string): void {
    if (shape.length === 0) return this.check(this.k.kc_copy(this.ctx, out.ptr, x.ptr, out.bytes), op);
    const big = (v: readonly number[]) => BigInt64Array.from(v, (n) => BigInt(n));
    this.check(this.k.kc_gather(this.ctx, out.ptr, x.ptr, DTYPE_BYTES[x.dtype], shape.length, big(shape), big(div), big(inStride)), op);
  }

  // ---- video frames ------------------------------------------------------------------------------
  rgbToYuv420(out: Tensor, x: Tensor, range: FrameRange): void {
    const { T, H, W } = P.yuvDims("rgbToYuv420", x, out);
    this.check(this.k.kc_rgb_to_yuv420(this.ctx, out.ptr, x.ptr, T, H, W, range[0], range[1]), "rgbToYuv420");
  }

  yuv420ToRgb(out: Tensor, x: Tensor, range: FrameRange): void {
    const { T, H, W } = P.yuvDims("yuv420ToRgb", out, x);
    this.check(this.k.kc_yuv420_to_rgb(this.ctx, out.ptr, x.ptr, T, H, W, range[0], range[1]), "yuv420ToRgb");
  }
}

function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1]! * shape[i + 1]!;
  return s;
}
