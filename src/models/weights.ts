// Loading named tensors of one model component onto the device. Models ask for each tensor by its
// canonical (Wan-original) name with the shape they expect; the reader finds it in the checkpoint
// under whatever name the file uses (a rename function maps file names to canonical ones), checks
// shape and dtype, and streams the bytes to the device in slices. After a model took what it needs,
// `finish()` fails on any tensor left over, so an extra tensor is as loud as a missing one.
import type { Backend } from "../runtime/backend.ts";
import { fromHalf, toHalf } from "../runtime/dtype.ts";
import type { DType, Tensor } from "../runtime/tensor.ts";
import { CheckpointError, type TensorInfo, type TensorTable, readTensorBytes } from "./safetensors.ts";

/** How big matrices are stored on the device: as in the file, or converted (bf16 halves the memory). */
export type WeightDtype = "keep" | "f32" | "bf16" | "f16";

/** Read and upload at most this many bytes at a time. */
const SLICE_BYTES = 32 * 1024 * 1024;

const FILE_DTYPES: Record<string, DType> = { F32: "f32", BF16: "bf16", F16: "f16" };

const unloadable = (info: TensorInfo) => `tensor '${info.name}' has dtype ${info.dtype}; only F32, BF16 and F16 can be loaded`;

/** Changes applied to weights as they load: a LoRA adapter (lora.ts). */
export interface WeightPatch {
  /** A dense tensor that replaces the checkpoint's `name` entirely, if the patch has one. */
  replacement(name: string): TensorInfo | undefined;
  /** Merges any low-rank update for `name` into the loaded tensor (on the device). */
  apply(backend: Backend, name: string, t: Tensor): Promise<void>;
}

export interface WeightReaderOptions {
  /** Component name for messages ("transformer", "text_encoder", "vae"). */
  component: string;
  /** File tensor name → canonical name; null drops the tensor silently (a tied duplicate). */
  rename?: (fileName: string) => string | null;
  weightDtype?: WeightDtype;
  patch?: WeightPatch;
  /** Canonical name → the name this checkpoint's layout would use, for "missing tensor" messages. */
  fileName?: (name: string) => string;
}

/** Where a model gets its parameters, by canonical name and expected shape: a checkpoint (WeightReader)
 *  or random values made on the device (random-weights.ts, for benchmarks at real sizes). */
export interface WeightSource {
  readonly backend: Backend;
  /** A weight matrix / conv kernel (stored as the source's dtype policy says). */
  matrix(name: string, shape: readonly number[]): Promise<Tensor>;
  /** A small parameter vector (norm weight, bias, modulation table), always f32. */
  vector(name: string, shape: readonly number[]): Promise<Tensor>;
  /** The values on the host, as f32 (small tensors that are folded or combined before upload). */
  host(name: string, shape: readonly number[]): Promise<Float32Array>;
}

export class WeightReader implements WeightSource {
  readonly component: string;
  readonly #byName = new Map<string, TensorInfo>();
  readonly #used = new Set<string>();
  readonly #table: TensorTable;
  readonly #opts: WeightReaderOptions;

  constructor(readonly backend: Backend, table: TensorTable, opts: WeightReaderOptions) {
    this.component = opts.component;
    this.#table = table;
    this.#opts = opts;
    for (const [fileName, info] of table.tensors) {
      const name = opts.rename ? opts.rename(fileName) : fileName;
      if (name === null) continue;
      const clash = this.#byName.get(name);
      if (clash) this.#fail(`tensors '${clash.name}' and '${fileName}' both map to '${name}'`);
      this.#byName.set(name, info);
    }
  }

