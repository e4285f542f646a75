// The Wan2.1 VAE decoder at its real size (the released geometry, random f32 weights made on the
// device — no file), decoding a stream chunk by chunk as the streaming pipeline does: milliseconds per
// chunk once the first (cold) chunk is out, the convolution work of a chunk, and which conv kernels
// ran. Then each later chunk's frames read back for the encoder, both ways: as I420 converted on the
// device (the pipeline's readI420: 1.5 bytes a pixel) and as f32 RGB made into RGB24 on the host (what
// the pipeline did before: 12 bytes a pixel, and the encoder's RGB → I420 still to come). tools/bench/model.ts (GPU half) and tools/gpu-check.sh report it; it runs on any backend, but at
// 832x480 only a GPU finishes in reasonable time. The command line then decodes the same stream again
// with each residual block's norm and SiLU and its residual add, and each resample's nearest upsample,
// run as their own ops instead of inside the conv (Conv3dOptions.normSilu, .residual, .upsample), then
// fused once more, and prints the two ways side by side (fused: the mean of its runs before and after,
// so that a drift over the runs — the heap growing, the device warming — does not favour either way).
//
//   bun tools/bench/vae-decode.ts [--width 832] [--height 480] [--chunk 3] [--chunks 4] [--device cuda|cpu]
import { parseVaeConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { videoToRgb24 } from "../../src/models/frames.ts";
import { WanVaeDecoder } from "../../src/models/wan-vae.ts";
import { readI420 } from "../../src/pipelines/wan-streaming.ts";
import type { WeightReader } from "../../src/models/weights.ts";
import type { Backend, Conv3dOptions } from "../../src/runtime/backend.ts";
import { conv3dWithSeparateOps } from "../../src/runtime/conv3d-unfused.ts";
import { openBackend } from "../../src/runtime/device.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";

export interface VaeDecodeResult {
  /** Seconds of the first chunk (every kernel's first use, 1 + 4·(chunk − 1) frames). */
  firstChunk: number;
  /** Median milliseconds of the later chunks (4·chunk frames each). */
  msPerChunk: number;
  framesPerChunk: number;
  /** Multiply-adds ×2 of the convolutions of one later chunk, and the rate the whole decode reaches. */
  convTflopPerChunk: number;
  tflops: number;
  /** Conv calls per kernel (a CUDA backend's ranKernel), e.g. { "mma.sync": 40 }. */
  kernels: Record<string, number>;
  finite: boolean;
  /** A later chunk's frames read back for the encoder, median ms and bytes: I420 from the device, f32 RGB → RGB24 on the host. */
  readback: { i420: { ms: number; bytes: number }; rgb24: { ms: number; bytes: number } };
}

/** One decoded chunk read back both ways (the device is idle: the decode was synchronised). */
async function timeReadback(backend: Backend, video: Tensor): Promise<{ i420: number; rgb24: number }> {
  const [, T, H, W] = video.shape as [number, number, number, number];
  let started = performance.now();
  await readI420(backend, video);
  const i420 = performance.now() - started;
  started = performance.now();
  videoToRgb24(await backend.download(video), T, H, W);
  return { i420, rgb24: performance.now() - started };
}

/** Streams `chunks` chunks of `chunkFrames` latent frames through a random Wan2.1 decoder; `unfused`:
 *  the norm and SiLU or the upsample in front of a conv and the residual add after it run as their own
 *  ops (the comparison the command line prints). */
export async function benchVaeDecode(backend: Backend, width: number, height: number, chunkFrames: number, chunks: number,
  unfused = false): Promise<VaeDecodeResult> {
  const cfg = parseVaeConfig({}, "Wan2.1 VAE (released geometry)");
  // The decoder's loader takes a checkpoint reader; random weights answer the same calls (host reads
  // included: the loader folds the latent statistics into the 1×1×1 conv2 on the host).
  const decoder = await WanVaeDecoder.load(new RandomWeights(backend, { dtype: "f32" }) as unknown as WeightReader, cfg);
  const h = height / 8, w = width / 8;
  const rng = new SeededRandom(2);
  const latent = backend.upload(rng.normal(cfg.zDim * chunkFrames * h * w), [cfg.zDim, chunkFrames, h, w]);
  // Count the conv work and the kernels that ran it, without changing what runs.
  let flop = 0;
  const kernels: Record<string, number> = {};
  const conv3d = backend.conv3d.bind(backend);
  const ran = (backend as Backend & { ranKernel?: (op: string) => string | null }).ranKernel?.bind(backend);
  backend.conv3d = (out: Tensor, x: Tensor, wt: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}) => {
    if (unfused) conv3dWithSeparateOps(backend, conv3d, out, x, wt, bias, opts);
    else conv3d(out, x, wt, bias, opts);
    flop += 2 * out.numel * wt.shape.slice(1).reduce((a, b) => a * b, 1);
    const k = ran?.("conv3d") ?? backend.name;
    kernels[k] = (kernels[k] ?? 0) + 1;
  };
  const times: number[] = [];
  const flops: number[] = [];
  const readbacks: { i420: number; rgb24: number }[] = [];
  let finite = true, frames = 0;
  try {
    for (let c = 0; c < chunks; c++) {
      flop = 0;
      if (c === 1) for (const k of Object.keys(kernels)) delete kernels[k];
      const started = performance.now();
      const video = await decoder.decode(latent);
      await backend.sync();
      times.push((performance.now() - started) / 1000);
      flops.push(flop);
      frames = video.shape[1]!;
      if (c > 0) readbacks.push(await timeReadback(backend, video));
      if (c === chunks - 1) finite = (await backend.download(video)).every(Number.isFinite); // not timed
      backend.free(video);
    }
  } finally {
    backend.conv3d = conv3d;
    backend.free(latent);
    decoder.free();
  }
  const steady = times.slice(1).sort((a, b) => a - b);
  const perChunk = steady[Math.floor(steady.length / 2)] ?? NaN;
  const convTflop = (flops[flops.length - 1] ?? 0) / 1e12;
  const medianOf = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1] ?? NaN;
  const pixels = frames * width * height;
  const readback = {
    i420: { ms: medianOf(readbacks.map((r) => r.i420)), bytes: pixels * 1.5 },
    rgb24: { ms: medianOf(readbacks.map((r) => r.rgb24)), bytes: pixels * 3 * 4 },
  };
  return { firstChunk: times[0]!, msPerChunk: perChunk * 1000, framesPerChunk: frames, convTflopPerChunk: convTflop, tflops: convTflop / perChunk, kernels, finite, readback };
}

