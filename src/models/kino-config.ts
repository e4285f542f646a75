// How a checkpoint wants to be served and sampled: the "kino" object of transformer/config.json (the
// kino-tiny export writes it), else the diffusers scheduler config, else Wan2.1-T2V-1.3B's defaults.
// Several keys have aliases — the names used by Self-Forcing / LongLive configs — so a converted
// causal checkpoint can carry its settings under the names its training code used.
import type { AttentionReach } from "./attention-reach.ts";
import type { Json } from "./configs.ts";
import type { DitKind } from "./dit-kind.ts";
import type { PredictionType, SamplerKind } from "./samplers.ts";
import { CheckpointError } from "./safetensors.ts";
import { type Schedule, eulerSchedule, evenStepList, explicitSchedule, unipcSchedule, warpedSchedule } from "./schedules.ts";

export interface KinoConfig {
  /** A chunked causal model (streams; generates whole clips chunk by chunk too). */
  causal: boolean;
  /** Latent frames per chunk (causal). */
  chunkFrames: number;
  /** Attention window in latent frames, current chunk included (causal); null: 21 (Self-Forcing's). */
  windowFrames: number | null;
  sinkFrames: number;
  /** Context rows the DiT pads to (diffusers configs do not carry it). */
  textLen: number | undefined;
  sampler: SamplerKind;
  /** What the DiT outputs: "flow" (v = ε − x0, Wan's) or "sample" (x0; kino-tiny). */
  prediction: PredictionType;
  /** Explicit denoising step list (distilled models), before warping. */
  denoisingSteps: number[] | null;
  /** Map the list through the shifted 1000-step grid (Self-Forcing's warp_denoising_step). */
  warp: boolean;
  shift: number;
  steps: number;
  guidance: number;
  negativePrompt: string;
  width: number;
  height: number;
  fps: number;
  numFrames: number;
  /** Video frames of a chunk after the first, and of the first (null: from the VAE's stride). */
  framesPerChunk: number | null;
  firstChunkFrames: number | null;
  defaultTransitionChunks: number;
  /**
   * Causal models: a chunk after the first starts from the previous chunk's clean latent, noised to
   * the sigma of the step it enters the schedule at, and runs the last max(1, ⌊strength·steps⌋)
   * steps (img2img's strength); a chunk that cuts to a new prompt at once starts from noise. 1 (the
   * default): every chunk from noise, as Self-Forcing / CausVid sample.
   */
  continuationStrength: number;
  /**
   * With a sink: a chunk that cuts to a new prompt becomes the sink (kino.sink_reanchor_on_cut), so
   * the stream is anchored on the new scene, not on its first frames. Default false.
   */
  sinkReanchorOnCut: boolean;
  maxFrames: number;
  maxSize: number;
  maxPixels: number;
  /** The sizes ("WxH") the model was trained to make (kino.native_sizes, else native_width × native_height); null: any. */
  nativeSizes: string[] | null;
  /**
   * Trained to start from a client's image (kino.first_frame_conditioning): the image's latent is the
   * stream's first chunk, committed to the cache without denoising — which needs a causal model whose
   * first chunk is one latent frame.
   */
  firstFrameConditioning: boolean;
  /**
   * The farthest, in token rows and columns, a query's self-attention reaches (kino.self_attention_reach,
   * attention-reach.ts): a model trained on one grid, run on a larger one, attends only as far as it
   * learned. null: everywhere.
   */
  selfAttentionReach: AttentionReach | null;
}

/**
 * What the original code generates with, per pipeline, for a checkpoint that carries no "kino" object
 * (Wan2.1 generate.py and wan/configs; Wan2.2 wan/configs/wan_ti2v_5B.py and SUPPORTED_SIZES). A
 * scheduler config's shift still wins over these.
 */
const RELEASE_DEFAULTS: Record<DitKind, Json> = {
  t2v: {},
  // Wan2.1 I2V-14B: 40 steps; at 832x480 generate.py lowers the shift to 3
  i2v: { num_inference_steps: 40, shift: 3 },
  // Wan2.2 TI2V-5B: 1280x704 or 704x1280, 121 frames at 24 fps, 50 steps, shift 5
  ti2v: { width: 1280, height: 704, fps: 24, num_frames: 121, num_inference_steps: 50, shift: 5, native_sizes: ["1280x704", "704x1280"] },
};

/** The context rows a "kino" object asks the DiT to pad to (read before the DiT's config is parsed). */
export function kinoTextLen(kino: Json | null): number | undefined {
  return (kino?.text_len ?? undefined) as number | undefined;
}

