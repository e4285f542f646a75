// The random tensors of a checkpoint that tools/make-tiny-checkpoint.ts writes, made only when the
// streaming writer reaches each one (src/models/safetensors-write.ts), so a real-size checkpoint never
// sits in memory whole. Values: N(0, σ²) with σ from the tensor's role — 1/√fan-in for weights (so
// activations keep their scale through a deep stack), around 1 for norm gains, small for biases.
//
// Two ways to draw them. Exact: every value from the seeded generator in order, as the tiny presets
// always have (their files, and the tests' expectations built on them, stay byte for byte the same).
// Pooled, for checkpoints of real size: Box–Muller runs at ~30 M values/s in JavaScript, a minute for
// Wan2.1-1.3B's 1.6 B; instead every big tensor is a window, at a seeded offset, of one pool of
// POOL_SIZE seeded normals scaled to its σ (bf16 pools cached per σ). The values are the same
// distribution and repeat with the pool's period, which its odd length keeps off any row length; no
// timing can tell, and the file is written at disk speed.
import type { SeededRandom } from "../src/models/random.ts";
import type { StoredDtype, TensorToStream } from "../src/models/safetensors-write.ts";
import { toHalf } from "../src/runtime/dtype.ts";

export type Init = "weight" | "norm" | "bias" | "table";

/** Values in the pool (odd, so a window's repeats never line up with a power-of-two row length). */
export const POOL_SIZE = (1 << 24) + 1;
/** Tensors smaller than this are drawn exactly even in pooled mode (biases, norms: cheap either way). */
const POOLED_FROM = 1 << 16;

interface Spec {
  name: string;
  shape: number[];
  init: Init;
  dtype: StoredDtype;
}

const asBytes = (a: Float32Array | Uint16Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Seeded N(0, 1) values, and windows of them scaled to a σ, as bf16 or f32 bytes. */
export class NormalPool {
  readonly #unit: Float32Array;
  readonly #bf16 = new Map<number, Uint16Array>();
  readonly #scratch = new Float32Array(1 << 20);

  constructor(rng: SeededRandom) {
    this.#unit = rng.normal(POOL_SIZE);
  }

  /** Writes n values starting at `offset` of the pool (wrapping), scaled by `scale`. */
  produce(n: number, scale: number, dtype: StoredDtype, offset: number, write: (bytes: Uint8Array) => void): void {
    const segments = (fn: (from: number, count: number) => void) => {
      for (let done = 0, at = offset; done < n; ) {
        const count = Math.min(n - done, POOL_SIZE - at);
        fn(at, count);
        done += count;
        at = 0;
      }
    };
    if (dtype === "BF16") {
      let pool = this.#bf16.get(scale);
      if (!pool) {
        const scaled = new Float32Array(POOL_SIZE);
        for (let i = 0; i < POOL_SIZE; i++) scaled[i] = this.#unit[i]! * scale;
        this.#bf16.set(scale, (pool = toHalf(scaled, "bf16")));
      }
      const half = pool;
      return segments((from, count) => write(asBytes(half.subarray(from, from + count))));
    }
    if (dtype !== "F32") throw new Error(`pooled values are stored as BF16 or F32, not ${dtype}`);
    const s = this.#scratch;
    segments((from, count) => {
      for (let done = 0; done < count; done += s.length) {
        const k = Math.min(s.length, count - done);
        for (let i = 0; i < k; i++) s[i] = this.#unit[from + done + i]! * scale;
        write(asBytes(s.subarray(0, k)));
      }
    });
  }
}

export class Tensors {
  readonly #list: Spec[] = [];
  readonly #pool: NormalPool | null;

  /**
   * `half`: big matrices (init "weight", 2-D or more) are stored as bf16. `pool`: big tensors are
   * windows of it (pooled mode); null: every value drawn exactly.
   */
  constructor(private readonly rng: SeededRandom, private readonly half: boolean, pool: NormalPool | null = null) {
    this.#pool = pool;
  }

  add(name: string, shape: number[], init: Init): void {
    this.#list.push({ name, shape, init, dtype: this.half && init === "weight" && shape.length > 1 ? "BF16" : "F32" });
  }

  linear(name: string, out: number, inp: number, bias = true): void {
    this.add(`${name}.weight`, [out, inp], "weight");
    if (bias) this.add(`${name}.bias`, [out], "bias");
  }

  /** The tensors for writeSafetensorsStreaming, drawn in list order as it writes them; `rename` maps names. */
  stream(rename: (name: string) => string = (n) => n): TensorToStream[] {
    return this.#list.map((spec) => ({ name: rename(spec.name), shape: spec.shape, dtype: spec.dtype, produce: (write) => this.#produce(spec, write) }));
  }

  #produce({ shape, init, dtype }: Spec, write: (bytes: Uint8Array) => void): void {
    const n = shape.reduce((a, b) => a * b, 1);
    const fanIn = shape.length > 1 ? n / shape[0]! : 1;
    const f = init === "weight" ? 1 / Math.sqrt(fanIn) : init === "table" ? 1 / Math.sqrt(shape[shape.length - 1]!) : init === "bias" ? 0.05 : 0.1;
    if (this.#pool && init !== "norm" && n >= POOLED_FROM) {
      return this.#pool.produce(n, f, dtype, this.rng.nextU32() % POOL_SIZE, write);
    }
    const data = this.rng.normal(n).map((v) => (init === "norm" ? 1 + f * v : f * v));
    write(dtype === "F32" ? asBytes(data) : asBytes(toHalf(data, dtype === "BF16" ? "bf16" : "f16")));
  }
}
