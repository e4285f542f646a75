import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { embeddedBundle, unpackBundle } from "../models/bundle.ts";
import { resolveCheckpoint } from "../models/checkpoint.ts";
import { loadWanModel } from "../models/wan-model.ts";
import { openBackend } from "../runtime/device.ts";
import type { DeviceKind } from "../runtime/tensor.ts";
import type { Pipeline } from "./pipeline.ts";
import { createWanPipeline } from "./wan-pipelines.ts";

/** Where the trained default model is exported (models/kino-tiny/ in the repository). */
const KINO_TINY_DIR = resolve(import.meta.dir, "../../models/kino-tiny");

/** What to load and where: the serve config's generator section, per worker. */
export interface PipelineLoadOptions {
  modelPath: string;
  device: "auto" | "cuda" | "cpu";
  /**
   * generator.engine.num_gpus. The process runs on CUDA device 0 of what it sees: the server pins each
   * worker to its GPU with CUDA_VISIBLE_DEVICES. Above 1, `auto` must find CUDA (no quiet CPU fallback).
   */
  numGpus: number;
  lora: { path: string; strength: number } | null;
}

export interface LoadedPipeline {
  pipeline: Pipeline;
  /** Which compute backend runs it, for the startup log line. */
  backend: string;
  /** The GPU's PCI bus id when it runs on CUDA, else null. */
  pciBusId: string | null;
  /** Where its numeric work runs ("cpu" for a custom pipeline module, whose backend is its own). */
  device: DeviceKind;
}

/**
 * model_path forms:
 * - `builtin:kino-tiny` — the default model: the checkpoint in models/kino-tiny/ (a model_index.json),
 *   or the copy build.ts embedded in the executable.
 * - `pipeline:<file>` — a module exporting `createPipeline(init)`; the test suite uses it to drive
 *   the server with a controllable pipeline.
 * - a directory — a diffusers/Wan checkpoint (the models issue).
 */
export async function loadPipeline(init: PipelineLoadOptions): Promise<LoadedPipeline> {
  const { modelPath } = init;
  if (modelPath === "builtin:kino-tiny") {
    // The same name wherever its files are: the checkout's folder or the executable's unpacked bundle.
    if (existsSync(join(KINO_TINY_DIR, "model_index.json"))) return loadCheckpoint(KINO_TINY_DIR, init, "kino-tiny");
    const bundle = embeddedBundle("kino-tiny");
    if (bundle) return loadCheckpoint(await unpackBundle(bundle), init, "kino-tiny");
    throw new Error(`builtin:kino-tiny has no weights: ${KINO_TINY_DIR} has no model_index.json and this executable embeds none (train and export them with bash tools/train/run.sh, or set generator.model_path to a checkpoint)`);
  }
  if (modelPath.startsWith("pipeline:")) {
    const file = modelPath.slice("pipeline:".length);
    const module = await import(Bun.pathToFileURL(file).href);
    if (typeof module.createPipeline !== "function") throw new Error(`${file} does not export createPipeline()`);
    return { pipeline: await module.createPipeline(init), backend: "custom pipeline module", pciBusId: null, device: "cpu" };
  }
  if (modelPath.startsWith("builtin:")) throw new Error(`Unknown builtin model '${modelPath}' (known: builtin:kino-tiny)`);
  return loadCheckpoint(modelPath, init);
}

/** A diffusers or original-Wan checkpoint directory on the backend `init.device` selects. */
async function loadCheckpoint(dir: string, init: PipelineLoadOptions, name?: string): Promise<LoadedPipeline> {
  const checkpoint = await resolveCheckpoint(dir);
  if (name) checkpoint.name = name;
  const requireCuda = init.numGpus > 1 ? `generator.engine.num_gpus is ${init.numGpus}` : undefined;
  const backend = await openBackend(init.device, { requireCuda });
  try {
    const model = await loadWanModel(backend, checkpoint, { lora: init.lora });
    return { pipeline: createWanPipeline(model), backend: backend.description, pciBusId: backend.pciBusId ?? null, device: backend.device };
  } catch (err) {
    backend.dispose();
    throw err;
  }
}
