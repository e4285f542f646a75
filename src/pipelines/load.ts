import type { WorkerInit } from "../engine/ipc.ts";
import type { Pipeline } from "./pipeline.ts";
import { ProceduralPipeline } from "./procedural.ts";

export interface LoadedPipeline {
  pipeline: Pipeline;
  /** Which compute backend runs it, for the startup log line. */
  backend: string;
}

/**
 * model_path forms:
 * - `builtin:kino-tiny` — the embedded default model. Until its weights land (the kino-tiny issue)
 *   this is the procedural renderer, behind the same Pipeline contract.
 * - `pipeline:<file>` — a module exporting `createPipeline(init)`; the test suite uses it to drive
 *   the server with a controllable pipeline.
 * - a directory — a diffusers/Wan checkpoint (the models issue).
 */
export async function loadPipeline(init: WorkerInit): Promise<LoadedPipeline> {
  const { modelPath } = init;
  if (modelPath === "builtin:kino-tiny" || modelPath === "builtin:procedural") {
    if (init.lora) throw new Error(`${modelPath} has no weights to merge the LoRA adapter ${init.lora.path} into`);
    return { pipeline: new ProceduralPipeline(), backend: "cpu (procedural renderer)" };
  }
  if (modelPath.startsWith("pipeline:")) {
    const file = modelPath.slice("pipeline:".length);
    const module = await import(Bun.pathToFileURL(file).href);
    if (typeof module.createPipeline !== "function") throw new Error(`${file} does not export createPipeline()`);
    return { pipeline: await module.createPipeline(init), backend: "custom pipeline module" };
  }
  if (modelPath.startsWith("builtin:")) throw new Error(`Unknown builtin model '${modelPath}' (known: builtin:kino-tiny)`);
  throw new Error(`Cannot load '${modelPath}': checkpoint loading is not available yet in this build`);
}
