// The model card of a loaded Wan checkpoint, filled from its configs: the frame grid comes from the
// VAE strides (1 + 4k frames, sides a multiple of 8 × the DiT's spatial patch), defaults and limits
// from the kino settings (kino-config.ts), streaming from whether the DiT is chunked causal, and a
// flow_shift when the sampler's schedule takes one. What a request may send follows the DiT's kind:
// text-to-video takes text only (kino-tiny also one image, kino.first_frame_conditioning);
// image-to-video (Wan2.1 I2V) needs exactly one image; text-image-to-video (Wan2.2 TI2V) takes one or
// none.
import { shiftAdjustable } from "../models/kino-config.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { ModelCard } from "./pipeline.ts";

export function wanCard(model: WanModel): ModelCard {
  const { kino, dit, name } = model.checkpoint;
  const { temporal, spatial } = model.strides;
  const factor = spatial * Math.max(dit.config.patch[1], dit.config.patch[2]);
  const framesPerChunk = kino.causal ? kino.framesPerChunk ?? kino.chunkFrames * temporal : 0;
  const clamp = (v: number) => Math.max(factor, Math.round(v / factor) * factor);
  const kind = dit.config.kind;
  const tasks = kind === "i2v" ? ["i2v"] : kind === "ti2v" || kino.firstFrameConditioning ? ["t2v", "i2v"] : ["t2v"];
  return {
    name,
    tasks,
    supports_images: true,
    frame_multiple: temporal,
    frame_offset: 1,
    min_frames: 1,
    max_frames: kino.maxFrames,
    spatial_factor: factor,
    min_size: factor,
    max_size: kino.maxSize,
    max_pixels: kino.maxPixels,
    native_sizes: kino.nativeSizes,
    max_inference_steps: 100,
    defaults: {
      width: clamp(kino.width),
      height: clamp(kino.height),
      fps: kino.fps,
      num_frames: kino.numFrames,
      num_inference_steps: kino.steps,
      guidance_scale: kino.guidance,
    },
    max_references: { image: tasks.includes("i2v") ? 1 : 0, video: 0, audio: 0 },
    // a model with an image reader extends prompts from the given image unless asked not to
    extra_params: model.imageReader ? { prompt_extend: "boolean" } : {},
    ...(shiftAdjustable(kino) ? { flow_shift: kino.shift } : {}),
    supports_streaming: kino.causal,
    supports_prompt_updates: kino.causal,
    frames_per_chunk: framesPerChunk,
    default_transition_chunks: kino.defaultTransitionChunks,
  };
}
