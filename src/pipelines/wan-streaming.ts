// Streaming (chunked causal) Wan generation: the video is produced chunk by chunk — sample the chunk's
// latent frames from noise with the cached context of the earlier chunks, run the t = 0 context pass
// that writes the clean chunk into the KV cache, decode its frames with the VAE's streaming cache —
// and each chunk's conditioning is asked for at its boundary (ctx.conditioningFor), so prompt
// transitions interpolate the conditioning vector. The cross-attention K/V are recomputed only when
// the conditioning changes. Whole clips from a causal model (`generate`) run the same loop.
//
// A model with kino.continuation_strength < 1 starts each chunk after the first from the previous
// chunk's clean latent, noised to the sigma of the step it enters the schedule at, rather than from
// pure noise (kino-tiny: the color of a prompt transition then moves chunk by chunk instead of
// overshooting, and a continuing chunk costs half the steps); a chunk that cuts to a new prompt at
// once (ctx.promptCut) starts from noise like the first — and with kino.sink_reanchor_on_cut it
// becomes the KV cache's sink, in place of the stream's first frames.
//
// A model trained to start from a client's image (kino.first_frame_conditioning; its chunks are one
// latent frame) takes the image's latent as its first chunk: cropped to the render size's aspect,
// resampled, VAE-encoded, committed to the cache by the context pass and decoded as frame 0 without a
// denoising step, every later chunk continuing from it. A single-frame output from an image (an image
// edit) instead starts from that latent noised as a continuing chunk starts from its predecessor. A DiT
// with kino's latent-patch image branch (dit-kind.ts) also reads the image's latent patches in every
// cross-attention, in both guidance streams (as Wan2.1 I2V's unconditional pass keeps the image). A
// model with an image reader (prompt_extender/) first extends the request's prompt with what the image
// shows and the prompt does not say (first-frame.ts).
//
// With classifier-free guidance the conditional and the unconditional stream each keep their own KV
// cache, filled by their own context pass over the same guided clean chunk (kino-tiny's recipe,
// tools/train/export.py "cfg"); both streams run as one batched forward (CausalWanDiT batch 2), so
// the linear layers see twice the rows per weight read instead of two half-size passes.
//
// Video frames leave the backend as I420 (FrameFormat): the VAE's output is converted there and read
// back at 1.5 bytes a pixel instead of 12 (f32 RGB), and the H.264 encoder takes the planes as they
// are — the same bytes its own RGB24 conversion makes. Images are read back as RGB24. Where the backend
// can (readback-overlap.ts, opt-in), a chunk's readback runs while the next chunk's steps are enqueued.
import { ditGraphsWanted } from "../models/dit-graph.ts";
import { videoToRgb24 } from "../models/frames.ts";
import { continuationStart, scheduleFor } from "../models/kino-config.ts";
import { applyGuidance, createSampler, seededNoise } from "../models/samplers.ts";
import { CausalWanDiT } from "../models/wan-dit-causal.ts";
import type { CrossAttnKV } from "../models/wan-dit.ts";
import { latentPatches } from "../models/wan-dit-image.ts";
import { encodeFirstFrame, firstFramePixels, imageBranchFor, promptFor } from "./first-frame.ts";
import { renderSize, type Size } from "./native-size.ts";
import { type PendingChunk, readbackOverlapWanted, startReadback } from "./readback-overlap.ts";
import type { WanModel } from "../models/wan-model.ts";
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type {
  Conditioning, FrameFormat, GenerationChunk, GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext, StreamContext,
} from "./pipeline.ts";
import { wanCard } from "./wan-card.ts";

/** Self-Forcing's window: 21 latent frames (the clip length it was trained on). */
const DEFAULT_WINDOW_FRAMES = 21;

/** Lets IPC messages (an abort) in between steps: the wasm kernels never yield on their own. */
export const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The Wan VAE's output range, which frame conversions map to 0..255. */
const VAE_RANGE = [-1, 1] as const;

/** How a request's frames are handed on: images as RGB24 (the image codecs take RGB), video as `video`. */
export function frameFormatFor(req: GenerationRequest, video: FrameFormat = "i420"): FrameFormat {
  return req.output === "image" ? "rgb24" : video;
}

/** What one request renders: a clip, or for images one single-frame clip per output (seed, seed + 1, ...). */
export function clipsOf(req: GenerationRequest): { seed: number; frames: number }[] {
  if (req.output !== "image") return [{ seed: req.seed, frames: req.num_frames }];
  return Array.from({ length: req.num_frames }, (_, i) => ({ seed: req.seed + i, frames: 1 }));
}

