// What overlaps the DiT of chunk i + 1 on a GPU, side by side in one run on one loaded model: the
// readback of chunk i (src/pipelines/readback-overlap.ts, KINO_READBACK_OVERLAP=1; mode "overlap")
// and, separately, its H.264 encode on the worker's encoder thread (src/worker/stream-overlap.ts,
// KINO_STREAM_OVERLAP=1; mode "thread", readback synchronous), each against the synchronous readback
// with the encode inline ("sync"). The default model's realtime stream at 832x480 (frames resampled
// on the device, I420 read back, encoded by the worker's StreamTask as a session's are), runs of each
// mode interleaved. Reports PASS/FAIL that every mode sends the same bytes (every fragment and the
// trailer), then per mode the first chunk's time and the steady interval between chunks. Exits 1 when
// the bytes differ or the backend has no overlapped readback. Ends with one VERDICT-DATA line (the
// same, as JSON) for tools/gpu-verdicts.ts. A step of tools/gpu-check.sh (sized to about 30 s on
// an H200); `bun tools/bench/readback-overlap.ts [--device cuda] [--chunks 12] [--runs 2]`.
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadWanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest, Pipeline } from "../../src/pipelines/pipeline.ts";
import { readbackOverlapWanted } from "../../src/pipelines/readback-overlap.ts";
import { WanStreamingPipeline } from "../../src/pipelines/wan-streaming.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { StreamTask } from "../../src/worker/stream-task.ts";

const { values } = parseArgs({ options: { device: { type: "string", default: "cuda" }, chunks: { type: "string", default: "12" }, runs: { type: "string", default: "2" } } });
const chunks = Number(values.chunks), runs = Number(values.runs);
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

interface Run {
  digest: string;
  firstS: number;
  intervalMs: number;
  totalS: number;
}

type Mode = "sync" | "overlap" | "thread";

async function stream(pipeline: Pipeline, req: GenerationRequest, mode: Mode): Promise<Run> {
  process.env.KINO_READBACK_OVERLAP = mode === "overlap" ? "1" : "0";
  const hash = createHash("sha256"), sent: number[] = [];
  const started = performance.now();
  try {
    const result = await new StreamTask(pipeline, "bench", req, null, (m) => {
      if (m.type !== "chunk") return;
      sent.push(performance.now());
      hash.update(m.chunk.bytes);
    }, mode === "thread").run(new AbortController().signal, () => {});
    hash.update(result.stream!.trailer);
  } finally {
    delete process.env.KINO_READBACK_OVERLAP;
  }
  const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
  return { digest: hash.digest("hex"), firstS: (sent[0]! - started) / 1000, intervalMs: median(gaps), totalS: (performance.now() - started) / 1000 };
}

let backend: Awaited<ReturnType<typeof openBackend>>;
try {
  backend = await openBackend(values.device as "cuda");
} catch (e) {
  console.log(`readback overlap: skipped, the backend did not open (${(e as Error).message})`);
  process.exit(77); // skipped: what tools/gpu-check-steps.sh reports as SKIPPED
}
const model = await loadWanModel(backend, await resolveCheckpoint(resolve(import.meta.dir, "../../models/kino-tiny")));
const pipeline = new WanStreamingPipeline(model);
console.log(`backend: ${backend.description}`);
if (!readbackOverlapWanted(backend, { KINO_READBACK_OVERLAP: "1" })) {
  console.log("FAIL: this backend has no overlapped readback (readbackRaw)");
  process.exit(1);
}
const { defaults, frames_per_chunk: perChunk } = pipeline.card;
const req: GenerationRequest = {
  request_id: "bench_readback", output: "video", task: "t2v", prompt: "a red circle moving right on a blue background", negative_prompt: "",
  width: 832, height: 480, num_frames: 1 + perChunk * chunks, fps: 16, num_inference_steps: defaults.num_inference_steps,
  guidance_scale: defaults.guidance_scale, seed: 5, references: [], extra_params: {},
};
// warm-up: kernels loaded, caches filled, the encoder thread started
for (const mode of ["overlap", "thread"] as const) await stream(pipeline, { ...req, num_frames: 1 + 2 * perChunk }, mode);
const results: Record<Mode, Run[]> = { sync: [], overlap: [], thread: [] };
for (let r = 0; r < runs; r++) for (const mode of ["sync", "overlap", "thread"] as const) results[mode].push(await stream(pipeline, req, mode));
const digests = new Set(Object.values(results).flat().map((x) => x.digest));
console.log(`${digests.size === 1 ? "PASS" : "FAIL"}: overlapped readback and the encoder thread send the synchronous readback's bytes (${runs} runs each, ${1 + chunks} chunks at 832x480)`);
console.log("| chunk i beside chunk i + 1's DiT | first chunk s | steady chunk interval ms | stream s |");
console.log("|---|---|---|---|");
for (const [mode, rs] of Object.entries(results)) {
  console.log(`| ${mode} | ${median(rs.map((x) => x.firstS)).toFixed(3)} | ${median(rs.map((x) => x.intervalMs)).toFixed(1)} | ${median(rs.map((x) => x.totalS)).toFixed(2)} |`);
}
const medians = (rs: Run[]) => ({ firstS: median(rs.map((x) => x.firstS)), intervalMs: median(rs.map((x) => x.intervalMs)), streamS: median(rs.map((x) => x.totalS)) });
console.log(`VERDICT-DATA ${JSON.stringify({ script: "readback-overlap", sameBytes: digests.size === 1, runs, chunks: 1 + chunks, sync: medians(results.sync), overlap: medians(results.overlap), thread: medians(results.thread) })}`);
model.free();
backend.dispose();
process.exit(digests.size === 1 ? 0 : 1);
