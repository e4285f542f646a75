// Wan2.1 image-to-video (WanI2V.generate; goldens/README.md §8): the client's image, cropped to the
// render size's aspect ratio, becomes
// - the CLIP features of the image (the ViT's second-to-last block), which every layer's image
//   cross-attention attends to, the same for the conditional and the unconditional call;
// - y: the image bicubic-resized to the render size, followed by zero frames, VAE-encoded, behind the
//   4-channel first-frame mask (i2v-condition.ts), concatenated after the noise at every step.
// Classifier-free guidance changes only the text; the sampler runs on the 16 noise channels.
//
// The original picks the video size from the image's aspect ratio and stretches the image to it; here
// the request sets the size, so the image is first cropped (centre, nothing stretched) to that size's
// aspect ratio — the original's stretch when the image already has it. One frame out (an image edit)
// is a one-frame clip whose only latent frame is the given one: the model's rendering of the image.
import { cropToAspect, rgb24ToUnitRange } from "../models/frames.ts";
import { i2vCondition } from "../models/i2v-condition.ts";
import { seededNoise } from "../models/samplers.ts";
import type { CrossAttnKV, WanDiT } from "../models/wan-dit.ts";
import type { DitForwards } from "../models/wan-dit-graphed.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { renderSize } from "./native-size.ts";
import type { GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext } from "./pipeline.ts";
import { type Predict, clipForwards, denoiseClip, generateClips, requestSampler, requireImage } from "./wan-clips.ts";
import { wanCard } from "./wan-card.ts";

export class WanI2VPipeline implements Pipeline {
  readonly card: ModelCard;

  constructor(private readonly model: WanModel) {
    if (!model.clip || !model.vaeEncoder) throw new Error("an image-to-video model needs its CLIP image encoder and VAE encoder loaded");
    this.card = wanCard(model);
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const { dit, text, clip, backend: b } = this.model;
    const { kino } = this.model.checkpoint;
    const render = renderSize(this.card, req.width, req.height);
    const image = cropToAspect(requireImage(ctx, "image-to-video"), render.width, render.height);
    const durations: Record<string, number> = {};
    let started = performance.now();
    const pixels = b.upload(rgb24ToUnitRange(image), [3, image.height, image.width]);
    let cond: CrossAttnKV | null = null, uncond: CrossAttnKV | null = null;
    try {
      const features = await clip!.encode(pixels);
      try {
        durations.image_encode = (performance.now() - started) / 1000;
        started = performance.now();
        cond = await dit.crossAttnKV(await text.encode(req.prompt), undefined, features);
        if (req.guidance_scale > 1) uncond = await dit.crossAttnKV(await text.encode(req.negative_prompt || kino.negativePrompt), undefined, features);
      } finally {
        b.free(features);
      }
      durations.text_encode = (performance.now() - started) / 1000;
      const context = { cond: cond!, uncond };
      return await generateClips(this.model, req, ctx, durations, (clip, onStep) => this.#clip(req, ctx, pixels, clip, context, onStep));
    } finally {
      b.free(pixels);
      if (cond) dit.freeCross(cond);
      if (uncond) dit.freeCross(uncond);
    }
  }

  /** One clip's latent: y from the image, then the guided steps over noise ‖ y. */
  async #clip(req: GenerationRequest, ctx: RunContext, pixels: Tensor, clip: { seed: number; frames: number }, context: { cond: CrossAttnKV; uncond: CrossAttnKV | null }, onStep: (f: number) => void): Promise<Tensor> {
    const { dit, backend: b, vaeEncoder } = this.model;
    const render = renderSize(this.card, req.width, req.height);
    const y = await i2vCondition(b, vaeEncoder!, pixels, clip.frames, render.width, render.height);
    const x = b.alloc([dit.config.outDim, ...y.shape.slice(1)]);
    const noise = seededNoise(b, clip.seed);
    noise(x);
    const forwards = clipForwards(dit);
    try {
      return await denoiseClip(b, requestSampler(this.model, req, noise), { x, ...context, guidanceScale: req.guidance_scale, predict: conditionedPredict(dit, y, forwards), onStep, signal: ctx.signal });
    } finally {
      forwards.free();
      b.free(y);
    }
  }
}

/** The i2v DiT's call at every step: the noisy latent followed by y (mask and image latent), run by
 *  `forwards` (the clip's graph, or the DiT's eager forward). */
export function conditionedPredict(dit: WanDiT, y: Tensor, forwards: DitForwards = dit): Predict {
  return async (latent, t, cross) => {
    const input = dit.withCondition(latent, y);
    try {
      return await forwards.forward(input, t, cross);
    } finally {
      dit.backend.free(input);
    }
  };
}
