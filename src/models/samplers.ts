// Denoising update rules on device tensors, given the DiT's flow prediction v = ε − x0 at step i of a
// Schedule. Coefficients are computed on the host in float64; the tensors only see axpby.
//
// - Euler: the flow-matching ODE step x ← x + (σ_{i+1} − σ_i)·v.
// - Distilled (CausVid / Self-Forcing / LongLive): predict x0 = x − σ_i·v, then re-noise with fresh
//   Gaussian noise to the next level: x ← (1 − σ_{i+1})·x0 + σ_{i+1}·ε. No ODE, no history.
// - UniPC (Wan's default): multistep predictor-corrector, order 2, bh2, x0 prediction, lower order at
//   the final step — replays the goldens' FlowUniPCMultistepScheduler trajectory.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { SeededRandom } from "./random.ts";
import type { Schedule } from "./schedules.ts";

export type SamplerKind = "euler" | "distilled" | "unipc";
/** What the DiT outputs: the flow velocity v = ε − x0 (Wan), or the clean sample x0 (kino-tiny). */
export type PredictionType = "flow" | "sample";

export interface Sampler {
  readonly schedule: Schedule;
  /** Updates x in place from the model output v at step i (steps are taken in order 0, 1, ...). */
  step(i: number, x: Tensor, v: Tensor): void;
  /** Gives back any history tensors. */
  free(): void;
}

/** Fills a tensor with standard Gaussian noise (the pipeline's seeded generator). */
export type NoiseSource = (out: Tensor) => void;

/** Noise from a seed, made on the host: the same seed gives the same video on every backend. */
export function seededNoise(backend: Backend, seed: number): NoiseSource {
  const rng = new SeededRandom(seed);
  return (out) => backend.write(out, rng.normal(out.numel));
}

export function createSampler(kind: SamplerKind, backend: Backend, schedule: Schedule, noise: NoiseSource, prediction: PredictionType = "flow"): Sampler {
  const sampler = ((): Sampler => {
    switch (kind) {
      case "euler":
        return new EulerSampler(backend, schedule);
      case "distilled":
        return new DistilledSampler(backend, schedule, noise);
      case "unipc":
        return new UniPCSampler(backend, schedule);
    }
  })();
  return prediction === "sample" ? new FromSamplePrediction(backend, sampler) : sampler;
}

/**
 * A model that predicts x0 drives any flow sampler through the velocity it implies at step i:
 * v = (x − x0)/σ_i (exact: x = (1 − σ)x0 + σε). Guidance may be applied before this: it is linear
 * and both predictions share x.
 */
class FromSamplePrediction implements Sampler {
  constructor(private readonly backend: Backend, private readonly inner: Sampler) {}
  get schedule(): Schedule {
    return this.inner.schedule;
  }
  step(i: number, x: Tensor, prediction: Tensor): void {
    const sigma = this.inner.schedule.sigmas[i]!;
    this.backend.axpby(prediction, x, prediction, 1 / sigma, -1 / sigma);
    this.inner.step(i, x, prediction);
  }
  free(): void {
    this.inner.free();
  }
}

/** Classifier-free guidance in place into `cond`: uncond + g·(cond − uncond). */
export function applyGuidance(backend: Backend, cond: Tensor, uncond: Tensor, scale: number): void {
  backend.axpby(cond, cond, uncond, scale, 1 - scale);
}

class EulerSampler implements Sampler {
  constructor(private readonly backend: Backend, readonly schedule: Schedule) {}
  step(i: number, x: Tensor, v: Tensor): void {
    const { sigmas } = this.schedule;
    this.backend.axpby(x, x, v, 1, sigmas[i + 1]! - sigmas[i]!);
  }
  free(): void {}
}

class DistilledSampler implements Sampler {
  constructor(private readonly backend: Backend, readonly schedule: Schedule, private readonly noise: NoiseSource) {}
  step(i: number, x: Tensor, v: Tensor): void {
    const { sigmas } = this.schedule;
    const b = this.backend;
    b.axpby(x, x, v, 1, -sigmas[i]!); // x0
    const next = sigmas[i + 1]!;
    if (next <= 0) return;
    const eps = b.alloc(x.shape);
    this.noise(eps);
    b.axpby(x, x, eps, 1 - next, next);
    b.free(eps);
  }
  free(): void {}
}

/** λ = log(α) − log(σ) with α = 1 − σ (flow matching). */
const lambda = (sigma: number) => Math.log(1 - sigma) - Math.log(sigma);