/** Where a run's chunks take their conditioning from, whether a chunk cuts to a new prompt, and the image it
 *  starts from: its pixels at the render size (firstFramePixels; owned by the caller) and whether the
 *  DiT's image branch reads it (imageBranchFor). */
interface ChunkSource {
  conditioningFor(index: number): Conditioning;
  promptCut(index: number): boolean;
  firstFrame?: { pixels: Tensor; imageBranch: boolean };
}

interface ChunkRun {
  chunks: AsyncGenerator<GenerationChunk>;
  durations: { denoise: number; decode: number };
}

export interface WanStreamingOptions {
  /** The format of video frames, streamed or whole (default i420, what the H.264 encoder takes); rgb24
   *  reads them back as RGB, for a consumer that needs it. */
  videoFormat?: FrameFormat;
}

export class WanStreamingPipeline implements Pipeline {
  readonly card: ModelCard;
  readonly streamFormat: FrameFormat;

  constructor(private readonly model: WanModel, options: WanStreamingOptions = {}) {
    this.card = wanCard(model);
    this.streamFormat = options.videoFormat ?? "i420";
    const { kino } = model.checkpoint;
    const first = 1 + model.strides.temporal * (kino.chunkFrames - 1);
    if (kino.firstChunkFrames !== null && kino.firstChunkFrames !== first) {
      throw new Error(`kino.first_chunk_frames ${kino.firstChunkFrames} ≠ ${first}, what ${kino.chunkFrames} latent frames decode to`);
    }
    if (this.card.frames_per_chunk !== model.strides.temporal * kino.chunkFrames) {
      throw new Error(`kino.frames_per_chunk ${this.card.frames_per_chunk} ≠ ${model.strides.temporal * kino.chunkFrames}, what a chunk of ${kino.chunkFrames} latent frames decodes to`);
    }
  }

  async encodePrompt(prompt: string): Promise<Conditioning> {
    return this.model.text.encode(prompt);
  }

  async *stream(req: GenerationRequest, ctx: StreamContext): AsyncIterable<GenerationChunk> {
    const source: ChunkSource = { conditioningFor: (i) => ctx.conditioningFor(i), promptCut: (i) => ctx.promptCut?.(i) ?? false };
    yield* this.#run(req, ctx, source, req.num_frames).chunks;
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const started = performance.now();
    const image = this.model.vaeEncoder ? ctx.referenceImages?.[0] : undefined;
    // cropped and resampled once: the image reader and every clip's first chunk take the same pixels
    const firstFrame = image && firstFramePixels(this.model, image, renderSize(this.card, req.width, req.height));
    const frames: Uint8Array[] = [];
    const durations = { denoise: 0, decode: 0 };
    let prompt: string, textEncode: number;
    try {
      prompt = await promptFor(this.model, req, firstFrame);
      const cond = await this.model.text.encode(prompt);
      const start = firstFrame && { pixels: firstFrame, imageBranch: imageBranchFor(this.model, prompt) };
      textEncode = (performance.now() - started) / 1000;
      const clips = clipsOf(req);
      for (const [i, clip] of clips.entries()) {
        const sub: RunContext = { signal: ctx.signal, onProgress: (p) => ctx.onProgress({ ...p, fraction: (i + p.fraction) / clips.length }) };
        const run = this.#run({ ...req, seed: clip.seed }, sub, { conditioningFor: () => cond, promptCut: () => false, firstFrame: start }, clip.frames);
        for await (const chunk of run.chunks) frames.push(...chunk.frames);
        durations.denoise += run.durations.denoise;
        durations.decode += run.durations.decode;
      }
    } finally {
      if (firstFrame) this.model.backend.free(firstFrame);
    }
    return {
      format: frameFormatFor(req, this.streamFormat),
      frames,
      width: req.width,
      height: req.height,
      fps: req.fps,
      stage_durations: { text_encode: textEncode, ...durations },
      peak_memory_mb: Math.round(this.model.backend.memory().peak / 2 ** 20),
      ...(prompt !== req.prompt ? { revised_prompt: prompt } : {}),
    };
  }

