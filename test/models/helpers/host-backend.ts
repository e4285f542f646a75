// A Backend over plain typed arrays on the JS heap: every op is the runtime's TypeScript reference
// (src/runtime/reference.ts) on the tensors' values, nothing computed here but fill (a constant) and
// cast (dtype.ts's rounding, through `write`). It lets the model tests run the goldens when no compiled
// backend is available, and it is the float64-accumulating yardstick the compiled backends are
// compared with. Slow by design: only for the tiny golden configurations.
import type {
  AttentionOptions, Backend, Conv2dOptions, Conv3dOptions, FrameRange, GemmEpilogue, HostData, MemoryStats, ResizeOptions, RopeOptions, T5BiasOptions,
} from "../../../src/runtime/backend.ts";
import { fromHalf, toHalf } from "../../../src/runtime/dtype.ts";
import * as R from "../../../src/runtime/reference.ts";
import { Host } from "../../../src/runtime/reference.ts";
import { DTYPE_BYTES, type DType, type Shape, Tensor, numelOf } from "../../../src/runtime/tensor.ts";

export class HostBackend implements Backend {
  readonly name = "wasm" as const; // stands in for the CPU backend
  readonly device = "cpu" as const;
  readonly description = "TypeScript reference (host arrays)";
  readonly activationDtype = "f32" as const;
  #next = 64;
  #mem = new Map<number, Uint8Array>();
  #inUse = 0;
  #peak = 0;
  #allocations = 0;

  alloc(shape: Shape, dtype: DType = "f32"): Tensor {
    const bytes = numelOf(shape) * DTYPE_BYTES[dtype];
    const ptr = this.#next;
    this.#next += Math.ceil((bytes + 1) / 64) * 64;
    this.#mem.set(ptr, new Uint8Array(bytes));
    this.#inUse += bytes;
    this.#peak = Math.max(this.#peak, this.#inUse);
    this.#allocations++;
    return new Tensor("cpu", shape, dtype, ptr);
  }

  upload(data: HostData, shape: Shape, dtype?: DType): Tensor {
    const t = this.alloc(shape, dtype ?? (data instanceof Uint8Array ? "u8" : data instanceof Float32Array ? "f32" : undefined));
    this.write(t, data);
    return t;
  }

