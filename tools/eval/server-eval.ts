// kino-tiny's evaluation through the real server, as a user reaches it: REST jobs for the 40 held-out
// prompts, the same prompt and seed twice (identical bytes?) and another seed (different bytes?), and
// two realtime sessions over the WebSocket that switch "a red circle …" to "a blue circle …" after
// chunk 2 with transition_chunks 3 and 0. The videos land in build/eval/ with a manifest.json that
// tools/eval/score.py decodes and scores (run here at the end).
//
//   bun tools/eval/server-eval.ts [--model builtin:kino-tiny] [--frames 29] [--out build/eval]
//                                 [--session-seeds 7]   (comma-separated: the transitions once per seed)
//                                 [--steps N]   (num_inference_steps of every job and session; default: the model's)
//                                 [--guidance G] (guidance_scale of every job and session; default: the model's)
//                                 [--video-seeds 0]   (comma-separated: every held-out prompt once per seed;
//                                                      one clip is 2.5 % of a 40-prompt score)
//                                 [--size 64x64]  (WxH of every job and session: 480x272 asks for the
//                                                  16:9 the model renders at its nearest native size)
//                                 [--first-frames]  (image-to-video: each held-out combination's first
//                                                  frame, rendered at --size, as image_reference and a prompt that says only
//                                                  how it moves; no sessions: they carry no image)
//                                 [--full-prompts]  (with --first-frames: the whole canonical caption
//                                                  beside the image instead of the motion alone)
//                                 [--no-prompt-extend]  (with --first-frames: extra_params.prompt_extend
//                                                  false, the prompt as sent, not extended from the image)
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { startServer } from "../../src/http/server.ts";

const ROOT = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const out = resolve(arg("out", join(ROOT, "build/eval")));
const numFrames = Number(arg("frames", "29"));
const model = arg("model", "builtin:kino-tiny");
const sessionSeeds = arg("session-seeds", "7").split(",").map(Number);
const videoSeeds = arg("video-seeds", "0").split(",").map(Number);
const stepsArg = arg("steps", "");
const guidanceArg = arg("guidance", "");
const size = arg("size", "64x64");
const firstFrames = args.includes("--first-frames");
const extendOff = args.includes("--no-prompt-extend") ? { extra_params: { prompt_extend: false } } : {};
// the sampling settings every job and session asks for (none: the model's defaults)
const sampling = {
  ...(stepsArg ? { num_inference_steps: Number(stepsArg) } : {}),
  ...(guidanceArg ? { guidance_scale: Number(guidanceArg) } : {}),
};
// Debian's interpreter has numpy (python3-numpy); a python3 earlier on PATH may not
const PY = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
mkdirSync(out, { recursive: true });

interface PlanItem { id: string; prompt: string; truth: Record<string, string>; reference?: string }
// the first frames are rendered at the size asked for, as a client sends its picture at the video's size
const planArgs = firstFrames ? ["--first-frames", join(out, "first-frames"), "--frame-size", size, ...(args.includes("--full-prompts") ? ["--full-prompts"] : [])] : [];
const plan: PlanItem[] = JSON.parse(Bun.spawnSync([PY, join(ROOT, "tools/eval/plan.py"), ...planArgs], { stderr: "inherit" }).stdout.toString());

const server = await startServer(loadServeConfig({
  overrides: { "generator.model_path": model, "server.port": "0", "server.host": "127.0.0.1", "server.output_dir": join(out, "server") },
}), () => {});
const url = server.url;

