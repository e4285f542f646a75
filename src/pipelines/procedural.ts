// A deterministic procedural video renderer behind the Pipeline contract. It reads colour, shape and
// motion words from the prompt (the vocabulary kino-tiny is trained on) and "denoises" from seeded
// noise to the rendered scene over num_inference_steps, so progress, cancellation and timing behave
// like a diffusion model's. It stands in for the default model until kino-tiny's weights land.
import { decodeImage } from "../media/images.ts";
import type { GenerationRequest, GenerationResult, ModelCard, Pipeline, RunContext } from "./pipeline.ts";

const COLORS: Record<string, [number, number, number]> = {
  red: [220, 40, 40], orange: [240, 140, 30], yellow: [240, 220, 40], green: [40, 180, 70],
  cyan: [40, 200, 220], blue: [40, 80, 220], purple: [140, 60, 200], pink: [240, 130, 180],
  white: [240, 240, 240], gray: [128, 128, 128], black: [10, 10, 10],
};
const SHAPES = ["circle", "square", "ring"] as const;
const MOTIONS = ["left", "right", "up", "down", "bouncing", "still"] as const;

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
  supports_streaming: false,
  supports_prompt_updates: false,
  frames_per_chunk: 4,
  default_transition_chunks: 3,
};

interface Scene {
  background: [number, number, number];
  color: [number, number, number];
  shape: (typeof SHAPES)[number];
  motion: (typeof MOTIONS)[number];
}

/** Colour words in order: the first names the object, one after "on"/"background" the background. */
export function sceneFromPrompt(prompt: string, seed: number): Scene {
  const words: string[] = prompt.toLowerCase().match(/[a-z]+/g) ?? [];
  const colors = words.filter((w) => w in COLORS);
  const onIndex = words.findIndex((w) => w === "on" || w === "background");
  const bgWord = onIndex >= 0 ? words.slice(onIndex).find((w) => w in COLORS) : undefined;
  const objWord = colors.find((c) => c !== bgWord) ?? Object.keys(COLORS)[seed % 10]!;
  return {
    background: COLORS[bgWord ?? "black"]!,
    color: COLORS[objWord]!,
    shape: SHAPES.find((s) => words.includes(s)) ?? "circle",
    motion: MOTIONS.find((m) => words.includes(m)) ?? "right",
  };
}

export class ProceduralPipeline implements Pipeline {
  readonly card = PROCEDURAL_CARD;

  async generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult> {
    const { width, height, num_frames, num_inference_steps: steps } = req;
    const started = performance.now();
    const scene = sceneFromPrompt(req.prompt, req.seed);
    const reference = req.references.find((r) => r.kind === "image");
    const firstFrame = reference ? await loadReference(reference.path, width, height) : null;
    const targets = Array.from({ length: num_frames }, (_, i) =>
      renderFrame(scene, width, height, i / Math.max(1, num_frames - 1), i === 0 ? firstFrame : null),
    );
    const textEncode = (performance.now() - started) / 1000;

    const denoiseStart = performance.now();
    const frames = targets.map((_, i) => seededNoise(width * height * 3, req.seed * 7919 + i));
    for (let step = 0; step < steps; step++) {
      // x ← x + (target − x) / (steps − step): a straight path from noise that lands exactly on target.
      const rate = 1 / (steps - step);
      for (let i = 0; i < num_frames; i++) {
        const x = frames[i]!, t = targets[i]!;
        for (let p = 0; p < x.length; p++) x[p] = x[p]! + Math.round((t[p]! - x[p]!) * rate);
      }
      ctx.onProgress({ fraction: (step + 1) / steps, stage: "denoise" });
      await new Promise((resolve) => setImmediate(resolve)); // lets an abort message in
      ctx.signal.throwIfAborted();
    }
    return {
      frames,
      width,
      height,
      fps: req.fps,
      stage_durations: { text_encode: textEncode, denoise: (performance.now() - denoiseStart) / 1000 },
      peak_memory_mb: null,
    };
  }
}

function renderFrame(scene: Scene, width: number, height: number, t: number, base: Uint8Array | null): Uint8Array {
  const frame = base ? base.slice() : new Uint8Array(width * height * 3);
  const r = Math.max(4, Math.min(width, height) * 0.15);
  let cx = width / 2, cy = height / 2;
  const travel = (extent: number) => r + (extent - 2 * r) * t;
  if (scene.motion === "right") cx = travel(width);
  if (scene.motion === "left") cx = width - travel(width);
  if (scene.motion === "down") cy = travel(height);
  if (scene.motion === "up") cy = height - travel(height);
  if (scene.motion === "bouncing") cy = height - r - Math.abs(Math.sin(t * Math.PI * 3)) * (height - 2 * r);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      const dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      const d = Math.hypot(dx, dy);
      const inside =
        scene.shape === "square" ? Math.max(Math.abs(dx), Math.abs(dy)) < r
        : scene.shape === "ring" ? d < r && d > r * 0.6
        : d < r;
      const shade = 0.85 + 0.15 * (y / height); // a soft vertical gradient so frames are not flat
      const c = inside ? scene.color : scene.background;
      if (base && !inside) continue;
      frame[o] = c[0] * shade;
      frame[o + 1] = c[1] * shade;
      frame[o + 2] = c[2] * shade;
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
