// One generation to files, the same way wherever a pipeline is loaded: in `kino worker` for the server
// and in `kino generate` without one. Generation, encoding and writing share one progress bar and one
// timing report.
import type { LoadedConfig } from "../config/load.ts";
import { loadPipeline, type PipelineLoadOptions } from "../pipelines/load.ts";
import { decodeImage } from "../media/images.ts";
import type { GenerationRequest, Pipeline, RgbImage } from "../pipelines/pipeline.ts";
import type { DeviceKind } from "../runtime/tensor.ts";
import type { TaskResult } from "./ipc.ts";
import { type FileOutput, writeOutputs } from "./write-outputs.ts";

/** Share of the progress bar given to encoding and writing after the pipeline finishes. */
const ENCODE_SHARE = 0.1;

/** The serve config's generator section as a load request (the same for every worker: the server
 *  pins each one to its GPU through its environment, see src/engine/worker-devices.ts). */
export function loadOptionsFrom(loaded: LoadedConfig): PipelineLoadOptions {
  const { generator } = loaded.config;
  const lora = loaded.startupLora();
  return {
    modelPath: generator.model_path,
    device: generator.engine.device,
    numGpus: generator.engine.num_gpus,
    lora: lora && { path: lora.path, strength: lora.strength },
  };
}

export class Runner {
  private constructor(
    readonly pipeline: Pipeline,
    /** Which compute backend runs it, for the startup log line. */
    readonly backend: string,
    /** The GPU's PCI bus id on CUDA, else null. */
    readonly pciBusId: string | null,
    /** Where the model's numeric work runs. */
    readonly device: DeviceKind,
  ) {}

  static async load(options: PipelineLoadOptions): Promise<Runner> {
    const { pipeline, backend, pciBusId, device } = await loadPipeline(options);
    return new Runner(pipeline, backend, pciBusId, device);
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
    const referenceImages = await decodeReferenceImages(request);
    const generated = await this.pipeline.generate(request, {
      signal,
      onProgress: (p) => progress(p.fraction * (1 - ENCODE_SHARE), p.stage),
      ...(referenceImages.length ? { referenceImages } : {}),
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
      ...(generated.revised_prompt !== undefined ? { revised_prompt: generated.revised_prompt } : {}),
    };
  }
}

/** The request's image references (PNGs that admission checked and wrote) as RGB24 pixels. */
async function decodeReferenceImages(request: GenerationRequest): Promise<RgbImage[]> {
  const images: RgbImage[] = [];
  for (const ref of request.references) {
    if (ref.kind !== "image") continue;
    const { width, height, data } = await decodeImage(await Bun.file(ref.path).bytes(), { maxPixels: Number.MAX_SAFE_INTEGER, param: "image_reference" });
    const rgb = new Uint8Array(width * height * 3);
    for (let p = 0, q = 0; p < rgb.length; p += 3, q += 4) {
      rgb[p] = data[q]!;
      rgb[p + 1] = data[q + 1]!;
      rgb[p + 2] = data[q + 2]!;
    }
    images.push({ width, height, rgb });
  }
  return images;
}