/** UniPC's b vector for order p (bh2): b_k = φ_k(hh)·k! / B(h), hh = −h. */
function uniB(h: number, p: number): { b: number[]; hPhi1: number; Bh: number } {
  const hh = -h;
  const hPhi1 = Math.expm1(hh);
  const Bh = Math.expm1(hh);
  let hPhiK = hPhi1 / hh - 1;
  let factorial = 1;
  const b: number[] = [];
  for (let k = 1; k <= p; k++) {
    b.push((hPhiK * factorial) / Bh);
    factorial *= k + 1;
    hPhiK = hPhiK / hh - 1 / factorial;
  }
  return { b, hPhi1, Bh };
}

class UniPCSampler implements Sampler {
  /** x0 predictions of the last two steps, oldest first. */
  #m: Tensor[] = [];
  #last: Tensor | null = null;
  #order = 1;
  #lowerOrderNums = 0;

  constructor(private readonly backend: Backend, readonly schedule: Schedule) {}

  /** out = Σ c_k·t_k (at least two terms). */
  #combine(out: Tensor, terms: [number, Tensor][]): void {
    const [[c0, t0], [c1, t1], ...rest] = terms as [[number, Tensor], [number, Tensor], ...[number, Tensor][]];
    this.backend.axpby(out, t0, t1, c0, c1);
    for (const [c, t] of rest) this.backend.axpby(out, out, t, 1, c);
  }

  step(i: number, x: Tensor, v: Tensor): void {
    const b = this.backend;
    const { sigmas } = this.schedule;
    const steps = sigmas.length - 1;
    const mT = b.alloc(x.shape);
    b.axpby(mT, x, v, 1, -sigmas[i]!); // x0 prediction of this step
    if (i > 0 && this.#last) this.#correct(i, x, mT);
    this.#m.push(mT);
    if (this.#m.length > 2) b.free(this.#m.shift()!);
    this.#order = Math.min(2, steps - i, this.#lowerOrderNums + 1);
    this.#last ??= b.alloc(x.shape);
    b.axpby(this.#last, x, x, 1, 0);
    this.#predict(i, x);
    this.#lowerOrderNums = Math.min(this.#lowerOrderNums + 1, 2);
  }

  /** UniP: x ← next-level sample from the x0 history. */
  #predict(i: number, x: Tensor): void {
    const { sigmas } = this.schedule;
    const sT = sigmas[i + 1]!, s0 = sigmas[i]!;
    const m0 = this.#m[this.#m.length - 1]!;
    if (sT === 0) {
      // λ(0) = ∞: the update reduces to the x0 prediction (torch reaches it through ±inf)
      this.backend.axpby(x, m0, m0, 1, 0);
      return;
    }
    const aT = 1 - sT;
    const h = lambda(sT) - lambda(s0);
    const { hPhi1, Bh } = uniB(h, this.#order);
    const terms: [number, Tensor][] = [[sT / s0, x], [-aT * hPhi1, m0]];
    if (this.#order === 2) {
      const m1 = this.#m[this.#m.length - 2]!;
      const rk = (lambda(sigmas[i - 1]!) - lambda(s0)) / h;
      const rho = 0.5; // UniPC's fixed rhos_p for order 2
      terms[1]![0] += (aT * Bh * rho) / rk;
      terms.push([(-aT * Bh * rho) / rk, m1]);
    }
    this.#combine(x, terms);
  }

  /** UniC: refines the sample the previous predictor produced, using this step's x0 prediction mT. */
  #correct(i: number, x: Tensor, mT: Tensor): void {
    const { sigmas } = this.schedule;
    const sT = sigmas[i]!, s0 = sigmas[i - 1]!;
    const aT = 1 - sT;
    const h = lambda(sT) - lambda(s0);
    const order = this.#order;
    const { b, hPhi1, Bh } = uniB(h, order);
    const m0 = this.#m[this.#m.length - 1]!;
    let rhos: number[];
    let rk = 1;
    if (order === 1) rhos = [0.5];
    else {
      rk = (lambda(sigmas[i - 2]!) - lambda(s0)) / h;
      // solve [[1, 1], [rk, 1]]·ρ = b
      const det = 1 - rk;
      rhos = [(b[0]! - b[1]!) / det, (b[1]! - rk * b[0]!) / det];
    }
    const rhoLast = rhos[rhos.length - 1]!;
    const terms: [number, Tensor][] = [[sT / s0, this.#last!], [-aT * hPhi1 + aT * Bh * rhoLast, m0], [-aT * Bh * rhoLast, mT]];
    if (order === 2) {
      const m1 = this.#m[this.#m.length - 2]!;
      terms[1]![0] += (aT * Bh * rhos[0]!) / rk;
      terms.push([(-aT * Bh * rhos[0]!) / rk, m1]);
    }
    this.#combine(x, terms);
  }

  free(): void {
    this.backend.free(...this.#m, ...(this.#last ? [this.#last] : []));
    this.#m = [];
    this.#last = null;
  }
}
