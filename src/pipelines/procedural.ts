// A deterministic procedural video renderer behind the Pipeline contract. Its "text encoder" turns the
// colour, shape and motion words of a prompt (the vocabulary kino-tiny is trained on) into a small
// conditioning vector; it "denoises" from seeded noise to the rendered scene over num_inference_steps,
// so progress, cancellation, streaming and prompt transitions behave like a diffusion model's. It
// stands in for the default model until kino-tiny's weights land.
import { decodeImage } from "../media/images.ts";
import type {
  Conditioning,
  GenerationChunk,
  GenerationRequest,
  GenerationResult,
  ModelCard,
  Pipeline,
  RunContext,
  StreamContext,
} from "./pipeline.ts";

const COLORS: Record<string, [number, number, number]> = {
  red: [220, 40, 40], orange: [240, 140, 30], yellow: [240, 220, 40], green: [40, 180, 70],
  cyan: [40, 200, 220], blue: [40, 80, 220], purple: [140, 60, 200], pink: [240, 130, 180],
  white: [240, 240, 240], gray: [128, 128, 128], black: [10, 10, 10],
};
const SHAPES = ["circle", "square", "ring"] as const;
const MOTIONS = ["left", "right", "up", "down", "bouncing", "still"] as const;
/** Conditioning layout: background RGB, object RGB, one weight per shape, one weight per motion. */
const BG = 0, OBJ = 3, SHAPE = 6, MOTION = SHAPE + SHAPES.length;
const CONDITIONING_SIZE = MOTION + MOTIONS.length;
/** Seconds for one sweep of a moving object across the frame. */
const SWEEP_S = 3;

export const PROCEDURAL_CARD: ModelCard = {
  name: "kino-procedural",
  tasks: ["t2v", "i2v"],
  supports_images: true,
  frame_multiple: 4,
  frame_offset: 1,
  min_frames: 1,
  max_frames: 481,
  spatial_factor: 16,
  min_size: 16,
  max_size: 1920,
  max_pixels: 1920 * 1088,
  max_inference_steps: 100,
  defaults: { width: 480, height: 272, fps: 16, num_frames: 33, num_inference_steps: 4, guidance_scale: 1 },
  max_references: { image: 1, video: 0, audio: 0 },
  extra_params: {},
  supports_streaming: true,
  supports_prompt_updates: true,
  frames_per_chunk: 4,
  default_transition_chunks: 3,
};

/** Colour words in order: the first names the object, one after "on"/"background" the background. */
export function encodeScene(prompt: string, seed = 0): Conditioning {
  const words: string[] = prompt.toLowerCase().match(/[a-z]+/g) ?? [];
  const onIndex = words.findIndex((w) => w === "on" || w === "background");
  const bgWord = onIndex >= 0 ? words.slice(onIndex).find((w) => w in COLORS) : undefined;
  const objWord = words.find((w) => w in COLORS && w !== bgWord) ?? Object.keys(COLORS)[seed % 10]!;
  const cond = new Float32Array(CONDITIONING_SIZE);
  cond.set(COLORS[bgWord ?? "black"]!, BG);
  cond.set(COLORS[objWord]!, OBJ);
  cond[SHAPE + Math.max(0, SHAPES.findIndex((s) => words.includes(s)))] = 1;
  const motion = MOTIONS.findIndex((m) => words.includes(m));
  cond[MOTION + (motion < 0 ? 1 : motion)] = 1;
  return cond;
}

export class ProceduralPipeline implements Pipeline {
  readonly card = PROCEDURAL_CARD;

  async encodePrompt(prompt: string): Promise<Conditioning> {
    return encodeScene(prompt);
  }

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const started = performance.now();
    const cond = encodeScene(req.prompt, req.seed);
    const reference = req.references.find((r) => r.kind === "image");
    const firstFrame = reference ? await loadReference(reference.path, req.width, req.height) : null;
    const textEncode = (performance.now() - started) / 1000;
    const denoiseStart = performance.now();
    const targets = Array.from({ length: req.num_frames }, (_, i) =>
      renderFrame(cond, req.width, req.height, i / req.fps, i === 0 ? firstFrame : null),
    );
    const frames = await denoise(targets, req, 0, ctx, (step) => ctx.onProgress({ fraction: step / req.num_inference_steps, stage: "denoise" }));
    return {
      frames,
      width: req.width,
      height: req.height,
      fps: req.fps,
      stage_durations: { text_encode: textEncode, denoise: (performance.now() - denoiseStart) / 1000 },
      peak_memory_mb: null,
    };
  }

  async *stream(req: GenerationRequest, ctx: StreamContext): AsyncIterable<GenerationChunk> {
    const perChunk = this.card.frames_per_chunk;
    const chunks = Math.ceil(req.num_frames / perChunk);
    for (let index = 0; index < chunks; index++) {
      const cond = ctx.conditioningFor(index);
      const first = index * perChunk;
      const count = Math.min(perChunk, req.num_frames - first);
      const targets = Array.from({ length: count }, (_, i) => renderFrame(cond, req.width, req.height, (first + i) / req.fps, null));
      const frames = await denoise(targets, req, first, ctx, (step) =>
        ctx.onProgress({ fraction: (index + step / req.num_inference_steps) / chunks, stage: "denoise" }),
      );
      yield { generation_chunk_index: index, frames };
    }
  }
}

