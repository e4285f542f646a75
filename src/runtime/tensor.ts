// The tensor type every backend shares: a shape, a dtype and a byte address in the owning backend's
// memory. A tensor is always contiguous and row-major. It does not hold data on the JS heap, and it is
// never freed by the garbage collector: models hold gigabytes of weights on the GPU, so memory comes
// back only through an explicit `backend.free(t)`.

export type DType = "f32" | "bf16" | "f16" | "u8";

/** Where a tensor lives: "cpu" = the WebAssembly memory of the wasm backend, "cuda" = GPU memory. */
export type DeviceKind = "cpu" | "cuda";

export type Shape = readonly number[];

export const DTYPE_BYTES: Readonly<Record<DType, number>> = { f32: 4, bf16: 2, f16: 2, u8: 1 };

export function numelOf(shape: Shape): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`invalid shape [${shape.join(", ")}]`);
    n *= d;
  }
  return n;
}

/** Row-major element strides of a contiguous tensor of this shape. */
export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1]! * shape[i + 1]!;
  return s;
}

export class Tensor {
  readonly numel: number;
  readonly bytes: number;
  #freed = false;

  /**
   * Backends construct tensors; models get them from `backend.alloc/upload` and `view/reshape`.
   * `ptr` is a byte address in the backend's address space: an offset into the WebAssembly memory for
   * the wasm backend, a device pointer for CUDA. `base` is the allocation a view points into (null for
   * a tensor that owns its memory).
   */
  constructor(
    readonly device: DeviceKind,
    readonly shape: Shape,
    readonly dtype: DType,
    readonly ptr: number,
    readonly base: Tensor | null = null,
  ) {
    this.shape = Object.freeze([...shape]);
    this.numel = numelOf(shape);
    this.bytes = this.numel * DTYPE_BYTES[dtype];
  }

  get rank(): number {
    return this.shape.length;
  }

  /** Size of dimension `i`; negative `i` counts from the end. */
  dim(i: number): number {
    const d = this.shape[i < 0 ? this.shape.length + i : i];
    if (d === undefined) throw new Error(`dimension ${i} out of range for ${this}`);
    return d;
  }

  /** The tensor that owns the memory (this one, or the base of a view). */
  get owner(): Tensor {
    return this.base ?? this;
  }

  /** True once the owning allocation was given back with `backend.free`. */
  get freed(): boolean {
    return this.base ? this.base.freed : this.#freed;
  }

  /** Called by a backend's `free`; the tensor must not be used afterwards. */
  markFreed(): void {
    if (this.base) throw new Error(`cannot free a view (${this}); free the tensor it views`);
    if (this.#freed) throw new Error(`double free of ${this}`);
    this.#freed = true;
  }

  /**
   * A non-owning view of `numelOf(shape)` contiguous elements starting `offsetElements` into this
   * tensor (same dtype). Views let a model address one batch item, the filled prefix of a KV cache
   * (batch 1) or the q/k/v thirds of a fused projection without a copy.
   */
  view(shape: Shape, offsetElements = 0): Tensor {
    const n = numelOf(shape);
    if (!Number.isInteger(offsetElements) || offsetElements < 0 || offsetElements + n > this.numel) {
      throw new Error(`view [${shape.join(", ")}] at +${offsetElements} does not fit in ${this}`);
    }
    const ptr = this.ptr + offsetElements * DTYPE_BYTES[this.dtype];
    return new Tensor(this.device, shape, this.dtype, ptr, this.owner);
  }

  /** The same elements under another shape (a view; numel must match). */
  reshape(shape: Shape): Tensor {
    if (numelOf(shape) !== this.numel) {
      throw new Error(`cannot reshape ${this} to [${shape.join(", ")}]`);
    }
    return this.view(shape, 0);
  }

  toString(): string {
    return `Tensor<${this.dtype}>[${this.shape.join(", ")}]@${this.device}`;
  }
}
