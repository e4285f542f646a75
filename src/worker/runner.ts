// One generation to files, the same way wherever a pipeline is loaded: in `kino worker` for the server
// and in `kino generate` without one. Generation, encoding and writing share one progress bar and one
// timing report.
import type { LoadedConfig } from "../config/load.ts";
import { loadPipeline, type PipelineLoadOptions } from "../pipelines/load.ts";
import type { GenerationRequest, Pipeline } from "../pipelines/pipeline.ts";
import type { TaskResult } from "./ipc.ts";
import { type FileOutput, writeOutputs } from "./write-outputs.ts";

/** Share of the progress bar given to encoding and writing after the pipeline finishes. */
const ENCODE_SHARE = 0.1;

/** The serve config's generator section as a load request (worker i gets GPU i mod num_gpus). */
export function loadOptionsFrom(loaded: LoadedConfig, gpu = 0): PipelineLoadOptions {
  const { generator } = loaded.config;
  const lora = loaded.startupLora();
  return { modelPath: generator.model_path, device: generator.engine.device, gpu, lora: lora && { path: lora.path, strength: lora.strength } };
}

export class Runner {
  private constructor(
    readonly pipeline: Pipeline,
    /** Which compute backend runs it, for the startup log line. */
    readonly backend: string,
  ) {}

  static async load(options: PipelineLoadOptions): Promise<Runner> {
    const { pipeline, backend } = await loadPipeline(options);
    return new Runner(pipeline, backend);
  }

  /** Generates, encodes and writes the files `output` names; progress runs 0 → 1 over all of it. */
  async runToFiles(
    request: GenerationRequest,
    output: FileOutput,
    signal: AbortSignal,
    onProgress: (fraction: number, stage: string) => void,
  ): Promise<TaskResult> {
    const started = performance.now();
    let peakRss = process.memoryUsage().rss;
    const progress = (fraction: number, stage: string) => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      onProgress(fraction, stage);
    };
    const generated = await this.pipeline.generate(request, {
      signal,
      onProgress: (p) => progress(p.fraction * (1 - ENCODE_SHARE), p.stage),
    });
    signal.throwIfAborted();
    progress(1 - ENCODE_SHARE, "encode");
    const encodeStart = performance.now();
    const files = await writeOutputs(generated, output);
    progress(1, "done");
    return {
      files,
      inference_time_s: (performance.now() - started) / 1000,
      stage_durations: { ...generated.stage_durations, encode: (performance.now() - encodeStart) / 1000 },
      peak_memory_mb: generated.peak_memory_mb ?? Math.round(peakRss / 2 ** 20),
    };
  }
}
