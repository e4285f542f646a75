// Realtime sessions through `kino serve` end to end, as a user meets it: the server started as its
// own process (the single executable dist/kino when it has been built, else bun src/cli/main.ts) on a
// checkpoint directory, /v1/realtime/video sessions at the model's native size, and what the client
// sees: seconds from session.start to the first media chunk (in the server's first session, which
// pays every kernel's first use, and in the next, on a new prompt), then the video frames received
// per wall second once the attention window is full (the chunks before attend to fewer frames and
// record the steady state's CUDA graphs), and media seconds per wall second (the real-time factor); then the
// server stopped with SIGTERM, as an operator would. The server reports no per-stage times; the
// DiT's and the VAE's shares come from tools/bench/model.ts --gpu-only and tools/bench/vae-decode.ts.
//
// Without --model it writes a random checkpoint first (tools/make-tiny-checkpoint.ts; `--preset
// wan-1.3b`: Wan2.1-T2V-1.3B at real size, 3.9 GB, streamed to disk) into a temporary folder it
// removes at the end. tools/gpu-check.sh runs it on an H200 with the Wan2.1-1.3B preset at 832x480;
// test/tools/e2e-realtime.test.ts runs it on the CPU with the tiny preset.
//
//   bun tools/bench/e2e-realtime.ts [--model DIR | --preset wan-1.3b|kino-tiny|tiny] [--device auto|cuda|cpu]
//       [--size WxH] [--chunks 10] [--warmup N] [--kino PATH|source] [--save FILE.mp4] [--json]
//       [--target-fps F] [--target-first-chunk S] [--ready-timeout 600]
// Without --json the table ends with one VERDICT-DATA line (the result and the targets, as JSON) for
// tools/gpu-verdicts.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { RealtimeClient } from "../../test/helpers/realtime-client.ts";
import { PRESET_NAMES, type PresetName, makeTinyCheckpoint } from "../make-tiny-checkpoint.ts";
import { isRunning, kinoCommand, startKino } from "./kino-process.ts";

export interface E2eResult {
  kino: string;
  backend: string;
  model: string;
  device: string;
  width: number;
  height: number;
  fps: number;
  framesPerChunk: number;
  warmupChunks: number;
  measuredChunks: number;
  /** Seconds to write the random checkpoint (null: --model was given). */
  checkpointWriteS: number | null;
  /** Spawn → the server's ready line (its worker started and the model loaded). */
  serverReadyS: number;
  /** The server's first session: session.start sent → its first media chunk (every kernel's first use). */
  coldFirstChunkS: number;
  /** The next session: session.start sent → the first media chunk received; video.start → the same. */
  firstChunkS: number;
  videoStartToFirstChunkS: number;
  /** Frames of the measured chunks per wall second, from the end of the last warm-up chunk to the end of the last measured one. */
  steadyFps: number;
  /** steadyFps / the session's fps: media seconds per wall second. */
  realTimeFactor: number;
  chunkIntervalMedianS: number;
  chunkIntervalMaxS: number;
  framesReceived: number;
  mediaChunks: number;
  /** The server's process and its workers' (GET /health); `workersLeft`: those still running after the server exited. */
  server: { pid: number; exitCode: number | null; stopS: number; workerPids: number[]; workersLeft: number[] };
}

/** Two prompts (words of the tiny presets' vocabulary): the measured session's is new to the server, as a new user's would be. */
const PROMPTS = { first: "a blue square bouncing on a green background", measured: "a red circle moving right on a blue background" };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** The stream geometry from the checkpoint's own configs: chunk and window in latent frames, native size. */
async function streamGeometry(dir: string): Promise<{ chunkFrames: number; windowFrames: number; width: number; height: number }> {
  const k = (await resolveCheckpoint(dir)).kino;
  if (!k.causal) throw new Error(`${dir} is not a streaming (chunked causal) model: no realtime session to time`);
  const [w, h] = (k.nativeSizes?.[0] ?? `${k.width}x${k.height}`).split("x").map(Number) as [number, number];
  return { chunkFrames: k.chunkFrames, windowFrames: k.windowFrames ?? 21, width: w, height: h };
}

