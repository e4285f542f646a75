// What the bidirectional pipelines (wan-t2v.ts, wan-i2v.ts, wan-ti2v.ts) share: the guided sampling loop
// as Wan's generate() runs it — a conditional and an unconditional forward on the same input per
// step, combined as uncond + g·(cond − uncond), then the sampler's step — and the per-clip
// bookkeeping (one clip for a video, one single-frame clip per image, progress, stage timings,
// VAE decode at the requested size).
import { ditGraphsWanted } from "../models/dit-graph.ts";
import { scheduleFor } from "../models/kino-config.ts";
import { type NoiseSource, type Sampler, applyGuidance, createSampler } from "../models/samplers.ts";
import type { CrossAttnKV, WanDiT } from "../models/wan-dit.ts";
import { GraphedForwards } from "../models/wan-dit-graphed.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { GenerationRequest, GenerationResult, RunContext } from "./pipeline.ts";
import { clipsOf, decodeFrames, frameFormatFor, tick } from "./wan-streaming.ts";

/** Share of a clip's progress bar given to decoding (the rest is conditioning and denoising). */
const DECODE_SHARE = 0.1;

/** One DiT call: the flow prediction for x at timestep t under one conditioning (the caller frees it). */
export type Predict = (x: Tensor, t: number, cross: CrossAttnKV) => Promise<Tensor>;

export interface GuidedRun {
  /** The latent, denoised in place. */
  x: Tensor;
  /** The step the run starts at (0: from pure noise), and the one it stops before (default: the end). */
  start?: number;
  stop?: number;
  cond: CrossAttnKV;
  /** null: no guidance (scale ≤ 1). */
  uncond: CrossAttnKV | null;
  guidanceScale: number;
  predict: Predict;
  /** After every sampler step (TI2V puts its first frame back). */
  afterStep?: (x: Tensor, step: number) => void | Promise<void>;
  onStep?(fraction: number): void;
  signal?: AbortSignal;
}

/** A clip's DiT forwards: one recorded graph launched for every step when DiT graphs are on
 *  (KINO_DIT_GRAPHS, dit-graph.ts), else the eager forwards. The caller frees it at the clip's end. */
export function clipForwards(dit: WanDiT): GraphedForwards {
  return new GraphedForwards(dit, { graphs: ditGraphsWanted() });
}

/** The request's sampler: its steps and flow_shift on the model's schedule (the caller frees it). */
export function requestSampler(model: WanModel, req: GenerationRequest, noise: NoiseSource): Sampler {
  const { kino } = model.checkpoint;
  return createSampler(kino.sampler, model.backend, scheduleFor(kino, req.num_inference_steps, req.flow_shift), noise, kino.prediction);
}

/** The steps of `sampler`'s schedule from run.start on, guided as Wan guides: uncond + g·(cond − uncond). */
export async function sampleGuided(b: Backend, sampler: Sampler, run: GuidedRun): Promise<void> {
  const start = run.start ?? 0, { timesteps } = sampler.schedule, steps = Math.min(run.stop ?? Infinity, timesteps.length);
  for (let i = start; i < steps; i++) {
    const t = timesteps[i]!;
    const v = await run.predict(run.x, t, run.cond);
    try {
      if (run.uncond) {
        const vu = await run.predict(run.x, t, run.uncond);
        applyGuidance(b, v, vu, run.guidanceScale);
        b.free(vu);
      }
      sampler.step(i, run.x, v);
    } finally {
      b.free(v);
    }
    await run.afterStep?.(run.x, i);
    run.onStep?.((i + 1 - start) / (steps - start));
    await tick();
    run.signal?.throwIfAborted();
  }
}

/**
 * sampleGuided over a clip's latent, which the caller gets back denoised; the sampler is freed either
 * way, and the latent too when the run fails.
 */
export async function denoiseClip(b: Backend, sampler: Sampler, run: GuidedRun): Promise<Tensor> {
  try {
    await sampleGuided(b, sampler, run);
    return run.x;
  } catch (err) {
    b.free(run.x);
    throw err;
  } finally {
    sampler.free();
  }
}

/** Makes one clip's latent [C, T, h, w] (the caller decodes and frees it). */
export type RenderClip = (clip: { seed: number; frames: number }, onStep: (fraction: number) => void) => Promise<Tensor>;

/** Every clip of the request rendered, decoded and resampled to the requested size. */
export async function generateClips(model: WanModel, req: GenerationRequest, ctx: RunContext, durations: Record<string, number>, render: RenderClip): Promise<GenerationResult> {
  const { vae, backend: b } = model;
  durations.denoise = 0;
  durations.decode = 0;
  const clips = clipsOf(req), frames: Uint8Array[] = [];
  for (const [i, clip] of clips.entries()) {
    const progress = (f: number, stage: string) => ctx.onProgress({ fraction: (i + f) / clips.length, stage });
    let started = performance.now();
    const latent = await render(clip, (f) => progress(f * (1 - DECODE_SHARE), "denoise"));
    durations.denoise += (performance.now() - started) / 1000;
    started = performance.now();
    progress(1 - DECODE_SHARE, "decode");
    vae.reset();
    try {
      frames.push(...(await decodeFrames(model, latent, req, frameFormatFor(req))));
    } finally {
      b.free(latent);
      vae.reset();
    }
    durations.decode += (performance.now() - started) / 1000;
    progress(1, "decode");
  }
  return {
    format: frameFormatFor(req),
    frames,
    width: req.width,
    height: req.height,
    fps: req.fps,
    stage_durations: durations,
    peak_memory_mb: Math.round(b.memory().peak / 2 ** 20),
  };
}

/** The request's only image, which an image pipeline cannot run without (admission refuses such a request first). */
export function requireImage(ctx: RunContext, what: string) {
  const image = ctx.referenceImages?.[0];
  if (!image) throw new Error(`${what} needs an image reference`);
  return image;
}
