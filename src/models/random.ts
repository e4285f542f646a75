// Seeded Gaussian noise for initial latents and the distilled sampler's re-noising. The same seed gives
// the same video on every backend and machine (the noise is made on the host, then uploaded); it
// does not try to match PyTorch's generator.

/** xoshiro128** (32-bit state words): small, fast, and good enough for Box–Muller. */
export class SeededRandom {
  #s: Uint32Array;

  constructor(seed: number) {
    // splitmix32 expands the seed into a non-zero state
    this.#s = new Uint32Array(4);
    let z = (seed >>> 0) ^ Math.floor(seed / 2 ** 32);
    for (let i = 0; i < 4; i++) {
      z = (z + 0x9e3779b9) >>> 0;
      let t = z;
      t = Math.imul(t ^ (t >>> 16), 0x85ebca6b) >>> 0;
      t = Math.imul(t ^ (t >>> 13), 0xc2b2ae35) >>> 0;
      this.#s[i] = (t ^ (t >>> 16)) >>> 0;
    }
    if (!this.#s.some((w) => w !== 0)) this.#s[0] = 1;
  }

  /** Uniform 32-bit integer. */
  nextU32(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2] ^= s[0]!;
    s[3] ^= s[1]!;
    s[1] ^= s[2]!;
    s[0] ^= s[3]!;
    s[2] ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }

  /** Uniform in (0, 1): never 0, so log() is safe. */
  nextUniform(): number {
    return (this.nextU32() + 0.5) / 2 ** 32;
  }

  /** n standard normal values (Box–Muller, both outputs used). */
  normal(n: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
      const r = Math.sqrt(-2 * Math.log(this.nextUniform()));
      const a = 2 * Math.PI * this.nextUniform();
      out[i] = r * Math.cos(a);
      if (i + 1 < n) out[i + 1] = r * Math.sin(a);
    }
    return out;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