interface SessionTimes {
  sentAt: number;
  videoStartAt: number;
  /** Per media chunk: when its binary payload arrived, its frames, and every payload (init, media, trailer) in order. */
  arrivals: number[];
  frames: number[];
  media: Uint8Array[];
}

/** One realtime session, stopped (session.stop) once `chunks` media chunks are in; performance.now() times. */
async function streamSession(url: string, s: { prompt: string; size: string; numFrames: number; chunks: number; firstWaitMs: number; log: (line: string) => void }): Promise<SessionTimes> {
  const client = await RealtimeClient.connect(url);
  const nextWait = 120_000;
  try {
    const sentAt = performance.now();
    client.send({ type: "session.start", prompt: s.prompt, size: s.size, num_frames: s.numFrames, seed: 0 });
    await client.nextOfType("video.start", s.firstWaitMs);
    const videoStartAt = client.arrivedAt[client.lastIndex]!;
    const times: SessionTimes = { sentAt, videoStartAt, arrivals: [], frames: [], media: [] };
    for (;;) {
      const r = await client.next(times.arrivals.length ? nextWait : s.firstWaitMs);
      if (r.kind === "binary") {
        times.media.push(r.bytes);
        continue;
      }
      const m = r.message;
      if (m.type === "error") throw new Error(`the server answered the session with ${m.code}: ${m.message}`);
      if (m.type === "session.done") break;
      if (m.type !== "video.chunk_metadata" || m.kind !== "media") continue;
      await client.next(nextWait); // its binary payload, the same message pair
      times.media.push((client.received[client.lastIndex] as { bytes: Uint8Array }).bytes);
      times.arrivals.push(client.arrivedAt[client.lastIndex]!);
      times.frames.push(m.num_frames);
      s.log(`chunk ${times.arrivals.length - 1}: ${m.num_frames} frames at ${((times.arrivals.at(-1)! - sentAt) / 1000).toFixed(3)} s`);
      if (times.arrivals.length === s.chunks) client.send({ type: "session.stop" });
    }
    if (times.arrivals.length < s.chunks) throw new Error(`the session ended after ${times.arrivals.length} media chunks; ${s.chunks} were needed`);
    return times;
  } finally {
    client.close();
  }
}

export interface E2eOptions {
  model?: string;
  preset: PresetName;
  device: "auto" | "cuda" | "cpu";
  size?: string;
  chunks: number;
  warmup?: number;
  kino?: string;
  save?: string;
  readyTimeoutS: number;
  log: (line: string) => void;
}

