// Flow-matching noise schedules: which sigma (noise level, x_t = (1 − σ)·x0 + σ·ε) each denoising
// step runs at, and the timestep (1000·σ) the DiT is given. Each builder reproduces the arithmetic of
// the code it stands for (float32 vs float64, truncation), because the DiT output moves measurably
// between t = 937 and 937.5 (goldens/README.md, DiT checks).

export interface Schedule {
  /** What the DiT receives at step i. */
  timesteps: number[];
  /** Noise level at step i, plus the level after the last step (0): length timesteps + 1. */
  sigmas: number[];
}

/** Wan/Self-Forcing timestep shift: σ' = shift·σ / (1 + (shift − 1)·σ). */
export function shiftSigma(sigma: number, shift: number): number {
  return (shift * sigma) / (1 + (shift - 1) * sigma);
}

const f32 = Math.fround;

/**
 * Wan's FlowUniPCMultistepScheduler.set_timesteps(steps, shift): sigmas from float32(0.999) (the
 * training grid's largest sigma) to 0 in float64, shifted; timesteps truncated to integers; sigmas
 * kept as float32. The first timestep is 999, not 1000.
 */
export function unipcSchedule(steps: number, shift: number): Schedule {
  const sigmaMax = f32(0.999);
  const sigmas: number[] = [], timesteps: number[] = [];
  for (let i = 0; i < steps; i++) {
    const s = shiftSigma(sigmaMax + i * (-sigmaMax / steps), shift); // numpy linspace arithmetic
    sigmas.push(f32(s));
    timesteps.push(Math.trunc(s * 1000));
  }
  sigmas.push(0);
  return { timesteps, sigmas };
}

/** Wan's DPM++ path (get_sampling_sigmas + retrieve_timesteps): starts at σ = 1 (timestep 1000). */
export function dpmSchedule(steps: number, shift: number): Schedule {
  const sigmas: number[] = [], timesteps: number[] = [];
  for (let i = 0; i < steps; i++) {
    const s = shiftSigma(1 + i * (-1 / steps), shift);
    sigmas.push(f32(s));
    timesteps.push(Math.trunc(s * 1000));
  }
  sigmas.push(0);
  return { timesteps, sigmas };
}

/**
 * Plain flow-matching Euler grid: σ_i = shift(1 − i/steps), float timesteps 1000·σ (the kino-tiny
 * trainer samples this way).
 */
export function eulerSchedule(steps: number, shift: number): Schedule {
  const sigmas = Array.from({ length: steps }, (_, i) => shiftSigma(1 - i / steps, shift));
  return { timesteps: sigmas.map((s) => s * 1000), sigmas: [...sigmas, 0] };
}

/**
 * Self-Forcing's warped step list: each listed timestep indexes the shifted 1000-entry float32 grid
 * of FlowMatchScheduler(shift, extra_one_step): `cat(t, [0])[1000 − list]`. [1000, 750, 500, 250]
 * with shift 5 → [1000, 937.5, 833.33, 625]. The DiT is fed these float values (not rounded).
 */
export function warpedSchedule(list: readonly number[], shift: number): Schedule {
  const grid = (index: number): number => {
    if (index >= 1000) return 0;
    const s = f32(f32(1) - f32(index / 1000)); // torch.linspace(1, 0, 1001)[index] in float32
    const shifted = f32(f32(shift * s) / f32(1 + f32((shift - 1) * s)));
    return f32(shifted * 1000);
  };
  const timesteps = list.map((t) => {
    if (!Number.isInteger(t) || t < 1 || t > 1000) throw new Error(`denoising step ${t} must be an integer in [1, 1000]`);
    return grid(1000 - t);
  });
  return { timesteps, sigmas: [...timesteps.map((t) => f32(t / 1000)), 0] };
}

/** A schedule from an explicit, already final timestep list (no warping): σ = t / 1000. */
export function explicitSchedule(list: readonly number[]): Schedule {
  return { timesteps: [...list], sigmas: [...list.map((t) => t / 1000), 0] };
}

/**
 * An n-step list in the style of a distilled model's default list (1000, 750, 500, 250 for n = 4):
 * evenly spaced from 1000, so asking a 4-step model for 2 or 8 steps stays on the same grid.
 */
export function evenStepList(n: number): number[] {
  return Array.from({ length: n }, (_, i) => Math.round(1000 * (1 - i / n)));
}
