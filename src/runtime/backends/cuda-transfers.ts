// Bytes between the host and the CUDA device, for the CUDA backend (cuda.ts): uploads and writes
// (f32 values into bf16/f16 tensors are rounded on the device), downloads (waiting for the stream),
// and readbacks that overlap the work enqueued after them (kernels/cuda/readback.cu: a copy on a
// second stream into pinned memory, whose event the thread polls instead of waiting).
//
// A readback's poll runs on timers (every POLL_MS), so the thread that started it goes on enqueuing
// ops (the next chunk's DiT) and only notices the bytes when it next yields; the caller decides when
// that is (src/pipelines/readback-overlap.ts).
import type { Pointer } from "bun:ffi";
import type { HostData } from "../backend.ts";
import type { DType, Shape, Tensor } from "../tensor.ts";
import { type CudaLibrary, type CudaReadbackLibrary, READBACK_PENDING } from "./cuda-library.ts";

/** Dtype codes of the C ABI (kernels/cuda/common.cuh KcDtype; u8 only as a conversion source). */
export const DT: Record<DType, number> = { f32: 0, bf16: 1, f16: 2, u8: 3 };
/** How often a pending readback's event is asked (ms). */
const POLL_MS = 1;

/** What the transfers need of the backend: its library (refused once disposed), context, error
 *  check (and the error a failed call throws), and memory for staging. */
export interface TransferHost {
  symbols(): CudaLibrary["symbols"];
  readonly ctx: Pointer;
  check(rc: number, op: string): void;
  failure(op: string): Error;
  alloc(shape: Shape, dtype?: DType): Tensor;
  free(t: Tensor): void;
}

export class CudaTransfers {
  #readbacks: Pointer | null = null;
  #disposed = false;

  constructor(private readonly be: TransferHost, private readonly readbackLib: CudaReadbackLibrary | null) {}

  get #k() {
    return this.be.symbols();
  }

  /** Whether this library build has overlapped readbacks. */
  get canReadBack(): boolean {
    return this.readbackLib !== null;
  }

  write(t: Tensor, data: HostData): void {
    if (data.length !== t.numel) throw new Error(`write: ${data.length} values for ${t}`);
    if (t.numel === 0) return;
    const raw = (data instanceof Float32Array && t.dtype === "f32") || (data instanceof Uint16Array && (t.dtype === "bf16" || t.dtype === "f16")) ||
      (data instanceof Uint8Array && t.dtype === "u8");
    if (raw) return this.be.check(this.#k.kc_upload(this.be.ctx, t.ptr, data, data.byteLength), "upload");
    if (!(data instanceof Float32Array) || t.dtype === "u8") throw new Error(`write: cannot store ${data.constructor.name} in ${t}`);
    // f32 values into a bf16/f16 tensor: round on the device (round-to-nearest-even, like dtype.ts).
    const staging = this.be.alloc(t.shape, "f32");
    try {
      this.be.check(this.#k.kc_upload(this.be.ctx, staging.ptr, data, data.byteLength), "upload");
      this.be.check(this.#k.kc_convert(this.be.ctx, t.ptr, DT[t.dtype], staging.ptr, DT.f32, t.numel), "write (convert)");
    } finally {
      this.be.free(staging);
    }
  }

  async download(t: Tensor): Promise<Float32Array> {
    const out = new Float32Array(t.numel);
    if (t.numel === 0) return out;
    if (t.dtype === "f32") {
      this.be.check(this.#k.kc_download(this.be.ctx, out, t.ptr, t.bytes), "download");
      return out;
    }
    const wide = this.be.alloc(t.shape, "f32");
    try {
      this.be.check(this.#k.kc_convert(this.be.ctx, wide.ptr, DT.f32, t.ptr, DT[t.dtype], t.numel), "download (convert)");
      this.be.check(this.#k.kc_download(this.be.ctx, out, wide.ptr, wide.bytes), "download");
    } finally {
      this.be.free(wide);
    }
    return out;
  }

  async downloadRaw(t: Tensor): Promise<Uint8Array> {
    const out = new Uint8Array(t.bytes);
    if (t.bytes > 0) this.be.check(this.#k.kc_download(this.be.ctx, out, t.ptr, t.bytes), "downloadRaw");
    return out;
  }

  /** Backend.readbackRaw: starts the copy now (throws at once when it cannot start), settles later. */
  readbackRaw(t: Tensor): Promise<Uint8Array> {
    const lib = this.readbackLib;
    if (!lib) throw new Error("cuda readbackRaw: this build of the library has no readbacks (rebuild it)");
    if (t.bytes === 0) return Promise.resolve(new Uint8Array(0));
    const k = lib.symbols, ctx = this.be.ctx;
    if (!this.#readbacks) {
      const r = k.kc_readbacks_create(ctx) as Pointer | null;
      if (!r) throw this.be.failure("readbackRaw");
      this.#readbacks = r;
    }
    const queue = this.#readbacks;
    const slot = k.kc_readback_start(ctx, queue, t.ptr, t.bytes);
    if (slot < 0) throw this.be.failure("readbackRaw");
    return new Promise((resolve, reject) => {
      const poll = () => {
        if (this.#disposed) return reject(new Error("cuda readbackRaw: the backend was disposed before the bytes arrived"));
        const rc = k.kc_readback_poll(ctx, queue, slot);
        if (rc === READBACK_PENDING) return void setTimeout(poll, POLL_MS);
        const out = new Uint8Array(t.bytes);
        const done = rc === 0 ? k.kc_readback_finish(ctx, queue, slot, out, t.bytes) : (k.kc_readback_finish(ctx, queue, slot, null, 0), rc);
        if (done === 0) resolve(out);
        else reject(this.be.failure("readbackRaw"));
      };
      poll();
    });
  }

  /** Waits for readbacks in flight (their promises then reject) and frees their stream. */
  dispose(): void {
    this.#disposed = true;
    if (this.#readbacks) this.readbackLib?.symbols.kc_readbacks_destroy(this.be.ctx, this.#readbacks);
    this.#readbacks = null;
    this.readbackLib?.close();
  }
}
