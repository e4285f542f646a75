// `npm run bench:model`, in two halves, each side by side in one run (these machines are noisy):
//
// 1. WebAssembly: seconds per denoising step and per generation chunk of a streaming Wan model with 1
//    and 2 threads (the claim is the ratio), split into stages (DiT forwards, context passes, cross-attn
//    K/V, VAE decode, H.264 encode). The model is models/kino-tiny/ when it has been exported, else a
//    random checkpoint of its exact geometry (tools/make-tiny-checkpoint.ts --preset kino-tiny;
//    --preset tiny: the tests' much smaller one). Chunks are timed once the KV window is full.
// 2. GPU, when the CUDA backend opens: Wan2.1-T2V-1.3B's DiT at its real size (the released
//    transformer config, random bf16 weights made on the device — no file), streaming 832x480 in
//    3-latent-frame chunks (4680 tokens each): seconds per chunk (4 denoising steps + the context
//    pass) once the KV window is full, and the video frames per second that DiT throughput allows;
//    then the Wan2.1 VAE decoder at its real size on the same chunks (tools/bench/vae-decode.ts: ms
//    per chunk). Then the image models at their real geometry (tools/bench/image-models.ts): Wan2.2
//    TI2V-5B at 1280x704, 121 frames — seconds per denoising step and VAE decode seconds — and Wan2.1
//    I2V-14B at 832x480 — seconds per step; `--gpu-steps` steps each (default 2: the first is the
//    kernels' first use), `--gpu-vae-latents` latent frames decoded of the 31 (default 3; the rest
//    extrapolated). Without a GPU it prints one line saying it was skipped and why.
//
//   bun tools/bench/model.ts [--model DIR | --preset kino-tiny|tiny [--patch T,H,W]] [--width 64] [--height 64] [--chunks 6]
//                            [--warmup N] [--steps 4] [--guidance G] [--threads 1,2]
//                            [--gpu-window 21] [--gpu-chunks 3] [--gpu-steps 2] [--gpu-vae-latents 3] [--gpu-only]
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { type WanDitConfig, parseDitConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { warpedSchedule } from "../../src/models/schedules.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { loadWanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest } from "../../src/pipelines/pipeline.ts";
import { createWanPipeline } from "../../src/pipelines/wan-pipelines.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { buildCpuWasm } from "../build/cpu.ts";
import { H264Encoder } from "../../src/media/h264/encoder.ts";
import { type PresetName, makeTinyCheckpoint } from "../make-tiny-checkpoint.ts";
import { benchImageModels } from "./image-models.ts";
import { StageTimer } from "./stage-timer.ts";
import { benchVaeDecode, formatVaeDecode } from "./vae-decode.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

// ---- the DiT at real size, random weights (the GPU half) ------------------------------------------

/** Wan-AI/Wan2.1-T2V-1.3B-Diffusers transformer/config.json as released. */
export const WAN21_T2V_1_3B_TRANSFORMER = {
  _class_name: "WanTransformer3DModel", num_attention_heads: 12, attention_head_dim: 128, ffn_dim: 8960, num_layers: 30, in_channels: 16,
  out_channels: 16, patch_size: [1, 2, 2], text_dim: 4096, freq_dim: 256, qk_norm: "rms_norm_across_heads", cross_attn_norm: true, eps: 1e-6,
  rope_max_seq_len: 1024, image_dim: null, added_kv_proj_dim: null,
};

export interface ChunkBenchSpec {
  dit: WanDitConfig;
  /** Video frames per latent frame and pixels per latent pixel (the Wan-VAE's 4 and 8). */
  vae: { temporal: number; spatial: number };
  width: number;
  height: number;
  /** Latent frames per chunk. */
  chunkFrames: number;
  /** The denoising step list before warping (Self-Forcing's [1000, 750, 500, 250]), warped with `shift`. */
  steps: number[];
  shift: number;
  /** Attention window in latent frames (current chunk included) and its sink. */
  windowFrames: number;
  sinkFrames: number;
}

/** Streaming Wan2.1-1.3B at 832x480 in 3-frame chunks, Self-Forcing's steps and 21-frame window. */
export function wan13bSpec(windowFrames = 21): ChunkBenchSpec {
  return {
    dit: parseDitConfig(WAN21_T2V_1_3B_TRANSFORMER, "Wan2.1-T2V-1.3B-Diffusers/transformer/config.json", 512),
    vae: { temporal: 4, spatial: 8 }, width: 832, height: 480, chunkFrames: 3, steps: [1000, 750, 500, 250], shift: 5, windowFrames, sinkFrames: 0,
  };
}

export interface ChunkGeometry {
  latentHeight: number;
  latentWidth: number;
  tokensPerFrame: number;
  tokensPerChunk: number;
  /** Keys a chunk attends to once the window is full (the chunk's own included). */
  windowTokens: number;
  /** Video frames a chunk decodes to (after the first chunk). */
  videoFramesPerChunk: number;
  /** Chunks that fill the window; the ones after run in steady state. */
  warmupChunks: number;
}

export function chunkGeometry(s: ChunkBenchSpec): ChunkGeometry {
  const [pt, ph, pw] = s.dit.patch;
  const latentHeight = s.height / s.vae.spatial, latentWidth = s.width / s.vae.spatial;
  if (!Number.isInteger(latentHeight / ph) || !Number.isInteger(latentWidth / pw) || s.chunkFrames % pt) {
    throw new Error(`${s.width}x${s.height} in chunks of ${s.chunkFrames} latent frames does not fit the patch ${s.dit.patch}`);
  }
  const tokensPerFrame = (latentHeight / ph) * (latentWidth / pw);
  return {
    latentHeight,
    latentWidth,
    tokensPerFrame,
    tokensPerChunk: (s.chunkFrames / pt) * tokensPerFrame,
    windowTokens: (s.windowFrames / pt) * tokensPerFrame,
    videoFramesPerChunk: s.chunkFrames * s.vae.temporal,
    warmupChunks: Math.ceil((s.windowFrames - s.chunkFrames) / s.chunkFrames),
  };
}

/**
 * Multiply-adds ×2 of one steady-state chunk: (steps + 1 context pass) forwards, each with every
 * linear layer on the chunk's tokens, self-attention over the full window and cross-attention over
 * text_len rows. The context pass skips the last block's second half and the head; that and the
 * embeddings are left out (< 0.5 %), so this is a slight overestimate.
 */
export function chunkTflop(s: ChunkBenchSpec): number {
  const { dim: d, ffnDim, numLayers, textLen } = s.dit, g = chunkGeometry(s), L = g.tokensPerChunk;
  const linear = 2 * L * (6 * d * d + 2 * d * ffnDim); // self q,k,v,o + cross q,o + FFN up, down
  const attention = 4 * L * (g.windowTokens + textLen) * d; // q·kᵀ and p·v, self + cross
  return ((s.steps.length + 1) * numLayers * (linear + attention)) / 1e12;
}

export interface ChunkBenchResult {
  parameters: number;
  geometry: ChunkGeometry;
  /** Seconds of the first chunk (cold: first use of every kernel) and the median steady-state chunk. */
  firstChunk: number;
  perChunk: number;
  forwards: number;
  /** Video frames per second the DiT alone sustains. */
  fps: number;
  tflopPerChunk: number;
  tflops: number;
  /** Every value of the last prediction is finite (random weights at this size stay sane). */
  finite: boolean;
}

/**
 * Builds the spec's DiT with random weights on `backend` and streams warmup + `measuredChunks`
 * chunks through the KV cache, timing each chunk to its last kernel (backend.sync).
 */
export async function benchDitChunks(backend: Backend, s: ChunkBenchSpec, measuredChunks: number, seed = 1): Promise<ChunkBenchResult> {
  const g = chunkGeometry(s);
  const weights = new RandomWeights(backend, { seed, dtype: "bf16" });
  const dit = await WanDiT.load(weights, s.dit);
  const causal = new CausalWanDiT(dit, { chunkFrames: s.chunkFrames, windowFrames: s.windowFrames, sinkFrames: s.sinkFrames, height: g.latentHeight, width: g.latentWidth });
  const rng = new SeededRandom(seed);
  const cross = await dit.crossAttnKV(rng.normal(s.dit.textLen * s.dit.textDim).map((v) => 0.1 * v));
  const latent = backend.upload(rng.normal(s.dit.inDim * s.chunkFrames * g.latentHeight * g.latentWidth), [s.dit.inDim, s.chunkFrames, g.latentHeight, g.latentWidth]);
  const { timesteps } = warpedSchedule(s.steps, s.shift);
  const times: number[] = [];
  let forwards = 0, finite = false;
  try {
    const chunks = 1 + g.warmupChunks + measuredChunks;
    for (let c = 0; c < chunks; c++) {
      const started = performance.now();
      let last: Tensor | null = null;
      for (const [i, t] of timesteps.entries()) {
        const v = (await causal.forwardChunk(latent, t, cross))!;
        forwards++;
        if (c === chunks - 1 && i === timesteps.length - 1) last = v;
        else backend.free(v);
      }
      await causal.forwardChunk(latent, 0, cross, true); // the context pass
      forwards++;
      await backend.sync();
      times.push((performance.now() - started) / 1000);
      if (last) {
        finite = (await backend.download(last)).every(Number.isFinite); // not timed
        backend.free(last);
      }
    }
  } finally {
    backend.free(latent);
    dit.freeCross(cross);
    causal.free();
    dit.free();
  }
  const steady = times.slice(1 + g.warmupChunks);
  const perChunk = median(steady), tflopPerChunk = chunkTflop(s);
  return {
    parameters: weights.parameters, geometry: g, firstChunk: times[0]!, perChunk, forwards,
    fps: g.videoFramesPerChunk / perChunk, tflopPerChunk, tflops: tflopPerChunk / perChunk, finite,
  };
}

// ---- the streaming pipeline on WebAssembly ----------------------------------------------------------

/** Stages of a chunk, in print order: DiT denoising forwards (cond + uncond), context passes,
 *  cross-attention K/V, VAE decode (with the download and RGB conversion), H.264 encode, the rest. */
const STAGES = ["dit", "context", "cross", "vae", "encode", "other"] as const;
type Stage = (typeof STAGES)[number];

interface Measured {
  threads: number;
  step: number;
  /** Median seconds per steady chunk, H.264 encode of its frames included, and per stage. */
  chunk: number;
  stages: Record<Stage, number>;
  framesPerChunk: number;
}

async function measureWasm(dir: string, threads: number, req: GenerationRequest, chunks: number, warmup: number): Promise<Measured> {
  const backend = await openBackend("cpu", { threads, log: () => {} });
  const model = await loadWanModel(backend, await resolveCheckpoint(dir));
  const pipeline = createWanPipeline(model);
  if (!pipeline.stream || !pipeline.encodePrompt) throw new Error(`${dir} is not a streaming (causal) model`);
  const cond = await pipeline.encodePrompt(req.prompt, "");
  const timer = new StageTimer();
  timer.wrap(CausalWanDiT.prototype, "forwardChunk", (a) => (a[3] ? "context" : "dit"));
  timer.wrap(model.dit, "crossAttnKV", () => "cross");
  timer.wrap(model.vae, "decode", () => "vae");
  // the decoded frames' conversion and readback (I420; RGB24 with a pipeline made for it)
  timer.wrap(model.backend, "rgbToYuv420", () => "vae");
  timer.wrap(model.backend, "downloadRaw", () => "vae");
  timer.wrap(model.backend, "download", () => "vae");
  const encoder = await H264Encoder.create({ width: req.width, height: req.height, fps: req.fps, qp: 26, input: pipeline.streamFormat ?? "rgb24" });
  const steps: number[] = [], chunkTimes: number[] = [], stageTimes: Record<Stage, number>[] = [];
  let last = performance.now(), chunkStart = last, frames = 0, index = 0;
  const ctx = {
    signal: new AbortController().signal,
    conditioningFor: () => cond,
    onProgress: () => {
      const now = performance.now();
      if (index >= warmup) steps.push(now - last);
      last = now;
    },
  };
  try {
    for await (const chunk of pipeline.stream(req, ctx)) {
      const encodeStart = performance.now();
      chunk.frames.forEach((frame, i) => encoder.encode(frame, { forceIdr: i === 0 }));
      const now = performance.now();
      timer.add("encode", (now - encodeStart) / 1000);
      const t = timer.take();
      if (index >= warmup) {
        const total = (now - chunkStart) / 1000;
        const st = Object.fromEntries(STAGES.map((n) => [n, t.get(n) ?? 0])) as Record<Stage, number>;
        st.other = total - STAGES.slice(0, -1).reduce((sum, n) => sum + st[n], 0);
        chunkTimes.push(total);
        stageTimes.push(st);
      }
      frames = chunk.frames.length;
      chunkStart = last = performance.now();
      if (++index >= chunks) break;
    }
  } finally {
    timer.restore();
    encoder.close();
    model.free();
    backend.dispose();
  }
  const stages = Object.fromEntries(STAGES.map((n) => [n, median(stageTimes.map((s) => s[n]))])) as Record<Stage, number>;
  return { threads, step: median(steps) / 1000, chunk: median(chunkTimes), stages, framesPerChunk: frames };
}

async function wasmHalf(args: string[], arg: (name: string, fallback: string) => string): Promise<void> {
  await buildCpuWasm();
  const kinoTiny = resolve(import.meta.dir, "../../models/kino-tiny");
  let dir = args.includes("--model") ? arg("model", "") : existsSync(join(kinoTiny, "model_index.json")) ? kinoTiny : "";
  let temp = "";
  const preset = arg("preset", "kino-tiny") as PresetName;
  if (!dir) {
    temp = dir = mkdtempSync(join(tmpdir(), "kino-bench-"));
    const patch = args.includes("--patch") ? (arg("patch", "").split(",").map(Number) as [number, number, number]) : undefined;
    await makeTinyCheckpoint(dir, { preset, patch });
  }
  try {
    const ckpt = await resolveCheckpoint(dir);
    const k = ckpt.kino;
    const window = Math.ceil((k.windowFrames ?? 21) / k.chunkFrames);
    // steady state: the window is full (chunk 0, the first use of every kernel, is always left out)
    const warmup = Number(arg("warmup", String(Math.max(1, window - 1))));
    const chunks = warmup + Number(arg("chunks", "6"));
    const req: GenerationRequest = {
      request_id: "bench", output: "video", task: "t2v", prompt: "a red circle moving left on blue background", negative_prompt: "",
      width: Number(arg("width", String(k.width))), height: Number(arg("height", String(k.height))), num_frames: 100000, fps: k.fps,
      num_inference_steps: Number(arg("steps", String(k.steps))), guidance_scale: Number(arg("guidance", String(k.guidance))), seed: 0, references: [], extra_params: {},
    };
    const d = ckpt.dit.config;
    console.log(`WebAssembly — model: ${temp ? `random ${preset} checkpoint (tools/make-tiny-checkpoint.ts --preset ${preset})` : dir} — DiT dim ${d.dim}, ${d.numLayers} layers, patch ${d.patch.join("x")}, ` +
      `${req.width}x${req.height}, chunk ${k.chunkFrames} latent frames, window ${window} chunks, ${req.num_inference_steps} steps` +
      `${req.guidance_scale > 1 ? ` × 2 (guidance ${req.guidance_scale})` : ""} + context pass; ${chunks - warmup} chunks after ${warmup} warm-up`);
    const rows: Measured[] = [];
    for (const threads of (arg("threads", "1,2")).split(",").map(Number)) rows.push(await measureWasm(dir, threads, req, chunks, warmup));
    console.log("threads | s / step | s / chunk (incl. encode) | DiT steps | context | cross K/V | VAE decode | encode | other | frames / chunk | video fps");
    const f = (x: number) => x.toFixed(4);
    for (const r of rows) {
      const s = r.stages;
      console.log(`${r.threads}       | ${f(r.step)}   | ${f(r.chunk)}                   | ${f(s.dit)}    | ${f(s.context)}  | ${f(s.cross)}    | ${f(s.vae)}     | ${f(s.encode)} | ${f(s.other)} | ${r.framesPerChunk}              | ${(r.framesPerChunk / r.chunk).toFixed(1)}`);
    }
    if (rows.length === 2) console.log(`${rows[1]!.threads} threads vs ${rows[0]!.threads}: step ×${(rows[0]!.step / rows[1]!.step).toFixed(2)} faster, chunk ×${(rows[0]!.chunk / rows[1]!.chunk).toFixed(2)} faster`);
  } finally {
    if (temp) rmSync(temp, { recursive: true, force: true });
  }
}

async function gpuHalf(arg: (name: string, fallback: string) => string): Promise<void> {
  let backend: Backend;
  try {
    backend = await openBackend("cuda", { log: () => {} });
  } catch (e) {
    console.log(`GPU — skipped: the CUDA backend did not open (${(e as Error).message.replace(/^.*CUDA is unavailable: /, "")})`);
    return;
  }
  try {
    const spec = wan13bSpec(Number(arg("gpu-window", "21")));
    const g = chunkGeometry(spec);
    console.log(`GPU — ${backend.description}: Wan2.1-T2V-1.3B DiT (random bf16 weights), ${spec.width}x${spec.height}, chunks of ${spec.chunkFrames} latent frames ` +
      `(${g.tokensPerChunk} tokens), ${spec.steps.length} steps + context pass, window ${spec.windowFrames} frames (${g.windowTokens} keys), text_len ${spec.dit.textLen}`);
    const r = await benchDitChunks(backend, spec, Number(arg("gpu-chunks", "3")));
    console.log(`parameters ${(r.parameters / 1e9).toFixed(3)} B | first chunk ${r.firstChunk.toFixed(3)} s | steady chunk ${r.perChunk.toFixed(3)} s ` +
      `(${r.forwards} forwards) | ${r.fps.toFixed(1)} video fps of DiT throughput (${r.geometry.videoFramesPerChunk} frames / chunk) | ` +
      `≈${r.tflopPerChunk.toFixed(0)} TFLOP / chunk → ${r.tflops.toFixed(0)} TFLOP/s | outputs finite: ${r.finite}`);
    console.log(formatVaeDecode(await benchVaeDecode(backend, spec.width, spec.height, spec.chunkFrames, 4), spec.width, spec.height, spec.chunkFrames));
    await benchImageModels(backend, Number(arg("gpu-steps", "2")), Number(arg("gpu-vae-latents", "3")));
  } finally {
    backend.dispose();
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : fallback;
  };
  if (!args.includes("--gpu-only")) await wasmHalf(args, arg);
  await gpuHalf(arg);
}
