// Messages between the server (engine) and a worker process. JSON over Bun's IPC channel.
import type { GenerationRequest, ModelCard, StageDurations } from "../pipelines/pipeline.ts";
import type { ImageFormat } from "../media/images.ts";

/** Where the worker writes what it generated. Paths are chosen by the server, under output_dir. */
export type OutputSpec =
  | { kind: "mp4"; path: string }
  | { kind: "images"; paths: string[]; format: ImageFormat; quality: number };

export interface WorkerInit {
  type: "init";
  modelPath: string;
  device: "auto" | "cuda" | "cpu";
  lora: { path: string; strength: number } | null;
}

export type ToWorker =
  | WorkerInit
  | { type: "run"; taskId: string; request: GenerationRequest; output: OutputSpec }
  | { type: "abort"; taskId: string };

export interface TaskResult {
  files: { path: string; bytes: number }[];
  inference_time_s: number;
  stage_durations: StageDurations;
  peak_memory_mb: number | null;
}

export type FromWorker =
  | { type: "ready"; card: ModelCard; backend: string }
  | { type: "init_failed"; message: string }
  | { type: "progress"; taskId: string; fraction: number; stage: string }
  | { type: "done"; taskId: string; result: TaskResult }
  | { type: "failed"; taskId: string; message: string; aborted: boolean };