export function parseKinoConfig(kino: Json | null, scheduler: Json, file: string, kind: DitKind = "t2v"): KinoConfig {
  // a release's own defaults stand in for the object it lacks; a scheduler config still sets the shift
  const schedulerShift = (scheduler.flow_shift ?? scheduler.shift) as number | undefined;
  const release = { ...RELEASE_DEFAULTS[kind] };
  if (schedulerShift !== undefined) delete release.shift;
  const k = kino ?? release;
  const pick = <T>(fallback: T, ...keys: string[]): T => {
    for (const key of keys) if (k[key] !== undefined && k[key] !== null) return k[key] as T;
    return fallback;
  };
  const bad = (key: string, why: string) => new CheckpointError(`${file}: kino.${key} ${why}`);
  const count = (v: unknown, key: string, min = 1) => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) throw bad(key, `must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return v;
  };
  const chunk = pick<number | null>(null, "chunk_frames", "num_frame_per_block", "chunk_latent_frames");
  const causal = pick(chunk !== null, "causal");
  const list = pick<number[] | null>(null, "timesteps", "denoising_step_list");
  if (list !== null && (!Array.isArray(list) || !list.length || list.some((t) => typeof t !== "number" || t <= 0 || t > 1000))) {
    throw bad("timesteps", `must be a non-empty list of timesteps in (0, 1000], got ${JSON.stringify(list)}`);
  }
  // tools/train/export.py writes the sampler as an object {type: "flow_euler", steps, shift, ...}
  const samplerObj = typeof k.sampler === "object" && k.sampler !== null ? (k.sampler as Json) : null;
  const samplerKey = samplerObj ? "sampler.type" : "sampler";
  const objSampler = samplerObj ? (samplerObj.type === "flow_euler" ? "euler" : samplerObj.type) : undefined;
  const schedClass = String(scheduler._class_name ?? "");
  const defaultSampler: SamplerKind = list ? "distilled" : kino ? "euler" : schedClass.startsWith("UniPC") ? "unipc" : schedClass ? "euler" : "unipc";
  const sampler = (objSampler ?? pick<SamplerKind>(defaultSampler, "sampler")) as SamplerKind;
  if (!["euler", "distilled", "unipc"].includes(sampler)) throw bad(samplerKey, `must be euler, distilled or unipc, got ${JSON.stringify(samplerObj?.type ?? sampler)}`);
  const fromSampler = <T>(key: string): T | undefined => (samplerObj?.[key] ?? undefined) as T | undefined;
  const windowChunks = pick<number | null>(null, "attn_window_chunks");
  // diffusers' name for it; "flow_prediction"/"v_prediction" are the velocity Wan predicts
  const predictionName = pick<string>("flow", "prediction_type");
  const prediction = ({ flow: "flow", flow_prediction: "flow", v_prediction: "flow", sample: "sample" } as Record<string, PredictionType>)[predictionName];
  if (!prediction) throw bad("prediction_type", `must be flow_prediction or sample, got ${JSON.stringify(predictionName)}`);
  const cfg: KinoConfig = {
    causal,
    chunkFrames: causal ? count(chunk, "chunk_frames") : 1,
    windowFrames: pick<number | null>(windowChunks !== null && chunk !== null ? windowChunks * chunk : null, "window_frames", "local_attn_size"),
    sinkFrames: pick(0, "sink_frames", "sink_size"),
    textLen: pick<number | undefined>(undefined, "text_len"),
    sampler,
    prediction,
    denoisingSteps: list,
    warp: pick(true, "warp_denoising_step"),
    shift: pick(fromSampler<number>("shift") ?? schedulerShift ?? (kino ? 1 : 3), "shift", "timestep_shift", "sample_shift"),
    steps: count(pick(fromSampler<number>("steps") ?? list?.length ?? (kino ? 8 : 50), "num_inference_steps", "steps"), "num_inference_steps"),
    guidance: pick(kino ? 1 : 5, "guidance_scale", "guidance"),
    negativePrompt: pick("", "negative_prompt"),
    width: count(pick(kino ? 64 : 832, "width", "native_width"), "width"),
    height: count(pick(kino ? 64 : 480, "height", "native_height"), "height"),
    fps: count(pick(16, "fps"), "fps"),
    numFrames: count(pick(kino ? 33 : 81, "num_frames"), "num_frames"),
    framesPerChunk: pick<number | null>(null, "frames_per_chunk"),
    firstChunkFrames: pick<number | null>(null, "first_chunk_frames"),
    defaultTransitionChunks: count(pick(3, "default_transition_chunks"), "default_transition_chunks", 0),
    continuationStrength: pick(1, "continuation_strength"),
    sinkReanchorOnCut: pick(false, "sink_reanchor_on_cut"),
    maxFrames: count(pick(481, "max_frames"), "max_frames"),
    maxSize: count(pick(1920, "max_size"), "max_size"),
    maxPixels: count(pick(1920 * 1088, "max_pixels"), "max_pixels"),
    nativeSizes: nativeSizesOf(k, bad),
    firstFrameConditioning: pick(false, "first_frame_conditioning"),
    selfAttentionReach: reachOf(k.self_attention_reach, bad),
  };
  if (cfg.windowFrames !== null && cfg.windowFrames !== -1) count(cfg.windowFrames, "window_frames");
  if (cfg.windowFrames === -1) cfg.windowFrames = null;
  count(cfg.sinkFrames, "sink_frames", 0);
  if (!(cfg.shift > 0)) throw bad("shift", `must be > 0, got ${cfg.shift}`);
  if (typeof cfg.sinkReanchorOnCut !== "boolean") throw bad("sink_reanchor_on_cut", `must be true or false, got ${JSON.stringify(cfg.sinkReanchorOnCut)}`);
  if (typeof cfg.firstFrameConditioning !== "boolean") throw bad("first_frame_conditioning", `must be true or false, got ${JSON.stringify(cfg.firstFrameConditioning)}`);
  if (cfg.firstFrameConditioning && !(cfg.causal && cfg.chunkFrames === 1)) {
    throw bad("first_frame_conditioning", "needs a causal model whose chunks are one latent frame (chunk_frames 1): the image is the first chunk");
  }
  // the latent-patch image branch (dit-kind.ts) reads the given first frame: without one it never runs
  if (k.image_features !== undefined && !cfg.firstFrameConditioning) throw bad("image_features", "needs first_frame_conditioning: the branch reads the given first frame");
  // the streaming path (wan-dit-causal.ts) is where the reach is applied
  if (cfg.selfAttentionReach && !cfg.causal) throw bad("self_attention_reach", "needs a causal model: streaming applies it, whole clips do not");
  const strength = cfg.continuationStrength;
  if (typeof strength !== "number" || !(strength > 0 && strength <= 1)) throw bad("continuation_strength", `must be a number in (0, 1], got ${JSON.stringify(strength)}`);
  // UniPC's multistep history cannot begin halfway through its schedule
  if (strength < 1 && sampler === "unipc") throw bad("continuation_strength", "needs the euler or distilled sampler (unipc starts every chunk from noise)");
  return cfg;
}

/** The step a continuing chunk enters a schedule of `steps` at: it runs the last max(1, ⌊strength·steps⌋). */
export function continuationStart(k: KinoConfig, steps: number): number {
  return steps - Math.max(1, Math.floor(k.continuationStrength * steps));
}

/** Whether the schedule takes a shift at all: an explicit step list that is not warped does not. */
export function shiftAdjustable(k: KinoConfig): boolean {
  return !(k.sampler === "distilled" || k.denoisingSteps) || k.warp;
}

/**
 * The schedule for `steps` denoising steps. A model with an explicit step list uses it as is for its
 * own step count; another count gets an evenly spaced list of that length (then warped the same way).
 * `shift` replaces the model's own (a request's flow_shift).
 */
export function scheduleFor(k: KinoConfig, steps: number, shift = k.shift): Schedule {
  if (k.sampler === "distilled" || k.denoisingSteps) {
    const list = k.denoisingSteps && k.denoisingSteps.length === steps ? k.denoisingSteps : evenStepList(steps);
    return k.warp ? warpedSchedule(list, shift) : explicitSchedule(list);
  }
  return k.sampler === "unipc" ? unipcSchedule(steps, shift) : eulerSchedule(steps, shift);
}

/** kino.native_sizes ["WxH", ...], or the one native_width × native_height; null when neither is given. */
function nativeSizesOf(k: Json, bad: (key: string, why: string) => Error): string[] | null {
  if (k.native_sizes !== undefined) {
    const list = k.native_sizes;
    if (!Array.isArray(list) || !list.length || list.some((s) => typeof s !== "string" || !/^[1-9]\d*x[1-9]\d*$/.test(s))) {
      throw bad("native_sizes", `must be a non-empty list of "WxH" sizes, got ${JSON.stringify(list)}`);
    }
    return list as string[];
  }
  if (typeof k.native_width === "number" && typeof k.native_height === "number") return [`${k.native_width}x${k.native_height}`];
  return null;
}

/** kino.self_attention_reach [rows, columns], whole numbers ≥ 1; null when absent. */
function reachOf(v: unknown, bad: (key: string, why: string) => Error): AttentionReach | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || v.length !== 2 || v.some((n) => typeof n !== "number" || !Number.isInteger(n) || n < 1)) {
    throw bad("self_attention_reach", `must be [rows, columns], two integers ≥ 1, got ${JSON.stringify(v)}`);
  }
  return [v[0], v[1]];
}
