// Random parameters made directly on the device, for timing a model at its real size without a
// checkpoint file (tools/bench/model.ts builds Wan2.1-1.3B this way on a GPU). Same shapes and names as
// a checkpoint, so the model's own loader runs unchanged. Values only need to be sane, not trained:
// matrices ~ N(0, 1/fan_in) stored as bf16 (by default), norm weights ~ 1, biases and modulation
// tables small. Filling 1.4 B values from JS one by one would take longer than the benchmark, so
// matrices repeat one seeded block of normal values (started at a different place per tensor).
import type { Backend } from "../runtime/backend.ts";
import { toHalf } from "../runtime/dtype.ts";
import { type Tensor, numelOf } from "../runtime/tensor.ts";
import { SeededRandom } from "./random.ts";
import type { WeightSource } from "./weights.ts";

/** Values in the repeated block: not a multiple of any model width, so rows do not line up. */
const BLOCK = (1 << 20) + 7;

export interface RandomWeightsOptions {
  seed?: number;
  /** Storage of the matrices (default bf16). */
  dtype?: "f32" | "bf16" | "f16";
}

export class RandomWeights implements WeightSource {
  readonly #rng: SeededRandom;
  readonly #dtype: "f32" | "bf16" | "f16";
  readonly #normal: Float32Array;
  /** The block scaled by 1/√fan_in, in the storage dtype, per fan_in. */
  readonly #scaled = new Map<number, Float32Array | Uint16Array>();
  #start = 0;
  /** Elements made so far (a benchmark reports the model size). */
  parameters = 0;

  constructor(readonly backend: Backend, opts: RandomWeightsOptions = {}) {
    this.#rng = new SeededRandom(opts.seed ?? 1);
    this.#dtype = opts.dtype ?? "bf16";
    this.#normal = this.#rng.normal(BLOCK);
  }

  async matrix(_name: string, shape: readonly number[]): Promise<Tensor> {
    const t = this.backend.alloc(shape, this.#dtype);
    const numel = t.numel, fanIn = numel / shape[0]!;
    const block = this.#block(fanIn);
    const flat = t.reshape([numel]);
    let pos = this.#start;
    for (let first = 0; first < numel; ) {
      const n = Math.min(numel - first, BLOCK - pos);
      this.backend.write(flat.view([n], first), block.subarray(pos, pos + n));
      first += n;
      pos = (pos + n) % BLOCK;
    }
    this.#start = (this.#start + 7919) % BLOCK;
    this.parameters += numel;
    return t;
  }

  async vector(name: string, shape: readonly number[]): Promise<Tensor> {
    return this.backend.upload(await this.host(name, shape), shape);
  }

  /** Values as `vector` makes them, left on the host; a small matrix folded before upload (the VAE's
   *  1×1×1 convs) is N(0, 1/fan_in) like the others. */
  async host(name: string, shape: readonly number[]): Promise<Float32Array> {
    const n = numelOf(shape);
    const z = this.#rng.normal(n);
    const last = shape[shape.length - 1]!;
    // norm weights around 1; modulation tables like Wan's init (N(0, 1/dim)); biases small
    const value = /norm|gamma/.test(name) ? (v: number) => 1 + 0.1 * v
      : /modulation|scale_shift/.test(name) ? (v: number) => v / Math.sqrt(last)
      : shape.length > 1 ? (v: number) => v / Math.sqrt(n / shape[0]!)
      : (v: number) => 0.05 * v;
    this.parameters += n;
    return z.map(value);
  }

  #block(fanIn: number): Float32Array | Uint16Array {
    let block = this.#scaled.get(fanIn);
    if (!block) {
      const scaled = this.#normal.map((v) => v / Math.sqrt(fanIn));
      block = this.#dtype === "f32" ? scaled : toHalf(scaled, this.#dtype);
      this.#scaled.set(fanIn, block);
    }
    return block;
  }
}