  #bytes(t: Tensor): Uint8Array {
    if (t.freed) throw new Error(`use of freed ${t}`);
    const owner = this.#mem.get(t.owner.ptr);
    if (!owner) throw new Error(`unknown tensor ${t}`);
    return owner.subarray(t.ptr - t.owner.ptr, t.ptr - t.owner.ptr + t.bytes);
  }

  /** The tensor's bytes as stored (a live view; half types as their 16-bit patterns). */
  bytesOf(t: Tensor): Uint8Array {
    return this.#bytes(t);
  }

  /** The tensor's values as f32 (a live view for f32 tensors). */
  #f32(t: Tensor): Float32Array {
    const b = this.#bytes(t);
    if (t.dtype === "f32") return new Float32Array(b.buffer, b.byteOffset, t.numel);
    if (t.dtype === "u8") return Float32Array.from(b);
    return fromHalf(new Uint16Array(b.slice().buffer), t.dtype);
  }

  #host(t: Tensor): Host {
    return t.dtype === "u8" ? new Host([...t.shape], this.#bytes(t)) : new Host([...t.shape], this.#f32(t));
  }

  #store(out: Tensor, h: Host): void {
    if (h.data.length !== out.numel) throw new Error(`result size ${h.data.length} ≠ ${out}`);
    if (out.dtype === "u8") this.#bytes(out).set(h.data);
    else this.write(out, h.data instanceof Float32Array ? h.data : Float32Array.from(h.data));
  }

  write(t: Tensor, data: HostData): void {
    if (data.length !== t.numel) throw new Error(`write: ${data.length} values into ${t}`);
    const dst = this.#bytes(t);
    if (data instanceof Float32Array) {
      if (t.dtype === "f32") dst.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      else if (t.dtype === "u8") dst.set(data);
      else dst.set(new Uint8Array(toHalf(data, t.dtype).buffer));
    } else if (data instanceof Uint16Array) {
      if (t.dtype !== "bf16" && t.dtype !== "f16") throw new Error(`write: raw half bits into ${t}`);
      dst.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } else dst.set(data);
  }

  async download(t: Tensor): Promise<Float32Array> {
    return this.#f32(t).slice();
  }

  async downloadRaw(t: Tensor): Promise<Uint8Array> {
    return this.#bytes(t).slice();
  }

  free(...tensors: Tensor[]): void {
    for (const t of tensors) {
      t.markFreed();
      this.#inUse -= this.#mem.get(t.ptr)!.length;
      this.#mem.delete(t.ptr);
    }
  }

  async sync(): Promise<void> {}
  memory(): MemoryStats {
    // every block is new JS memory: each allocation is a system allocation
    return { inUse: this.#inUse, peak: this.#peak, allocations: this.#allocations, systemAllocations: this.#allocations };
  }
  dispose(): void {
    this.#mem.clear();
  }

  gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: GemmEpilogue | null): void {
    const e = epilogue?.kind === "residual"
      ? { ...epilogue, residual: this.#host(epilogue.residual), gate: epilogue.gate ? this.#host(epilogue.gate) : null }
      : epilogue;
    this.#store(out, R.gemm(this.#host(a), this.#host(w), bias ? this.#host(bias) : null, e));
  }
  attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): void {
    this.#store(out, R.attention(this.#host(q), this.#host(k), this.#host(v), { ...opts, bias: opts.bias && this.#host(opts.bias) }));
  }
  layerNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null, bias?: Tensor | null): void {
    this.#store(out, R.layerNorm(this.#host(x), eps, weight ? this.#host(weight) : null, bias ? this.#host(bias) : null));
  }
  rmsNorm(out: Tensor, x: Tensor, eps: number, weight?: Tensor | null): void {
    this.#store(out, R.rmsNorm(this.#host(x), eps, weight ? this.#host(weight) : null));
  }
  layerNormModulate(out: Tensor, x: Tensor, eps: number, scale: Tensor, shift: Tensor): void {
    this.#store(out, R.layerNormModulate(this.#host(x), eps, this.#host(scale), this.#host(shift)));
  }
  rmsNormRope(out: Tensor, x: Tensor, eps: number, weight: Tensor | null, opts: RopeOptions): void {
    this.#store(out, R.rmsNormRope(this.#host(x), eps, weight ? this.#host(weight) : null, this.#rope(opts)));
  }
  l2NormChannels(out: Tensor, x: Tensor, eps: number, scale: number, gamma?: Tensor | null): void {
    this.#store(out, R.l2NormChannels(this.#host(x), eps, scale, gamma ? this.#host(gamma) : null));
  }
  softmax(out: Tensor, x: Tensor): void {
    this.#store(out, R.softmax(this.#host(x)));
  }
  gelu(out: Tensor, x: Tensor): void {
    this.#store(out, R.gelu(this.#host(x)));
  }
  geluExact(out: Tensor, x: Tensor): void {
    this.#store(out, R.geluExact(this.#host(x)));
  }
  silu(out: Tensor, x: Tensor): void {
    this.#store(out, R.silu(this.#host(x)));
  }
  mul(out: Tensor, a: Tensor, b: Tensor): void {
    this.#store(out, R.mul(this.#host(a), this.#host(b)));
  }
  axpby(out: Tensor, a: Tensor, b: Tensor, alpha: number, beta: number): void {
    this.#store(out, R.axpby(this.#host(a), this.#host(b), alpha, beta));
  }
  fill(out: Tensor, value: number): void {
    this.#store(out, new Host([...out.shape], new Float32Array(out.numel).fill(value)));
  }
  rope3d(out: Tensor, x: Tensor, opts: RopeOptions): void {
    this.#store(out, R.rope3d(this.#host(x), this.#rope(opts)));
  }
  #rope(opts: RopeOptions): R.HostRope {
    const at = opts.frameOffsetAt;
    return { ...opts, cos: this.#host(opts.cos), sin: this.#host(opts.sin), frameOffsetAt: at ? this.#host(at) : undefined };
  }
  embedding(out: Tensor, table: Tensor, ids: Int32Array): void {
    this.#store(out, R.embedding(this.#host(table), ids));
  }
  t5RelativeBias(out: Tensor, table: Tensor, opts: T5BiasOptions): void {
    this.#store(out, R.t5RelativeBias(this.#host(table), out.shape[1]!, out.shape[2]!, opts));
  }
  conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}): void {
    const ns = opts.normSilu;
    this.#store(out, R.conv3d(this.#host(x), this.#host(w), bias ? this.#host(bias) : null,
      { ...opts, prev: opts.prev && this.#host(opts.prev), normSilu: ns && { ...ns, gamma: ns.gamma && this.#host(ns.gamma) },
        residual: opts.residual && this.#host(opts.residual) }));
  }
  conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv2dOptions = {}): void {
    this.#store(out, R.conv2d(this.#host(x), this.#host(w), bias ? this.#host(bias) : null, opts));
  }
  resize(out: Tensor, x: Tensor, opts: ResizeOptions = {}): void {
    this.#store(out, R.resize(this.#host(x), out.shape[out.rank - 2]!, out.shape[out.rank - 1]!, opts));
  }

  upsampleNearest(out: Tensor, x: Tensor): void {
    this.#store(out, R.upsampleNearest(this.#host(x), [...out.shape]));
  }
  // Data movement goes through f32 values: a bf16/f16 value survives f32 and back unchanged.
  concat(out: Tensor, inputs: readonly Tensor[], dim: number): void {
    this.#store(out, R.concat(inputs.map((t) => this.#host(t)), dim));
  }
  slice(out: Tensor, x: Tensor, dim: number, start: number): void {
    this.#store(out, R.slice(this.#host(x), dim, start, out.shape[dim < 0 ? dim + out.rank : dim]!));
  }
  writeSlice(dst: Tensor, src: Tensor, dim: number, start: number): void {
    this.#store(dst, R.writeSlice(this.#host(dst), this.#host(src), dim, start));
  }
  copyWithin(t: Tensor, dim: number, to: number, from: number, len: number): void {
    this.#store(t, R.copyWithin(this.#host(t), dim, to, from, len));
  }
  permute(out: Tensor, x: Tensor, perm: readonly number[]): void {
    this.#store(out, R.permute(this.#host(x), perm));
  }
  cast(out: Tensor, x: Tensor): void {
    this.write(out, this.#f32(x).slice());
  }
  rgbToYuv420(out: Tensor, x: Tensor, range: FrameRange): void {
    this.#store(out, R.rgbToYuv420(this.#host(x), range));
  }
  yuv420ToRgb(out: Tensor, x: Tensor, range: FrameRange): void {
    this.#store(out, R.yuv420ToRgb(this.#host(x), out.shape[2]!, out.shape[3]!, range));
  }
}
