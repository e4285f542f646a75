// bench:realtime, part 3: a realtime session's throughput with the worker's H.264 encode on its own
// thread (KINO_STREAM_OVERLAP=1: chunk i encoded while chunk i + 1 is generated) against the sequential
// path (the default: generate → encode → send on one thread), side by side in one run. Two
// in-process servers with one worker process each, the same sessions (prompt, size, seed) on both,
// runs interleaved so drift in the machine's load hits both modes alike. Per session, at the client:
// session.start → first media chunk, the steady chunk interval (median gap between media chunks after
// the first), and video seconds generated per wall second; and whether the two modes' bytes agree.
// Then, in this process, the worker's StreamTask on the same pipeline: how long each chunk waits from
// the moment the pipeline yields it to the moment its fragment is sent (the encode, and with overlap
// also the wait for the main thread's next yield, between denoising steps of the next chunk).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";
import { prewarmStreamEncoder } from "../../src/media/stream/threaded-fragmenter.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import type { GenerationChunk, GenerationRequest, Pipeline, StreamContext } from "../../src/pipelines/pipeline.ts";
import { StreamTask } from "../../src/worker/stream-task.ts";

export interface OverlapOptions {
  sizes: string[];
  seconds: number;
  runs: number;
  fps: number;
}

interface SessionTiming {
  firstChunkS: number;
  chunkIntervalS: number;
  realTime: number;
  digest: string;
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

async function startMode(overlap: boolean, outputDir: string): Promise<RunningServer> {
  // worker processes take the server's environment when they are spawned, at start
  if (overlap) process.env.KINO_STREAM_OVERLAP = "1";
  try {
    const overrides = { "server.port": "0", "server.host": "127.0.0.1", "server.output_dir": outputDir, "generator.engine.num_workers": "1" };
    return await startServer(loadServeConfig({ overrides }), () => {});
  } finally {
    delete process.env.KINO_STREAM_OVERLAP;
  }
}

async function session(server: RunningServer, size: string, seconds: number, fps: number, seed: number): Promise<SessionTiming> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/realtime/video`);
  ws.binaryType = "arraybuffer";
  const hash = new Bun.CryptoHasher("sha256");
  const arrivals: number[] = [];
  let started = 0, frames = 0;
  await new Promise<void>((done, fail) => {
    ws.onopen = () => {
      started = performance.now();
      ws.send(JSON.stringify({ type: "session.start", prompt: "a red circle moving right on a blue background", size, fps, seconds: String(seconds), seed }));
    };
    ws.onerror = () => fail(new Error("WebSocket error"));
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") return void hash.update(new Uint8Array(e.data as ArrayBuffer));
      const m = JSON.parse(e.data);
      if (m.type === "error") fail(new Error(JSON.stringify(m)));
      if (m.type === "video.chunk_metadata" && m.kind === "media") {
        arrivals.push(performance.now());
        frames += m.num_frames;
      }
      if (m.type === "session.done") done();
    };
  });
  const wallS = (performance.now() - started) / 1000;
  ws.close();
  const gaps = arrivals.slice(2).map((t, i) => (t - arrivals[i + 1]!) / 1000);
  return { firstChunkS: (arrivals[0]! - started) / 1000, chunkIntervalS: median(gaps), realTime: frames / fps / wallS, digest: hash.digest("hex") };
}

/** Median ms from a chunk's yield by the pipeline to its fragment's send, over the chunks after the first. */
async function yieldToSend(pipeline: Pipeline, size: string, overlap: boolean, opts: OverlapOptions, seed: number): Promise<number> {
  const [width, height] = size.split("x").map(Number) as [number, number];
  const yielded: number[] = [], sent: number[] = [];
  const timed: Pipeline = Object.create(pipeline);
  timed.stream = async function* (req: GenerationRequest, ctx: StreamContext): AsyncIterable<GenerationChunk> {
    for await (const chunk of pipeline.stream!(req, ctx)) {
      yielded.push(performance.now());
      yield chunk;
    }
  };
  const { defaults } = pipeline.card;
  const request: GenerationRequest = {
    request_id: "bench", output: "video", task: "t2v", prompt: "a red circle moving right on a blue background", negative_prompt: "",
    width, height, num_frames: opts.seconds * opts.fps + 1, fps: opts.fps, num_inference_steps: defaults.num_inference_steps,
    guidance_scale: defaults.guidance_scale, seed, references: [], extra_params: {},
  };
  if (overlap) process.env.KINO_STREAM_OVERLAP = "1";
  try {
    await new StreamTask(timed, "bench", request, null, (m) => void (m.type === "chunk" && sent.push(performance.now()))).run(new AbortController().signal, () => {});
  } finally {
    delete process.env.KINO_STREAM_OVERLAP;
  }
  return median(sent.slice(1).map((t, i) => t - yielded[i + 1]!));
}

export async function compareEncodeOverlap(opts: OverlapOptions): Promise<string[]> {
  const outputDir = mkdtempSync(join(tmpdir(), "kino-bench-overlap-"));
  const servers = { sequential: await startMode(false, outputDir), overlapped: await startMode(true, outputDir) };
  const lines: string[] = [];
  const { pipeline } = await loadPipeline({ modelPath: "builtin:kino-tiny", device: "cpu", numGpus: 1, lora: null });
  await prewarmStreamEncoder();
  try {
    for (const server of Object.values(servers)) await session(server, opts.sizes[0]!, 1, opts.fps, 0); // warm-up
    for (const size of opts.sizes) {
      const timings = { sequential: [] as SessionTiming[], overlapped: [] as SessionTiming[] };
      for (let run = 0; run < opts.runs; run++) {
        const order = run % 2 ? (["overlapped", "sequential"] as const) : (["sequential", "overlapped"] as const);
        for (const mode of order) timings[mode].push(await session(servers[mode], size, opts.seconds, opts.fps, run + 1));
      }
      const identical = timings.sequential.every((t, i) => t.digest === timings.overlapped[i]!.digest);
      const waits = { sequential: [] as number[], overlapped: [] as number[] };
      for (let run = 0; run < opts.runs; run++) {
        for (const mode of ["sequential", "overlapped"] as const) waits[mode].push(await yieldToSend(pipeline, size, mode === "overlapped", opts, run + 1));
      }
      for (const mode of ["sequential", "overlapped"] as const) {
        const t = timings[mode];
        lines.push(
          `| ${size} | ${mode} | ${median(t.map((x) => x.firstChunkS)).toFixed(3)} | ${median(t.map((x) => x.chunkIntervalS)).toFixed(3)} | ` +
            `${median(t.map((x) => x.realTime)).toFixed(2)}× | ${median(waits[mode]).toFixed(1)} | ${identical ? "identical" : "DIFFERENT"} |`,
        );
      }
    }
  } finally {
    await servers.sequential.stop();
    await servers.overlapped.stop();
    rmSync(outputDir, { recursive: true, force: true });
  }
  return [
    `encode overlap: ${opts.seconds} s sessions at ${opts.fps} fps, median of ${opts.runs} runs per mode, 1 worker per server`,
    "| size | encode | session.start → first chunk (s) | steady chunk interval (s) | video s per wall s | chunk yielded → sent (ms) | bytes |",
    "|---|---|---|---|---|---|---|",
    ...lines,
  ];
}
