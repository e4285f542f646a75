// `npm run bench:model`: seconds per denoising step and per generation chunk of a streaming Wan model
// on the WebAssembly backend with 1 and 2 threads, side by side in one run (these machines are
// noisy, so the claim is the ratio). The model is models/kino-tiny/ when it has been exported, else
// a random checkpoint of the same layout written by tools/make-tiny-checkpoint.ts.
//
//   bun tools/bench/model.ts [--model DIR] [--width 64] [--height 64] [--chunks 6] [--steps 4]
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadWanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest } from "../../src/pipelines/pipeline.ts";
import { createWanPipeline } from "../../src/pipelines/wan-t2v.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { buildCpuWasm } from "../build/cpu.ts";
import { makeTinyCheckpoint } from "../make-tiny-checkpoint.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

interface Measured {
  threads: number;
  step: number;
  chunk: number;
  framesPerChunk: number;
}

async function measure(dir: string, threads: number, req: GenerationRequest, chunks: number): Promise<Measured> {
  const backend = await openBackend("cpu", { threads, log: () => {} });
  const model = await loadWanModel(backend, await resolveCheckpoint(dir));
  const pipeline = createWanPipeline(model);
  if (!pipeline.stream || !pipeline.encodePrompt) throw new Error(`${dir} is not a streaming (causal) model`);
  const cond = await pipeline.encodePrompt(req.prompt, "");
  const steps: number[] = [], chunkTimes: number[] = [];
  let last = performance.now(), chunkStart = last, frames = 0, index = 0;
  const ctx = {
    signal: new AbortController().signal,
    conditioningFor: () => cond,
    onProgress: () => {
      const now = performance.now();
      if (index > 0) steps.push(now - last); // chunk 0 warms up
      last = now;
    },
  };
  for await (const chunk of pipeline.stream(req, ctx)) {
    const now = performance.now();
    if (index > 0) chunkTimes.push(now - chunkStart);
    frames = chunk.frames.length;
    chunkStart = last = now;
    if (++index >= chunks) break;
  }
  model.free();
  backend.dispose();
  return { threads, step: median(steps) / 1000, chunk: median(chunkTimes) / 1000, framesPerChunk: frames };
}

await buildCpuWasm();
const kinoTiny = resolve(import.meta.dir, "../../models/kino-tiny");
let dir = args.includes("--model") ? arg("model", "") : existsSync(join(kinoTiny, "model_index.json")) ? kinoTiny : "";
let temp = "";
if (!dir) {
  temp = dir = mkdtempSync(join(tmpdir(), "kino-bench-"));
  await makeTinyCheckpoint(dir);
}
try {
  const ckpt = await resolveCheckpoint(dir);
  const chunks = Number(arg("chunks", "6"));
  const req: GenerationRequest = {
    request_id: "bench", output: "video", task: "t2v", prompt: "a red circle moving left on blue background", negative_prompt: "",
    width: Number(arg("width", String(ckpt.kino.width))), height: Number(arg("height", String(ckpt.kino.height))), num_frames: 100000, fps: ckpt.kino.fps,
    num_inference_steps: Number(arg("steps", String(ckpt.kino.steps))), guidance_scale: 1, seed: 0, references: [], extra_params: {},
  };
  const d = ckpt.dit.config;
  console.log(`model: ${temp ? "random tiny checkpoint (tools/make-tiny-checkpoint.ts)" : dir} — DiT dim ${d.dim}, ${d.numLayers} layers, patch ${d.patch.join("x")}, ` +
    `${req.width}x${req.height}, chunk ${ckpt.kino.chunkFrames} latent frames, ${req.num_inference_steps} steps + context pass`);
  const rows: Measured[] = [];
  for (const threads of [1, 2]) rows.push(await measure(dir, threads, req, chunks));
  console.log("threads | s / denoising step | s / chunk (steps + context pass + VAE decode) | frames / chunk | video fps");
  for (const r of rows) console.log(`${r.threads}       | ${r.step.toFixed(4)}            | ${r.chunk.toFixed(4)}                                      | ${r.framesPerChunk}              | ${(r.framesPerChunk / r.chunk).toFixed(1)}`);
  console.log(`2 threads vs 1: step ×${(rows[0]!.step / rows[1]!.step).toFixed(2)} faster, chunk ×${(rows[0]!.chunk / rows[1]!.chunk).toFixed(2)} faster`);
} finally {
  if (temp) rmSync(temp, { recursive: true, force: true });
}