export async function benchE2e(o: E2eOptions): Promise<E2eResult> {
  const temp = mkdtempSync(join(tmpdir(), "kino-e2e-"));
  let server: Awaited<ReturnType<typeof startKino>> | null = null;
  try {
    let model = o.model, checkpointWriteS: number | null = null;
    if (!model) {
      model = join(temp, "model");
      o.log(`writing a random ${o.preset} checkpoint to ${model}`);
      const started = performance.now();
      await makeTinyCheckpoint(model, { preset: o.preset });
      checkpointWriteS = (performance.now() - started) / 1000;
    }
    const geometry = await streamGeometry(model);
    const [width, height] = o.size ? (o.size.split("x").map(Number) as [number, number]) : [geometry.width, geometry.height];
    if (!(width > 0 && height > 0)) throw new Error(`--size must be WxH, got ${o.size}`);
    // the window is full from this chunk on: earlier ones attend to fewer frames and record graphs
    const warmup = o.warmup ?? Math.ceil(geometry.windowFrames / geometry.chunkFrames);
    const cmd = kinoCommand(o.kino);
    o.log(`starting ${cmd.label} serve on ${o.device}`);
    server = await startKino(cmd, ["--generator.model_path", model, "--generator.engine.device", o.device, "--server.output_dir", join(temp, "out")], o.readyTimeoutS * 1000);
    o.log(`ready after ${server.readyS.toFixed(1)} s: ${server.backend}`);
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    const card = (await (await fetch(`${server.url}/v1/models/${models.data[0].id}`)).json()).card;
    if (!card.supports_streaming) throw new Error(`the served model does not stream (${card.name})`);
    const fpc: number = card.frames_per_chunk, fps: number = card.defaults.fps;
    // enough frames for every chunk wanted (the first is shorter); session.stop ends it once they are in
    const numFrames = 1 + fpc * (warmup + o.chunks);
    if (numFrames > card.max_frames) throw new Error(`${warmup} + ${o.chunks} chunks need ${numFrames} frames; the model makes at most ${card.max_frames} (use fewer --chunks)`);

    const session = (name: keyof typeof PROMPTS, chunks: number) =>
      streamSession(server!.url, { prompt: PROMPTS[name], size: `${width}x${height}`, numFrames: 1 + fpc * chunks, chunks, firstWaitMs: o.readyTimeoutS * 1000, log: (l) => o.log(`${name} session: ${l}`) });
    // the server's first session pays for every kernel's first use; a user meets that once per
    // server start, so it is timed apart (one chunk) and the figures come from the next session
    const cold = await session("first", 1);
    const { sentAt, videoStartAt, arrivals, frames, media } = await session("measured", warmup + o.chunks);
    if (o.save) await Bun.write(o.save, new Uint8Array(Buffer.concat(media)));
    const measured = arrivals.slice(warmup, warmup + o.chunks);
    const wallS = (measured.at(-1)! - arrivals[warmup - 1]!) / 1000;
    const steadyFps = frames.slice(warmup, warmup + o.chunks).reduce((a, b) => a + b, 0) / wallS;
    const intervals = measured.map((t, i) => (t - arrivals[warmup - 1 + i]!) / 1000);
    const health = await (await fetch(`${server.url}/health`)).json();
    const workerPids: number[] = health.workers.map((w: { pid: number }) => w.pid);
    const { pid, backend, readyS } = server;
    const stop = await server.stop();
    server = null;
    const workersLeft = workerPids.filter(isRunning);
    return {
      kino: cmd.label, backend, model: o.model ?? `random ${o.preset} checkpoint`, device: o.device, width, height, fps, framesPerChunk: fpc,
      warmupChunks: warmup, measuredChunks: o.chunks, checkpointWriteS, serverReadyS: readyS,
      coldFirstChunkS: (cold.arrivals[0]! - cold.sentAt) / 1000,
      firstChunkS: (arrivals[0]! - sentAt) / 1000, videoStartToFirstChunkS: (arrivals[0]! - videoStartAt) / 1000,
      steadyFps, realTimeFactor: steadyFps / fps, chunkIntervalMedianS: median(intervals), chunkIntervalMaxS: Math.max(...intervals),
      framesReceived: frames.reduce((a, b) => a + b, 0), mediaChunks: arrivals.length,
      server: { pid, exitCode: stop.exitCode, stopS: stop.stopS, workerPids, workersLeft },
    };
  } finally {
    // after a failure too: drained and stopped as an operator would, killed only if it hangs
    await server?.stop(10_000);
    rmSync(temp, { recursive: true, force: true });
  }
}