/**
 * From seeded noise to the targets in num_inference_steps: x ← x + (target − x) / (steps − step), a
 * straight path that lands exactly on the target. Yields between steps so an abort can arrive.
 */
async function denoise(targets: Uint8Array[], req: GenerationRequest, firstFrame: number, ctx: RunContext, onStep: (step: number) => void): Promise<Uint8Array[]> {
  const steps = req.num_inference_steps;
  const frames = targets.map((t, i) => seededNoise(t.length, req.seed * 7919 + firstFrame + i));
  for (let step = 0; step < steps; step++) {
    const rate = 1 / (steps - step);
    for (let i = 0; i < frames.length; i++) {
      const x = frames[i]!, t = targets[i]!;
      for (let p = 0; p < x.length; p++) x[p] = x[p]! + Math.round((t[p]! - x[p]!) * rate);
    }
    onStep(step + 1);
    await new Promise((resolve) => setImmediate(resolve));
    ctx.signal.throwIfAborted();
  }
  return frames;
}

/** Object centre at time `seconds`: each motion's path, blended by the conditioning's motion weights. */
function objectCentre(cond: Conditioning, width: number, height: number, r: number, seconds: number): [number, number] {
  const phase = (seconds / SWEEP_S) % 1;
  const sweep = (extent: number, forward: boolean) => r + (extent - 2 * r) * (forward ? phase : 1 - phase);
  const paths: Record<(typeof MOTIONS)[number], [number, number]> = {
    left: [sweep(width, false), height / 2],
    right: [sweep(width, true), height / 2],
    up: [width / 2, sweep(height, false)],
    down: [width / 2, sweep(height, true)],
    bouncing: [width / 2, height - r - Math.abs(Math.sin(phase * Math.PI * 3)) * (height - 2 * r)],
    still: [width / 2, height / 2],
  };
  let x = 0, y = 0, total = 0;
  MOTIONS.forEach((m, i) => {
    const w = cond[MOTION + i]!;
    x += w * paths[m][0];
    y += w * paths[m][1];
    total += w;
  });
  return total > 0 ? [x / total, y / total] : [width / 2, height / 2];
}

function renderFrame(cond: Conditioning, width: number, height: number, seconds: number, base: Uint8Array | null): Uint8Array {
  const frame = base ? base.slice() : new Uint8Array(width * height * 3);
  const r = Math.max(4, Math.min(width, height) * 0.15);
  const [cx, cy] = objectCentre(cond, width, height, r, seconds);
  const shapeWeight = (s: (typeof SHAPES)[number]) => cond[SHAPE + SHAPES.indexOf(s)]!;
  const squareness = shapeWeight("square");
  const hole = r * 0.6 * shapeWeight("ring"); // a ring is a circle with a hole; a transition grows it
  for (let y = 0; y < height; y++) {
    const shade = 0.85 + 0.15 * (y / height); // a soft vertical gradient so frames are not flat
    for (let x = 0; x < width; x++) {
      const dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      // Distance blends between the circle (euclidean) and square (chebyshev) metrics.
      const d = (1 - squareness) * Math.hypot(dx, dy) + squareness * Math.max(Math.abs(dx), Math.abs(dy));
      const inside = d < r && d >= hole;
      if (base && !inside) continue;
      const o = (y * width + x) * 3;
      const at = inside ? OBJ : BG;
      frame[o] = cond[at]! * shade;
      frame[o + 1] = cond[at + 1]! * shade;
      frame[o + 2] = cond[at + 2]! * shade;
    }
  }
  return frame;
}

/** xorshift32 noise in [0, 255]: deterministic per seed, as a diffusion model's initial latent is. */
function seededNoise(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let s = (seed >>> 0) || 0x9e3779b9;
  for (let i = 0; i < length; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = s & 0xff;
  }
  return out;
}

/** The reference image resized (nearest) to the output size, as RGB24. */
async function loadReference(path: string, width: number, height: number): Promise<Uint8Array> {
  const image = await decodeImage(new Uint8Array(await Bun.file(path).arrayBuffer()), {
    maxPixels: 1 << 26,
    param: "image_reference",
  });
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const sy = Math.floor((y * image.height) / height);
    for (let x = 0; x < width; x++) {
      const sx = Math.floor((x * image.width) / width);
      const s = (sy * image.width + sx) * 4, o = (y * width + x) * 3;
      out[o] = image.data[s]!;
      out[o + 1] = image.data[s + 1]!;
      out[o + 2] = image.data[s + 2]!;
    }
  }
  return out;
}