  /** Cross-attention K/V of a conditioning (and image features), stacked over the unconditional one when guided. */
  async #crossFor(cond: Conditioning, uncond: CrossAttnKV | null, image: Float32Array | undefined): Promise<CrossAttnKV> {
    const { dit } = this.model;
    const c = await dit.crossAttnKV(cond, undefined, image);
    if (!uncond) return c;
    try {
      return dit.stackCross([c, uncond]);
    } finally {
      dit.freeCross(c);
    }
  }

  #run(req: GenerationRequest, ctx: RunContext, source: ChunkSource, totalFrames: number): ChunkRun {
    const durations = { denoise: 0, decode: 0 };
    return { chunks: this.#chunks(req, ctx, source, totalFrames, durations), durations };
  }

  async *#chunks(req: GenerationRequest, ctx: RunContext, source: ChunkSource, totalFrames: number, durations: ChunkRun["durations"]): AsyncGenerator<GenerationChunk> {
    const { dit, vae, backend: b, strides, text } = this.model;
    const { kino } = this.model.checkpoint;
    const N = kino.chunkFrames, zDim = dit.config.inDim;
    const render = renderSize(this.card, req.width, req.height);
    const [h, w] = [render.height / strides.spatial, render.width / strides.spatial];
    const window = kino.windowFrames ?? Math.max(DEFAULT_WINDOW_FRAMES, N + kino.sinkFrames);
    const noise = seededNoise(b, req.seed);
    const schedule = scheduleFor(kino, req.num_inference_steps, req.flow_shift);
    const steps = schedule.timesteps.length;
    const continueAt = continuationStart(kino, steps);
    const firstFrames = 1 + strides.temporal * (N - 1), perChunk = strides.temporal * N;
    const totalChunks = 1 + Math.max(0, Math.ceil((totalFrames - firstFrames) / perChunk));
    const guided = req.guidance_scale > 1;
    const format = frameFormatFor(req, this.streamFormat);
    const overlap = format === "i420" && readbackOverlapWanted(b);
    // chunk i on its way back from the device while chunk i + 1 is enqueued (overlap only)
    let pending: PendingChunk | null = null;
    const causal = new CausalWanDiT(dit, {
      chunkFrames: N, windowFrames: window, sinkFrames: kino.sinkFrames, height: h, width: w, batch: guided ? 2 : 1, graphs: ditGraphsWanted(),
      reach: kino.selfAttentionReach,
    });
    // cross: what the forward attends to (with guidance: [cond, uncond] stacked)
    let cross: CrossAttnKV | null = null, crossOf: Conditioning | null = null, uncond: CrossAttnKV | null = null;
    // the last chunk's clean latent, which the next chunk continues (kept only when continueAt > 0)
    let previous: Tensor | null = null;
    let given: Tensor | null = null;
    // the image branch's features of the given frame (a DiT with kino's latent-patch branch only)
    let image: Float32Array | undefined;
    vae.reset();
    try {
      if (source.firstFrame) given = await encodeFirstFrame(this.model, source.firstFrame.pixels);
      if (given && source.firstFrame?.imageBranch && dit.config.imageFeatures === "latent_patches") image = latentPatches(await b.download(given), given.shape, dit.config.patch);
      if (guided) uncond = await dit.crossAttnKV(await text.encode(req.negative_prompt || kino.negativePrompt), undefined, image);
      let produced = 0;
      for (let index = 0; produced < totalFrames; index++) {
        ctx.signal.throwIfAborted();
        const cond = source.conditioningFor(index);
        const cut = index > 0 && source.promptCut(index);
        // a given first chunk is taken as it is; an image edit starts from it as a chunk continues
        const from = index === 0 ? given : cut ? null : previous;
        const start = index === 0 && given ? (req.output === "image" ? continueAt || Math.floor(steps / 2) : steps) : from ? continueAt : 0;
        if (!cross || !crossOf || !sameValues(cond, crossOf)) {
          if (cross) dit.freeCross(cross);
          cross = null;
          cross = await this.#crossFor(cond, uncond, image);
          crossOf = cond.slice();
        }
        const context: CrossAttnKV = cross;
        const started = performance.now();
        const x = b.alloc([zDim, N, h, w]);
        let kept = false;
        noise(x);
        if (from && start > 0) b.axpby(x, from, x, 1 - schedule.sigmas[start]!, schedule.sigmas[start]!);
        const sampler = createSampler(kino.sampler, b, schedule, noise, kino.prediction);
        try {
          for (let i = start; i < steps; i++) {
            const v = (await causal.forwardChunk(x, schedule.timesteps[i]!, context))!;
            // v is [2, ...x.shape] with guidance: the cond half is guided in place
            const vc = guided ? v.view(x.shape, 0) : v;
            if (guided) applyGuidance(b, vc, v.view(x.shape, x.numel), req.guidance_scale);
            sampler.step(i, x, vc);
            b.free(v);
            ctx.onProgress({ fraction: Math.min(1, (index + (i + 1 - start) / (steps - start)) / totalChunks), stage: "denoise" });
            await tick();
            ctx.signal.throwIfAborted();
            if (pending?.settled) {
              const landed = pending;
              pending = null;
              yield await landed.chunk();
            }
          }
          // the context pass: the clean chunk at t = 0 writes its keys and values into the cache
          await causal.forwardChunk(x, 0, context, true, cut && kino.sinkReanchorOnCut);
          // the previous chunk goes out before this one's readback starts
          if (pending) {
            const previousChunk = pending;
            pending = null;
            yield await previousChunk.chunk();
          }
          const decodeStart = performance.now();
          durations.denoise += (decodeStart - started) / 1000;
          let chunk: GenerationChunk | null = null;
          if (overlap && index > 0) {
            // enqueued, not awaited: the frames come back while the next chunk's steps are enqueued
            const { yuv, frameBytes, T } = await decodeToI420(this.model, x, req);
            const keep = Math.min(T, totalFrames - produced);
            pending = startReadback(b, yuv, index, format, frameBytes, keep);
            produced += keep;
          } else {
            const frames = await decodeFrames(this.model, x, req, format);
            const keep = frames.slice(0, totalFrames - produced);
            produced += keep.length;
            chunk = { generation_chunk_index: index, format, frames: keep };
          }
          durations.decode += (performance.now() - decodeStart) / 1000;
          if (continueAt > 0) {
            if (previous) b.free(previous);
            previous = x;
            kept = true;
          }
          if (chunk) yield chunk;
        } finally {
          sampler.free();
          if (!kept) b.free(x);
        }
      }
      if (pending) {
        const last = pending;
        pending = null;
        yield await last.chunk();
      }
    } finally {
      // a run that stops with a chunk in flight waits for its copy before freeing what the run holds
      await pending?.drain();
      if (cross) dit.freeCross(cross);
      if (uncond) dit.freeCross(uncond);
      if (previous) b.free(previous);
      if (given) b.free(given);
      causal.free();
      vae.reset();
    }
  }
}