  #fail(message: string): never {
    throw new CheckpointError(`${this.component}: ${message} (${this.#table.files.join(", ")})`);
  }

  /** Canonical names present in the checkpoint. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** The entry for `name`, checked against `shape`; counts as used. */
  info(name: string, shape?: readonly number[]): TensorInfo {
    const info = this.#opts.patch?.replacement(name) ?? this.#byName.get(name);
    if (!info) {
      const inFile = this.#opts.fileName?.(name) ?? name;
      this.#fail(`missing tensor '${inFile}'${inFile !== name ? ` (Wan name '${name}')` : ""}`);
    }
    this.#used.add(name);
    if (!(info.dtype in FILE_DTYPES)) this.#fail(unloadable(info));
    if (shape && (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i]))) {
      this.#fail(`tensor '${info.name}' has shape [${info.shape.join(", ")}], expected [${shape.join(", ")}]`);
    }
    return info;
  }

  /** A weight matrix / conv kernel, stored as the weightDtype policy says, LoRA applied. */
  async matrix(name: string, shape: readonly number[]): Promise<Tensor> {
    const info = this.info(name, shape);
    const policy = this.#opts.weightDtype ?? "keep";
    const t = await this.#upload(info, policy === "keep" ? FILE_DTYPES[info.dtype]! : policy);
    await this.#opts.patch?.apply(this.backend, name, t);
    return t;
  }

  /** A small parameter vector (norm weight, bias, modulation table): always f32, as the ops need. */
  async vector(name: string, shape: readonly number[]): Promise<Tensor> {
    const t = await this.#upload(this.info(name, shape), "f32");
    await this.#opts.patch?.apply(this.backend, name, t);
    return t;
  }

  /** The values on the host, as f32 (small tensors that are folded or combined before upload). */
  async host(name: string, shape: readonly number[]): Promise<Float32Array> {
    return readAsF32(this.info(name, shape));
  }

  /** Counts tensors as used without loading them (a part of the checkpoint this task does not run). */
  ignore(predicate: (name: string) => boolean): void {
    for (const n of this.#byName.keys()) if (predicate(n)) this.#used.add(n);
  }

  /** Fails if the checkpoint holds a tensor no model asked for. */
  finish(): void {
    const extra = [...this.#byName.keys()].filter((n) => !this.#used.has(n));
    if (extra.length) {
      const shown = extra.slice(0, 5).map((n) => `'${this.#byName.get(n)!.name}'`).join(", ");
      this.#fail(`unexpected tensor${extra.length > 1 ? "s" : ""} ${shown}${extra.length > 5 ? ` and ${extra.length - 5} more` : ""} (not part of this model)`);
    }
  }

  async #upload(info: TensorInfo, dtype: DType): Promise<Tensor> {
    const t = this.backend.alloc(info.shape, dtype);
    try {
      const from = FILE_DTYPES[info.dtype]!;
      const elem = info.byteLength / Math.max(1, t.numel);
      const flat = t.reshape([t.numel]);
      const step = Math.max(1, Math.floor(SLICE_BYTES / Math.max(elem, 1)));
      for (let first = 0; first < t.numel; first += step) {
        const n = Math.min(step, t.numel - first);
        const bytes = await readTensorBytes(info, first * elem, (first + n) * elem);
        this.backend.write(flat.view([n], first), convert(bytes, from, dtype));
      }
      return t;
    } catch (err) {
      this.backend.free(t);
      throw err;
    }
  }
}

/** Raw file bytes of dtype `from` as host data for a tensor of dtype `to`. */
function convert(bytes: Uint8Array, from: DType, to: DType): Float32Array | Uint16Array {
  if (from === to) return from === "f32" ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) : new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  const values = from === "f32" ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) : fromHalf(new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2), from as "bf16" | "f16");
  return to === "f32" ? values : toHalf(values, to as "bf16" | "f16");
}

/** A (small) tensor's values on the host as f32. */
export async function readAsF32(info: TensorInfo): Promise<Float32Array> {
  const from = FILE_DTYPES[info.dtype];
  if (!from) throw new CheckpointError(`${info.file}: ${unloadable(info)}`);
  return convert(await readTensorBytes(info), from, "f32") as Float32Array;
}
