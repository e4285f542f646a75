// npm run bench:serve — the default model as users meet it, through an in-process server:
//  1. streaming: a realtime session of `--seconds` (default 4) at the model's native size and fps;
//     time from session.start to the first media chunk, and generated video seconds per wall second
//     (≥ 1.0 = faster than real time);
//  2. one-shot: POST /v1/videos/sync for a clip of the same length, wall time to the MP4;
//  3. where the model takes an image (its card lists i2v): the same one-shot from a first frame (one
//     the model drew from text), wall time to the MP4.
// Each measured `--runs` times (default 3), the median printed. The WASM backend uses min(2, cores)
// threads. `--size WxH` asks every request for that size instead of the model's native one (kino-tiny
// renders 64x64 and resamples on the backend); `--no-prompt-extend` sends the image request with
// extra_params.prompt_extend false.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { startServer } from "../../src/http/server.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const seconds = Number(arg("seconds", "4"));
const runs = Number(arg("runs", "3"));
const size = arg("size", "");
// the image request with the prompt as sent, not extended from the image (a model with an image reader)
const extendOff = args.includes("--no-prompt-extend") ? { extra_params: { prompt_extend: false } } : {};
const sized = size ? { size } : {};
const overrides: Record<string, string> = {
  "server.port": "0",
  "server.host": "127.0.0.1",
  "generator.model_path": arg("model", "builtin:kino-tiny"),
};

const outputDir = mkdtempSync(join(tmpdir(), "kino-bench-serve-"));
const server = await startServer(loadServeConfig({ overrides: { ...overrides, "server.output_dir": outputDir } }), () => {});
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

/** One realtime session: [first media chunk after session.start (s), video s per wall s, frames]. */
async function stream(seed: number): Promise<[number, number, number]> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/realtime/video`);
  let started = 0, first = 0, frames = 0, fps = 0;
  await new Promise<void>((done, fail) => {
    ws.onopen = () => {
      started = performance.now();
      ws.send(JSON.stringify({ type: "session.start", prompt: "a red circle moving right on a black background", seconds: String(seconds), seed, ...sized }));
    };
    ws.onerror = () => fail(new Error("WebSocket error"));
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      const m = JSON.parse(e.data);
      if (m.type === "error") fail(new Error(JSON.stringify(m)));
      if (m.type === "video.start") fps = m.config.fps;
      if (m.type === "video.chunk_metadata" && m.kind === "media") {
        if (!first) first = performance.now();
        frames += m.num_frames;
      }
      if (m.type === "session.done") done();
    };
  });
  const wall = (performance.now() - started) / 1000;
  ws.close();
  return [(first - started) / 1000, frames / fps / wall, frames];
}

async function oneShot(seed: number, image?: string): Promise<number> {
  const started = performance.now();
  const prompt = image ? "bouncing" : "a blue square bouncing on a yellow background";
  const res = await fetch(`${server.url}/v1/videos/sync`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, seconds: String(seconds), seed, ...sized, ...(image ? { image_reference: { image_url: image }, ...extendOff } : {}) }),
  });
  if (!res.ok) throw new Error(`sync generation failed: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return (performance.now() - started) / 1000;
}

try {
  await stream(0); // warm-up: the worker's first forward allocates and packs weights
  const streams: [number, number, number][] = [];
  for (let i = 0; i < runs; i++) streams.push(await stream(i + 1));
  const shots: number[] = [];
  for (let i = 0; i < runs; i++) shots.push(await oneShot(i + 1));
  console.log(`model ${overrides["generator.model_path"]}, ${seconds} s clips${size ? ` at ${size}` : ""}, median of ${runs} runs`);
  console.log(`streaming: first chunk after ${median(streams.map((s) => s[0])).toFixed(3)} s; ${median(streams.map((s) => s[1])).toFixed(2)}× real time (${streams[0]![2]} frames)`);
  console.log(`one-shot /v1/videos/sync: ${median(shots).toFixed(2)} s for ${seconds} s of video`);
  const models = await (await fetch(`${server.url}/v1/models`)).json();
  const card = (await (await fetch(`${server.url}/v1/models/${models.data[0].id}`)).json()).card;
  if (card.tasks.includes("i2v")) {
    const res = await fetch(`${server.url}/v1/images`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a blue square on a yellow background", response_format: "b64_json", seed: 0 }),
    });
    const image = `data:image/png;base64,${(await res.json()).data[0].b64_json}`;
    const fromImage: number[] = [];
    for (let i = 0; i < runs; i++) fromImage.push(await oneShot(i + 1, image));
    console.log(`one-shot from an image: ${median(fromImage).toFixed(2)} s for ${seconds} s of video (${(seconds / median(fromImage)).toFixed(2)}× real time)`);
  }
} finally {
  await server.stop();
  rmSync(outputDir, { recursive: true, force: true });
}
