// Text-to-video with a bidirectional Wan DiT (Wan2.1-T2V as released): encode the prompt (and the
// negative prompt for CFG), denoise the whole clip's latent with the configured sampler — UniPC by
// default, Euler or a distilled step list when the checkpoint says so — then decode it with the VAE.
// Cross-attention K/V are computed once per clip, not per step.
import { scheduleFor } from "../models/kino-config.ts";
import { applyGuidance, createSampler, seededNoise } from "../models/samplers.ts";
import type { CrossAttnKV } from "../models/wan-dit.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext } from "./pipeline.ts";
import { wanCard } from "./wan-card.ts";
import { renderSize } from "./native-size.ts";
import { clipsOf, decodeFrames, frameFormatFor, tick } from "./wan-streaming.ts";

/** Share of a clip's progress bar given to decoding (the rest is the denoising steps). */
const DECODE_SHARE = 0.1;

export class WanT2VPipeline implements Pipeline {
  readonly card: ModelCard;

  constructor(private readonly model: WanModel) {
    this.card = wanCard(model);
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const { dit, text } = this.model;
    const { kino } = this.model.checkpoint;
    const durations = { text_encode: 0, denoise: 0, decode: 0 };
    let started = performance.now();
    const cond = await dit.crossAttnKV(await text.encode(req.prompt));
    const uncond = req.guidance_scale > 1 ? await dit.crossAttnKV(await text.encode(req.negative_prompt || kino.negativePrompt)) : null;
    durations.text_encode = (performance.now() - started) / 1000;
    try {
      const clips = clipsOf(req);
      const frames: Uint8Array[] = [];
      for (const [i, clip] of clips.entries()) {
        const progress = (f: number, stage: string) => ctx.onProgress({ fraction: (i + f) / clips.length, stage });
        started = performance.now();
        const latent = await this.#denoise(req, clip.seed, clip.frames, cond, uncond, ctx, (f) => progress(f * (1 - DECODE_SHARE), "denoise"));
        durations.denoise += (performance.now() - started) / 1000;
        started = performance.now();
        progress(1 - DECODE_SHARE, "decode");
        frames.push(...(await this.#decode(latent, req)));
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
        peak_memory_mb: Math.round(this.model.backend.memory().peak / 2 ** 20),
      };
    } finally {
      dit.freeCross(cond);
      if (uncond) dit.freeCross(uncond);
    }
  }

  async #denoise(req: GenerationRequest, seed: number, numFrames: number, cond: CrossAttnKV, uncond: CrossAttnKV | null, ctx: RunContext, onStep: (fraction: number) => void): Promise<Tensor> {
    const { dit, backend: b, strides } = this.model;
    const { kino } = this.model.checkpoint;
    const latentFrames = Math.floor((numFrames - 1) / strides.temporal) + 1;
    const render = renderSize(this.card, req.width, req.height);
    const shape = [dit.config.inDim, latentFrames, render.height / strides.spatial, render.width / strides.spatial];
    const noise = seededNoise(b, seed);
    const x = b.alloc(shape);
    noise(x);
    const schedule = scheduleFor(kino, req.num_inference_steps, req.flow_shift);
    const sampler = createSampler(kino.sampler, b, schedule, noise, kino.prediction);
    try {
      for (const [i, t] of schedule.timesteps.entries()) {
        const v = await dit.forward(x, t, cond);
        if (uncond) {
          const vu = await dit.forward(x, t, uncond);
          applyGuidance(b, v, vu, req.guidance_scale);
          b.free(vu);
        }
        sampler.step(i, x, v);
        b.free(v);
        onStep((i + 1) / schedule.timesteps.length);
        await tick();
        ctx.signal.throwIfAborted();
      }
      return x;
    } catch (err) {
      b.free(x);
      throw err;
    } finally {
      sampler.free();
    }
  }

  async #decode(latent: Tensor, req: GenerationRequest): Promise<Uint8Array[]> {
    const { vae, backend: b } = this.model;
    vae.reset();
    try {
      return await decodeFrames(this.model, latent, req, frameFormatFor(req));
    } finally {
      b.free(latent);
      vae.reset();
    }
  }
}