/** The table a person reads; `targets` adds a column saying whether each target was met. */
export function formatE2e(r: E2eResult, targets: { fps?: number; firstChunkS?: number }): string {
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  const f = (x: number, d = 3) => x.toFixed(d);
  const rows: [string, string, string][] = [
    ...(r.checkpointWriteS !== null ? [["checkpoint written", `${f(r.checkpointWriteS, 1)} s`, ""] as [string, string, string]] : []),
    ["spawn → server ready (worker up, model loaded)", `${f(r.serverReadyS, 1)} s`, ""],
    ["session.start → first media chunk, the server's first session", `${f(r.coldFirstChunkS)} s`, ""],
    ["session.start → first media chunk, the next session (a new prompt)", `${f(r.firstChunkS)} s`, targets.firstChunkS !== undefined ? `≤ ${targets.firstChunkS} s: ${met(r.firstChunkS <= targets.firstChunkS)}` : ""],
    ["video.start → first media chunk, the next session", `${f(r.videoStartToFirstChunkS)} s`, ""],
    [`steady video fps (chunks ${r.warmupChunks}–${r.warmupChunks + r.measuredChunks - 1}, frames per wall s)`, f(r.steadyFps, 1), targets.fps !== undefined ? `≥ ${targets.fps} fps: ${met(r.steadyFps >= targets.fps)}` : ""],
    ["real-time factor (media s per wall s)", `${f(r.realTimeFactor, 2)}×`, ""],
    ["chunk interval, median / max", `${f(r.chunkIntervalMedianS)} / ${f(r.chunkIntervalMaxS)} s`, ""],
    ["frames / media chunks received", `${r.framesReceived} / ${r.mediaChunks}`, ""],
    ["SIGTERM → server exit", (r.server.exitCode === null ? `killed after ${f(r.server.stopS, 1)} s` : `exit ${r.server.exitCode} in ${f(r.server.stopS, 1)} s`) +
      (r.server.workersLeft.length ? `; workers ${r.server.workersLeft.join(", ")} still running` : `, its ${r.server.workerPids.length} worker(s) gone`), ""],
  ];
  const withTargets = targets.fps !== undefined || targets.firstChunkS !== undefined;
  return [
    `kino serve end to end — ${r.kino}, ${r.model}, --generator.engine.device ${r.device} (${r.backend}); realtime sessions at ` +
      `${r.width}x${r.height}, ${r.fps} fps, ${r.framesPerChunk} frames per chunk; ${r.measuredChunks} chunks measured after ${r.warmupChunks} warm-up`,
    withTargets ? "| measure | value | target |\n|---|---|---|" : "| measure | value |\n|---|---|",
    ...rows.map(([m, v, t]) => (withTargets ? `| ${m} | ${v} | ${t} |` : `| ${m} | ${v} |`)),
  ].join("\n");
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const arg = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const fail = (why: string): never => {
    console.error(`e2e-realtime: ${why}`);
    process.exit(2);
  };
  const preset = (arg("preset") ?? "wan-1.3b") as PresetName;
  if (!PRESET_NAMES.includes(preset)) fail(`--preset must be ${PRESET_NAMES.join(", ")}, got ${preset}`);
  const device = (arg("device") ?? "auto") as E2eOptions["device"];
  if (!["auto", "cuda", "cpu"].includes(device)) fail(`--device must be auto, cuda or cpu, got ${device}`);
  const count = (name: string, fallback?: number) => {
    const v = arg(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a whole number ≥ 1, got ${v}`);
    return n;
  };
  const number = (name: string) => (arg(name) === undefined ? undefined : Number(arg(name)));
  const json = args.includes("--json");
  try {
    const result = await benchE2e({
      model: arg("model"), preset, device, size: arg("size"), chunks: count("chunks", 10)!, warmup: count("warmup"), kino: arg("kino"),
      save: arg("save"), readyTimeoutS: count("ready-timeout", 600)!, log: (line) => console.error(`e2e-realtime: ${line}`),
    });
    const targets = { fps: number("target-fps"), firstChunkS: number("target-first-chunk") };
    console.log(json ? JSON.stringify(result) : formatE2e(result, targets));
    if (!json) console.log(`VERDICT-DATA ${JSON.stringify({ script: "e2e-realtime", ...result, targets })}`);
    // a server that had to be killed, or left workers behind, did not stop cleanly
    if (result.server.exitCode !== 0 || result.server.workersLeft.length) process.exit(1);
  } catch (err) {
    console.error(`e2e-realtime: ${(err as Error).message}`);
    process.exit(1);
  }
}
