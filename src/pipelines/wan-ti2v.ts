// Wan2.2 TI2V-5B: text-to-video and image-to-video in one model on the Wan2.2 VAE's 48 channels
// (WanTI2V.t2v / WanTI2V.i2v; goldens/README.md §11).
// - No image: the whole latent is denoised, every token at the step's t (the original's per-token t
//   is then one value, which the scalar forward computes identically).
// - An image: scaled to cover the render size with PIL's Lanczos (two 8-bit passes, on the host:
//   pil-lanczos.ts), centre-cropped, VAE-encoded alone to z [48, 1, h, w]; z replaces latent frame 0
//   before the first step and after every sampler step, and that frame's tokens run at t = 0
//   (ti2v-condition.ts). The decoded frame 0 is the image through the VAE.
// - One frame out from an image (an image edit) has no frame left to generate under that scheme, so
//   it is an image-to-image: z noised to the middle of the schedule, then the remaining steps over
//   the whole latent with the prompt (as kino-tiny edits).
import { seededNoise } from "../models/samplers.ts";
import { firstFrameLatent, firstFrameTimesteps, injectFirstFrame } from "../models/ti2v-condition.ts";
import type { CrossAttnKV, WanDiT } from "../models/wan-dit.ts";
import type { DitForwards } from "../models/wan-dit-graphed.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { type Size, renderSize } from "./native-size.ts";
import type { GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext } from "./pipeline.ts";
import { type GuidedRun, clipForwards, denoiseClip, generateClips, requestSampler } from "./wan-clips.ts";
import { wanCard } from "./wan-card.ts";

export class WanTI2VPipeline implements Pipeline {
  readonly card: ModelCard;

  constructor(private readonly model: WanModel) {
    if (!model.vaeEncoder) throw new Error("a text-image-to-video model needs its VAE encoder loaded");
    this.card = wanCard(model);
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const { dit, text, backend: b } = this.model;
    const { kino } = this.model.checkpoint;
    const render = renderSize(this.card, req.width, req.height);
    const image = ctx.referenceImages?.[0];
    const durations: Record<string, number> = {};
    let started = performance.now();
    let z: Tensor | null = null, cond: CrossAttnKV | null = null, uncond: CrossAttnKV | null = null;
    try {
      if (image) {
        z = await firstFrameLatent(b, this.model.vaeEncoder!, image, render.width, render.height);
        durations.image_encode = (performance.now() - started) / 1000;
        started = performance.now();
      }
      cond = await dit.crossAttnKV(await text.encode(req.prompt));
      if (req.guidance_scale > 1) uncond = await dit.crossAttnKV(await text.encode(req.negative_prompt || kino.negativePrompt));
      durations.text_encode = (performance.now() - started) / 1000;
      const context = { cond, uncond }, given = z;
      return await generateClips(this.model, req, ctx, durations, (clip, onStep) => this.#clip(req, ctx, render, given, clip, context, onStep));
    } finally {
      if (z) b.free(z);
      if (cond) dit.freeCross(cond);
      if (uncond) dit.freeCross(uncond);
    }
  }

  async #clip(req: GenerationRequest, ctx: RunContext, render: Size, z: Tensor | null, clip: { seed: number; frames: number }, context: { cond: CrossAttnKV; uncond: CrossAttnKV | null }, onStep: (f: number) => void): Promise<Tensor> {
    const { dit, backend: b, strides } = this.model;
    const latentFrames = Math.floor((clip.frames - 1) / strides.temporal) + 1;
    const x = b.alloc([dit.config.outDim, latentFrames, render.height / strides.spatial, render.width / strides.spatial]);
    const noise = seededNoise(b, clip.seed);
    noise(x);
    const sampler = requestSampler(this.model, req, noise);
    const forwards = clipForwards(dit);
    const run: GuidedRun = { x, ...context, guidanceScale: req.guidance_scale, predict: (latent, t, cross) => forwards.forward(latent, t, cross), onStep, signal: ctx.signal };
    if (z && latentFrames > 1) {
      Object.assign(run, firstFrameRun(dit, x, z, forwards));
    } else if (z) {
      // one frame from an image: start from it, noised to the middle of the schedule
      run.start = Math.floor(sampler.schedule.timesteps.length / 2);
      const sigma = sampler.schedule.sigmas[run.start]!;
      b.axpby(x, z, x, 1 - sigma, sigma);
    }
    try {
      return await denoiseClip(b, sampler, run);
    } finally {
      forwards.free();
    }
  }
}

/**
 * Image-to-video on TI2V: z written into frame 0 of the noise x now, that frame's tokens at t = 0 in
 * every call (run by `forwards`: the clip's graph, or the DiT's eager forward), and z written back
 * after every sampler step.
 */
export function firstFrameRun(dit: WanDiT, x: Tensor, z: Tensor, forwards: DitForwards = dit): Pick<GuidedRun, "predict" | "afterStep"> {
  injectFirstFrame(dit.backend, x, z);
  return {
    predict: (latent, t, cross) => forwards.forwardPerToken(latent, firstFrameTimesteps(dit.grid(latent.shape), t), cross),
    afterStep: (latent) => injectFirstFrame(dit.backend, latent, z),
  };
}