/**
 * Decodes latent frames (continuing the VAE's stream) into frames of `size` in `format`: resampled on
 * the backend when the model rendered another size; i420 converted there too and read back as bytes,
 * rgb24 read back as floats and converted here.
 */
export async function decodeFrames(model: WanModel, latent: Tensor, size: Size, format: FrameFormat): Promise<Uint8Array[]> {
  const b = model.backend;
  const video = await decodeToSize(model, latent, size);
  try {
    if (format === "i420") return await readI420(b, video);
    const [, T, H, W] = video.shape as [number, number, number, number];
    return videoToRgb24(await b.download(video), T, H, W);
  } finally {
    b.free(video);
  }
}

/** The VAE's frames [3, T, H, W] of latent frames, resampled on the backend to `size` if needed. */
async function decodeToSize(model: WanModel, latent: Tensor, size: Size): Promise<Tensor> {
  const b = model.backend;
  const video = await model.vae.decode(latent);
  const [C, T, H, W] = video.shape as [number, number, number, number];
  if (H === size.height && W === size.width) return video;
  try {
    const out = b.alloc([C, T, size.height, size.width]);
    b.resize(out, video);
    return out;
  } finally {
    b.free(video);
  }
}

/** Decodes latent frames into I420 frames on the backend, enqueued only: the caller reads `yuv`
 *  [T, frameBytes] back (and frees it). */
async function decodeToI420(model: WanModel, latent: Tensor, size: Size): Promise<{ yuv: Tensor; T: number; frameBytes: number }> {
  const b = model.backend;
  const video = await decodeToSize(model, latent, size);
  try {
    const [, T, H, W] = video.shape as [number, number, number, number];
    const frameBytes = (H * W * 3) / 2;
    const yuv = b.alloc([T, frameBytes], "u8");
    b.rgbToYuv420(yuv, video, VAE_RANGE);
    return { yuv, T, frameBytes };
  } finally {
    b.free(video);
  }
}

/** Frames [3, T, H, W] in the VAE's range as I420, one per frame: converted on the backend, one readback. */
export async function readI420(b: Backend, video: Tensor): Promise<Uint8Array[]> {
  const [, T, H, W] = video.shape as [number, number, number, number];
  const frameBytes = (H * W * 3) / 2;
  const yuv = b.alloc([T, frameBytes], "u8");
  try {
    b.rgbToYuv420(yuv, video, VAE_RANGE);
    const bytes = await b.downloadRaw(yuv);
    // views on the one buffer: an inline encoder reads them in place, the encoder thread's message copies it once
    return Array.from({ length: T }, (_, t) => bytes.subarray(t * frameBytes, (t + 1) * frameBytes));
  } finally {
    b.free(yuv);
  }
}

function sameValues(a: Float32Array, b: Float32Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
