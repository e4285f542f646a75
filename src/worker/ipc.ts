// Messages between the server (engine) and a worker process, over Bun's IPC channel with structured
// clone ("advanced") serialization, so stream fragments travel as Uint8Array without base64.
import type { PipelineLoadOptions } from "../pipelines/load.ts";
import type { GenerationRequest, ModelCard, StageDurations } from "../pipelines/pipeline.ts";
import type { ImageFormat } from "../media/images.ts";

/** Where the worker writes what it generated. Paths are chosen by the server, under output_dir. */
export type OutputSpec =
  | { kind: "mp4"; path: string }
  | { kind: "images"; paths: string[]; format: ImageFormat; quality: number }
  /** A realtime stream: fMP4 fragments go back as `chunk` messages; paced to media time when set. */
  | { kind: "stream"; pacing: { leadChunks: number } | null };

/** A prompt update forwarded by a realtime session (already validated and deduplicated there). */
export interface InteractionMessage {
  type: "interaction";
  taskId: string;
  eventId: string;
  event: Record<string, unknown>;
  transitionChunks: number | undefined;
}

/** One generation chunk of a stream, encoded: the bytes are one binary WebSocket message. */
export interface StreamChunk {
  generation_chunk_index: number;
  num_frames: number;
  bytes: Uint8Array;
  started_event_ids: string[];
  active_event_ids: string[];
  completed_event_ids: string[];
  superseded_event_ids: string[];
  /** The active transition's progress k/N in this chunk, when one is under way. */
  transition: { event_id: string; k: number; n: number } | null;
}

/** The first message a worker gets: what to load (the same for every worker; its GPU comes from the
 *  CUDA_VISIBLE_DEVICES the server spawned it with). */
export interface WorkerInit extends PipelineLoadOptions {
  type: "init";
}

/** Where a worker ended up, as it found it itself: its ready message, the log line, GET /health. */
export interface WorkerDevice {
  /** The backend's description: "CUDA NVIDIA H200 (sm_90, 139 GiB)", "WebAssembly SIMD128, 2 threads". */
  backend: string;
  /** CUDA_VISIBLE_DEVICES in the worker's own environment, or null when it has none. */
  cuda_visible_devices: string | null;
  /** The GPU's PCI bus id on CUDA (which physical device, whatever its index in the process), else null. */
  pci_bus_id: string | null;
}

export type ToWorker =
  | WorkerInit
  | { type: "run"; taskId: string; request: GenerationRequest; output: OutputSpec }
  | { type: "abort"; taskId: string }
  | InteractionMessage;

export interface TaskResult {
  files: { path: string; bytes: number }[];
  /** Streams: what closing the fMP4 stream produced (an mfra index), and whether it was stopped early. */
  stream?: { trailer: Uint8Array; stopped: boolean; chunks: number };
  inference_time_s: number;
  stage_durations: StageDurations;
  peak_memory_mb: number | null;
  /** The prompt the model ran on, where it differs from the request's (extended from a given image). */
  revised_prompt?: string;
}

export type FromWorker =
  | { type: "ready"; card: ModelCard; device: WorkerDevice }
  | { type: "init_failed"; message: string }
  | { type: "progress"; taskId: string; fraction: number; stage: string }
  /** The task waits for something other than the device (a stream paced to its viewer's playback), or
   *  computes again: the engine's stall guard counts only the time it computes. */
  | { type: "idle"; taskId: string; idle: boolean }
  | { type: "done"; taskId: string; result: TaskResult }
  /** `deviceLost`: the task lost the device's context (src/runtime/device-lost.ts); the worker exits
   *  with EXIT_DEVICE_LOST right after this message, so it must be sent nothing more. */
  | { type: "failed"; taskId: string; message: string; aborted: boolean; deviceLost: boolean }
  | { type: "chunk"; taskId: string; chunk: StreamChunk }
  | { type: "interaction_failed"; taskId: string; eventId: string; message: string };

/**
 * A worker's exit status once its device context is lost: nothing in that process can use the GPU
 * again, and a new one can (sysexits' EX_TEMPFAIL, "try again later"). The engine restarts it.
 */
export const EXIT_DEVICE_LOST = 75;

/** Stream messages the engine passes through to the task's owner (the realtime session). */
export type StreamEvent = Extract<FromWorker, { type: "chunk" | "interaction_failed" }>;
