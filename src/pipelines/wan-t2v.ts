// Text-to-video with a bidirectional Wan DiT (Wan2.1-T2V as released): encode the prompt (and the
// negative prompt for CFG), denoise the whole clip's latent with the configured sampler — UniPC by
// default, Euler or a distilled step list when the checkpoint says so — then decode it with the VAE.
// Cross-attention K/V are computed once per clip, not per step.
import { seededNoise } from "../models/samplers.ts";
import type { CrossAttnKV } from "../models/wan-dit.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext } from "./pipeline.ts";
import { wanCard } from "./wan-card.ts";
import { renderSize } from "./native-size.ts";
import { clipForwards, denoiseClip, generateClips, requestSampler } from "./wan-clips.ts";

export class WanT2VPipeline implements Pipeline {
  readonly card: ModelCard;

  constructor(private readonly model: WanModel) {
    this.card = wanCard(model);
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const { dit, text } = this.model;
    const { kino } = this.model.checkpoint;
    const durations: Record<string, number> = { text_encode: 0 };
    const started = performance.now();
    const cond = await dit.crossAttnKV(await text.encode(req.prompt));
    const uncond = req.guidance_scale > 1 ? await dit.crossAttnKV(await text.encode(req.negative_prompt || kino.negativePrompt)) : null;
    durations.text_encode = (performance.now() - started) / 1000;
    try {
      return await generateClips(this.model, req, ctx, durations, (clip, onStep) => this.#denoise(req, clip.seed, clip.frames, cond, uncond, ctx, onStep));
    } finally {
      dit.freeCross(cond);
      if (uncond) dit.freeCross(uncond);
    }
  }

  async #denoise(req: GenerationRequest, seed: number, numFrames: number, cond: CrossAttnKV, uncond: CrossAttnKV | null, ctx: RunContext, onStep: (fraction: number) => void): Promise<Tensor> {
    const { dit, backend: b, strides } = this.model;
    const latentFrames = Math.floor((numFrames - 1) / strides.temporal) + 1;
    const render = renderSize(this.card, req.width, req.height);
    const shape = [dit.config.inDim, latentFrames, render.height / strides.spatial, render.width / strides.spatial];
    const noise = seededNoise(b, seed);
    const x = b.alloc(shape);
    noise(x);
    const forwards = clipForwards(dit);
    const predict = (latent: Tensor, t: number, cross: CrossAttnKV) => forwards.forward(latent, t, cross);
    try {
      return await denoiseClip(b, requestSampler(this.model, req, noise), { x, cond, uncond, guidanceScale: req.guidance_scale, predict, onStep, signal: ctx.signal });
    } finally {
      forwards.free();
    }
  }
}
