// A client's image as a streaming model's start: the frame at the size the model renders, its latent
// (the stream's first chunk, kino.first_frame_conditioning), the prompt extended from what the
// model's image reader sees in it (prompt-extension.ts; a checkpoint with prompt_extender/), and
// whether the DiT's image branch reads the frame for that prompt.
import { rgb24ToPlanarCrop } from "../models/frames.ts";
import { extendPrompt, namesObject } from "../models/prompt-extension.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { Size } from "./native-size.ts";
import type { GenerationRequest, RgbImage } from "./pipeline.ts";

/** Bicubic resampling shrinks at most this much in one pass (Backend.resize). */
const MAX_SHRINK = 16;

/** The image as [3, 1, height, width] in [−1, 1]: cropped to the size's aspect, then resampled to it. */
export function firstFramePixels(model: WanModel, image: RgbImage, size: Size): Tensor {
  const b = model.backend;
  const crop = rgb24ToPlanarCrop(image.rgb, image.width, image.height, size.width, size.height);
  let x = b.upload(crop.data, [3, 1, crop.height, crop.width]);
  try {
    // passes of at most MAX_SHRINK where one would shrink further
    while (x.shape[2]! !== size.height || x.shape[3]! !== size.width) {
      const h = Math.max(size.height, Math.ceil(x.shape[2]! / MAX_SHRINK)), w = Math.max(size.width, Math.ceil(x.shape[3]! / MAX_SHRINK));
      const next = b.alloc([3, 1, h, w]);
      b.resize(next, x);
      b.free(x);
      x = next;
    }
    return x;
  } catch (err) {
    b.free(x);
    throw err;
  }
}

/** The image's pixels (firstFramePixels) as a first chunk's latent [zDim, 1, h, w]. */
export async function encodeFirstFrame(model: WanModel, pixels: Tensor): Promise<Tensor> {
  const encoder = model.vaeEncoder;
  if (!encoder) throw new Error("this model has no VAE encoder loaded (kino.first_frame_conditioning is off)");
  return encoder.encode(pixels);
}

/**
 * The prompt a request runs on: with an image (its pixels, firstFramePixels) and a model that reads
 * images, the request's prompt extended by what the image shows and the prompt does not say — unless
 * the request turned that off (extra_params.prompt_extend false). Otherwise the request's own prompt.
 */
export async function promptFor(model: WanModel, req: GenerationRequest, pixels: Tensor | undefined): Promise<string> {
  const reader = model.imageReader;
  if (!reader || !pixels || req.extra_params.prompt_extend === false) return req.prompt;
  const [, , h, w] = pixels.shape as [number, number, number, number];
  const seen = await reader.read(pixels.reshape([3, h, w]));
  return extendPrompt(req.prompt, seen, reader.config.wording);
}

/**
 * Whether the DiT's image branch (kino.image_features) reads the given frame for a stream on `prompt`:
 * not where the model's image reader finds the object named in it. The branch was trained to say from
 * the image what a prompt of the motion alone leaves out (a caption teacher: tools/train/NOTES.md, "The
 * image branch"); beside a prompt that already names the object it says it twice, and the stream rounds
 * the object off (shape 73.3 % without the branch against 68.3 % with it, held-out streams from an
 * image with the prompt extended; docs/MODEL.md). Without a reader every prompt takes the branch.
 */
export function imageBranchFor(model: WanModel, prompt: string): boolean {
  const reader = model.imageReader;
  return !reader || !namesObject(prompt, reader.config.wording);
}