/** A finished job's video, and the prompt the server ran it on where it extended the request's. */
async function job(prompt: string, seed: number, reference?: string): Promise<{ bytes: Uint8Array; revised?: string }> {
  const image = reference && { image_reference: { image_url: `data:image/png;base64,${Buffer.from(await Bun.file(reference).bytes()).toString("base64")}` }, ...extendOff };
  const res = await fetch(`${url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, size, num_frames: numFrames, seed, ...sampling, ...image }),
  });
  const created = await res.json();
  if (!res.ok) throw new Error(`create failed: ${JSON.stringify(created)}`);
  let revised: string | undefined;
  for (;;) {
    const state = await (await fetch(`${url}/v1/videos/${created.id}`)).json();
    if (state.status === "completed") {
      revised = state.revised_prompt;
      break;
    }
    if (state.status === "failed") throw new Error(`job failed: ${JSON.stringify(state.error)}`);
    await Bun.sleep(100);
  }
  return { bytes: new Uint8Array(await (await fetch(`${url}/v1/videos/${created.id}/content`)).arrayBuffer()), revised };
}

const video = async (prompt: string, seed: number, reference?: string) => (await job(prompt, seed, reference)).bytes;

interface ChunkMeta { generation_chunk_index: number; num_frames: number; started_event_ids: string[] }

/** A realtime session that switches prompts after `switchAfter` media chunks; returns the stream. */
async function session(name: string, from: string, to: string, transitionChunks: number, seed: number, switchAfter = 2) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/realtime/video`);
  ws.binaryType = "arraybuffer";
  const bytes: Uint8Array[] = [];
  const chunks: ChunkMeta[] = [];
  let media = 0;
  await new Promise<void>((done, fail) => {
    ws.onopen = () => ws.send(JSON.stringify({ type: "session.start", prompt: from, size, num_frames: numFrames, seed, ...sampling }));
    ws.onerror = () => fail(new Error(`${name}: WebSocket error`));
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") return void bytes.push(new Uint8Array(e.data as ArrayBuffer));
      const m = JSON.parse(e.data);
      if (m.type === "error") return fail(new Error(`${name}: ${JSON.stringify(m)}`));
      if (m.type === "video.chunk_metadata" && m.kind === "media") {
        chunks.push(m);
        if (++media === switchAfter) {
          ws.send(JSON.stringify({ type: "session.interaction", interaction: { event_id: "to-blue", event: { prompt: to }, transition_chunks: transitionChunks } }));
        }
      }
      if (m.type === "session.done") done();
    };
  });
  ws.close();
  const file = join(out, `${name}.mp4`);
  writeFileSync(file, Buffer.concat(bytes));
  const first = chunks.find((c) => c.started_event_ids.includes("to-blue"));
  if (!first) throw new Error(`${name}: the prompt update was never applied`);
  return { name, file, transition_chunks: transitionChunks, first_affected_chunk: first.generation_chunk_index, chunks };
}

try {
  const heldout = [];
  const started = performance.now();
  for (const seed of videoSeeds) {
    for (const item of plan) {
      const file = join(out, videoSeeds.length > 1 ? `${item.id}-seed${seed}.mp4` : `${item.id}.mp4`);
      const { bytes, revised } = await job(item.prompt, seed, item.reference);
      writeFileSync(file, bytes);
      heldout.push({ ...item, seed, file, ...(revised !== undefined ? { revised_prompt: revised } : {}) });
      process.stdout.write(`\rheld-out ${heldout.length}/${plan.length * videoSeeds.length}`);
    }
  }
  console.log(` (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  const extended = heldout.filter((h) => h.revised_prompt !== undefined);
  if (extended.length) {
    const named = extended.filter((h) => h.revised_prompt!.includes(`${h.truth.color} ${h.truth.shape}`)).length;
    console.log(`prompts extended from the image: ${extended.length}, naming the object's color and shape right: ${named}`);
  }
  const prompt = "a red circle moving right on a black background";
  const [a, b, c] = [await video(prompt, 1), await video(prompt, 1), await video(prompt, 2)];
  const same = (x: Uint8Array, y: Uint8Array) => x.length === y.length && x.every((v, i) => v === y[i]);
  const determinism = { same_seed_identical_bytes: same(a, b), other_seed_different_bytes: !same(a, c) };
  const transitions = [];
  for (const seed of firstFrames ? [] : sessionSeeds) {
    for (const n of [3, 0]) {
      const name = sessionSeeds.length > 1 ? `transition-${n}-seed${seed}` : `transition-${n}`;
      transitions.push(await session(name, prompt, "a blue circle moving right on a black background", n, seed));
    }
  }
  const manifest = join(out, "manifest.json");
  writeFileSync(manifest, JSON.stringify({ model, size, num_frames: numFrames, ...sampling, heldout, determinism, transitions }, null, 1));
  const score = Bun.spawnSync([PY, join(ROOT, "tools/eval/score.py"), manifest], { stdout: "inherit", stderr: "inherit" });
  process.exitCode = score.exitCode;
} finally {
  await server.stop();
}
