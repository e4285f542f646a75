// The contract between the engine and the models (docs/ARCHITECTURE.md, "The pipeline contract").
// Everything here is plain data so it can cross the worker-process boundary as JSON.

/** What a loaded model says about itself; the request adapter checks requests against it. */
export interface ModelCard {
  /** Architecture/model name (the served id is chosen by the config, not here). */
  name: string;
  /** Tasks this model accepts in `task` (e.g. "t2v"); the first is the default. */
  tasks: string[];
  /** Whether POST /v1/images can be served (one frame of the video model). */
  supports_images: boolean;
  /** Valid frame counts are `frame_multiple * n + frame_offset` (n ≥ 0), within [min_frames, max_frames]. */
  frame_multiple: number;
  frame_offset: number;
  min_frames: number;
  max_frames: number;
  /** Width and height must be multiples of this. */
  spatial_factor: number;
  min_size: number;
  max_size: number;
  /** Largest width × height the model will render. */
  max_pixels: number;
  /**
   * The sizes ("WxH") the model was trained to make; any other accepted size is rendered at the one
   * nearest in aspect ratio and resampled. null: every size on the grid is native (Wan's own models).
   */
  native_sizes: string[] | null;
  max_inference_steps: number;
  defaults: {
    width: number;
    height: number;
    fps: number;
    num_frames: number;
    num_inference_steps: number;
    guidance_scale: number;
  };
  /** How many references of each media kind the model can use (0 = the field is refused at admission). */
  max_references: { image: number; video: number; audio: number };
  /** Keys accepted in `extra_params`, with the JSON type each must have. */
  extra_params: Record<string, "number" | "string" | "boolean">;
  /**
   * The sampler's timestep shift, when a request may set its own (`flow_shift`); absent: the model's
   * schedule takes no shift (explicit distilled timesteps) and `flow_shift` is refused at admission.
   */
  flow_shift?: number;
  /** Realtime: chunked causal streaming and prompt updates between chunks. */
  supports_streaming: boolean;
  supports_prompt_updates: boolean;
  frames_per_chunk: number;
  default_transition_chunks: number;
}

/** A reference (image/video/audio) already materialized and decoded under output_dir at admission. */
export interface MaterializedReference {
  kind: "image" | "video" | "audio";
  path: string;
  width?: number;
  height?: number;
}

/** One typed shape for REST and WS requests after admission (all defaults resolved). */
export interface GenerationRequest {
  request_id: string;
  /** "video" renders num_frames frames; "image" renders one frame per output. */
  output: "video" | "image";
  task: string;
  prompt: string;
  negative_prompt: string;
  width: number;
  height: number;
  num_frames: number;
  fps: number;
  num_inference_steps: number;
  guidance_scale: number;
  /** The sampler's timestep shift asked for; absent: the model's own. Set only on a card with flow_shift. */
  flow_shift?: number;
  seed: number;
  references: MaterializedReference[];
  extra_params: Record<string, unknown>;
}

export interface StageDurations {
  [stage: string]: number;
}

/** Progress reported by a pipeline: fraction of all work in [0, 1] and the stage it is in. */
export interface Progress {
  fraction: number;
  stage: string;
}

export interface RunContext {
  onProgress(p: Progress): void;
  signal: AbortSignal;
  /**
   * The request's image references decoded, in order (the worker decodes them: pipelines never parse
   * files); absent when it has none.
   */
  referenceImages?: RgbImage[];
}

/** Decoded pixels: RGB24, row-major, width*height*3 bytes. */
export interface RgbImage {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/**
 * How a result's or chunk's frames are laid out, one Uint8Array per frame:
 * - "rgb24": row-major RGB, width·height·3 bytes;
 * - "i420": the H.264 encoder's input, width·height·3/2 bytes — the Y plane, then Cb, then Cr at half
 *   width and height, BT.601 limited range — made on the backend (Backend.rgbToYuv420), so a video's
 *   frames come back from the device at half the bytes of RGB24 and the encoder converts nothing.
 * Video frames may be either; image outputs are always rgb24 (PNG, JPEG and WebP take RGB, and 4:2:0
 * would halve an image's colour resolution for no saving worth having on one frame).
 */
export type FrameFormat = "rgb24" | "i420";

export interface GenerationResult {
  format: FrameFormat;
  frames: Uint8Array[];
  width: number;
  height: number;
  fps: number;
  stage_durations: StageDurations;
  peak_memory_mb: number | null;
  /** The prompt the model ran on, where it differs from the request's (extended from a given image). */
  revised_prompt?: string;
}

/**
 * What a prompt becomes in the model: the text encoder's output, flattened. Streaming transitions
 * interpolate it linearly between source and target, so it must be a fixed-size vector per model.
 */
export type Conditioning = Float32Array;

export interface StreamContext extends RunContext {
  /**
   * Asked at every chunk boundary, before chunk `index` is generated: the conditioning for that chunk
   * (the runner resolves pending prompt updates and transitions here).
   */
  conditioningFor(index: number): Conditioning;
  /**
   * Asked after conditioningFor(index): whether chunk `index` cuts to a new prompt at once (a hard
   * update: transition_chunks 0 or 1) instead of moving on from the previous chunk's. Models that
   * continue each chunk from the last one's latent start such a chunk from noise. Absent: never.
   */
  promptCut?(index: number): boolean;
}

/** One generation chunk of a stream, its frames laid out as `format` says (the pipeline's streamFormat). */
export interface GenerationChunk {
  generation_chunk_index: number;
  format: FrameFormat;
  frames: Uint8Array[];
}

export interface Pipeline {
  readonly card: ModelCard;
  generate(req: GenerationRequest, ctx: RunContext): Promise<GenerationResult>;
  /** Streaming models (card.supports_streaming): text-encode a prompt once, e.g. a transition target. */
  encodePrompt?(prompt: string, negativePrompt: string): Promise<Conditioning>;
  /** Streaming models: chunk by chunk, each conditioned on what ctx.conditioningFor returns. */
  stream?(req: GenerationRequest, ctx: StreamContext): AsyncIterable<GenerationChunk>;
  /** The format of every chunk stream() yields (absent: rgb24), known before the first so the stream's
   *  encoder can be opened while it is generated. */
  readonly streamFormat?: FrameFormat;
}
