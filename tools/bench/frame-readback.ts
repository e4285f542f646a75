// bench:realtime, part 4: what a streamed chunk costs from the VAE to the encoder's I420, with video
// frames handed on as I420 (converted on the backend, read back at 1.5 bytes a pixel: what the
// pipeline does) against RGB24 (read back as f32, 12 bytes a pixel, made into RGB24 in the worker and
// into I420 again by the H.264 encoder: what it did), side by side in one run on one loaded model.
// Per chunk after the first, through the real streaming pipeline: the VAE decode, the resampling to
// the requested size (kino-tiny renders 64x64), the rest of the pipeline's decode (the conversion and
// the readback, up to the chunk's yield), the H.264 encode of the chunk's frames (with RGB24 it
// includes the encoder's RGB → I420), and the bytes read back.
import { resolve } from "node:path";
import { H264Encoder } from "../../src/media/h264/encoder.ts";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadWanModel, type WanModel } from "../../src/models/wan-model.ts";
import type { FrameFormat, GenerationRequest } from "../../src/pipelines/pipeline.ts";
import { WanStreamingPipeline } from "../../src/pipelines/wan-streaming.ts";
import { openBackend } from "../../src/runtime/device.ts";

export interface ReadbackOptions {
  sizes: string[];
  /** Chunks per run after the first, and runs per format (interleaved). */
  chunks: number;
  runs: number;
}

interface ChunkCost {
  vaeMs: number;
  resampleMs: number;
  /** The conversion and the readback: what the decode does after the VAE besides resampling. */
  convertMs: number;
  encodeMs: number;
  bytes: number;
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

/** Streams `chunks` + 1 chunks and times each one after the first. */
async function run(model: WanModel, pipeline: WanStreamingPipeline, req: GenerationRequest, format: FrameFormat, chunks: number): Promise<ChunkCost[]> {
  const { vae, backend } = model;
  let decodeStart = 0, decodeEnd = 0, bytes = 0, resampleMs = 0;
  // instance properties over the prototype's methods, deleted afterwards
  const decode = vae.decode;
  vae.decode = async (latent) => {
    decodeStart = performance.now();
    try {
      return await decode.call(vae, latent);
    } finally {
      decodeEnd = performance.now();
    }
  };
  // what the decode reads back, whichever way
  const download = backend.download, downloadRaw = backend.downloadRaw, resize = backend.resize;
  // the WebAssembly backend's ops run before they return, so this times the resampling itself
  backend.resize = (out, x, o) => {
    const started = performance.now();
    resize.call(backend, out, x, o);
    resampleMs += performance.now() - started;
  };
  backend.download = async (t) => ((bytes += t.numel * 4), download.call(backend, t));
  backend.downloadRaw = async (t) => ((bytes += t.bytes), downloadRaw.call(backend, t));
  const encoder = await H264Encoder.create({ width: req.width, height: req.height, fps: req.fps, qp: 23, input: format });
  const costs: ChunkCost[] = [];
  try {
    const cond = await pipeline.encodePrompt(req.prompt);
    const ctx = { signal: new AbortController().signal, onProgress: () => {}, conditioningFor: () => cond };
    for await (const chunk of pipeline.stream(req, ctx)) {
      const yielded = performance.now();
      chunk.frames.forEach((frame, i) => encoder.encode(frame, { forceIdr: i === 0 }));
      const encoded = performance.now();
      const vaeMs = decodeEnd - decodeStart, convertMs = yielded - decodeEnd - resampleMs;
      if (chunk.generation_chunk_index > 0) costs.push({ vaeMs, resampleMs, convertMs, encodeMs: encoded - yielded, bytes });
      bytes = 0;
      resampleMs = 0;
    }
  } finally {
    encoder.close();
    vae.decode = decode;
    backend.download = download;
    backend.downloadRaw = downloadRaw;
    backend.resize = resize;
  }
  return costs.slice(0, chunks);
}

export async function compareFrameReadback(opts: ReadbackOptions): Promise<string[]> {
  const backend = await openBackend("cpu", { log: () => {} });
  const model = await loadWanModel(backend, await resolveCheckpoint(resolve(import.meta.dir, "../../models/kino-tiny")));
  const pipelines = { rgb24: new WanStreamingPipeline(model, { videoFormat: "rgb24" }), i420: new WanStreamingPipeline(model) };
  const lines: string[] = [];
  let framesPerChunk = 0;
  try {
    for (const size of opts.sizes) {
      const [width, height] = size.split("x").map(Number) as [number, number];
      const { defaults, frames_per_chunk } = pipelines.i420.card;
      framesPerChunk = frames_per_chunk;
      const req: GenerationRequest = {
        request_id: "bench", output: "video", task: "t2v", prompt: "a red circle moving right on a blue background", negative_prompt: "",
        width, height, num_frames: 1 + frames_per_chunk * (opts.chunks + 1), fps: 16, num_inference_steps: defaults.num_inference_steps,
        guidance_scale: defaults.guidance_scale, seed: 1, references: [], extra_params: {},
      };
      const costs: Record<FrameFormat, ChunkCost[]> = { rgb24: [], i420: [] };
      await run(model, pipelines.i420, req, "i420", 1); // warm-up: the resampling's and the conversion's first use
      for (let r = 0; r < opts.runs; r++) {
        const order: FrameFormat[] = r % 2 ? ["i420", "rgb24"] : ["rgb24", "i420"];
        for (const format of order) costs[format].push(...(await run(model, pipelines[format], req, format, opts.chunks)));
      }
      for (const format of ["rgb24", "i420"] as const) {
        const c = costs[format], m = (f: (x: ChunkCost) => number) => median(c.map(f));
        const label = format === "rgb24" ? "f32 RGB → RGB24 in the worker (before)" : "I420 on the backend (now)";
        lines.push(
          `| ${size} | ${label} | ${m((x) => x.vaeMs).toFixed(1)} | ${m((x) => x.resampleMs).toFixed(1)} | ${m((x) => x.convertMs).toFixed(2)} | ` +
            `${m((x) => x.encodeMs).toFixed(2)} | ${m((x) => x.convertMs + x.encodeMs).toFixed(2)} | ${(m((x) => x.bytes) / 1e6).toFixed(2)} MB |`,
        );
      }
    }
  } finally {
    model.free();
    backend.dispose();
  }
  return [
    `frame readback: kino-tiny streamed on ${backend.description}, ${framesPerChunk} frames a chunk, median of ${opts.chunks} chunks × ${opts.runs} runs per format`,
    "| size | frames leave the backend as | VAE decode (ms) | resample (ms) | convert + read back (ms) | H.264 encode (ms) | convert + read back + encode (ms) | read back per chunk |",
    "|---|---|---|---|---|---|---|---|",
    ...lines,
  ];
}