export function formatVaeDecode(r: VaeDecodeResult, width: number, height: number, chunkFrames: number): string {
  const kernels = Object.entries(r.kernels).map(([k, n]) => `${n} on ${k}`).join(", ");
  return `Wan2.1 VAE decode ${width}x${height}, ${chunkFrames} latent frames a chunk: first chunk ${r.firstChunk.toFixed(3)} s | ` +
    `steady chunk ${r.msPerChunk.toFixed(1)} ms (${r.framesPerChunk} frames, ${(r.framesPerChunk / (r.msPerChunk / 1000)).toFixed(1)} fps of VAE alone) | ` +
    `conv ${r.convTflopPerChunk.toFixed(2)} TFLOP / chunk → ${r.tflops.toFixed(r.tflops < 10 ? 2 : 0)} TFLOP/s over the decode | convs: ${kernels} | outputs finite: ${r.finite}\n` +
    `  readback per chunk for the encoder: I420 converted on the device ${(r.readback.i420.bytes / 1e6).toFixed(1)} MB in ${r.readback.i420.ms.toFixed(1)} ms | ` +
    `f32 RGB → RGB24 on the host (before) ${(r.readback.rgb24.bytes / 1e6).toFixed(1)} MB in ${r.readback.rgb24.ms.toFixed(1)} ms`;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : fallback;
  };
  const width = Number(arg("width", "832")), height = Number(arg("height", "480")), chunk = Number(arg("chunk", "3"));
  if (width % 8 || height % 8) throw new Error("--width and --height must be multiples of 8 (the VAE's spatial stride)");
  let backend: Backend;
  try {
    backend = await openBackend(arg("device", "cuda") as "cuda" | "cpu", { log: () => {} });
  } catch (e) {
    console.log(`VAE decode — skipped: the backend did not open (${(e as Error).message})`);
    process.exit(77); // skipped: what tools/gpu-check-steps.sh reports as SKIPPED
  }
  try {
    console.log(`${backend.description}:`);
    const chunks = Number(arg("chunks", "4"));
    const fused = await benchVaeDecode(backend, width, height, chunk, chunks);
    console.log(formatVaeDecode(fused, width, height, chunk));
    const unfused = await benchVaeDecode(backend, width, height, chunk, chunks, true);
    const fusedMs = (fused.msPerChunk + (await benchVaeDecode(backend, width, height, chunk, chunks)).msPerChunk) / 2;
    console.log(`  norm, SiLU, residual add and upsample inside the conv ${fusedMs.toFixed(1)} ms per steady chunk (before and after) | as their own ops ` +
      `${unfused.msPerChunk.toFixed(1)} ms | fused / unfused ${(fusedMs / unfused.msPerChunk).toFixed(2)}`);
  } finally {
    backend.dispose();
  }
}
