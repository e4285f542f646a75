// The DiT forward as a CUDA graph, checked and timed at Wan2.1-1.3B's real size (random bf16 weights
// made on the device, 832x480, 3-latent-frame chunks of 4680 tokens, 4 steps + the context pass, a
// 21-frame window): two causal models over the same weights, one running its denoising forwards
// eagerly and one as graphs (src/models/dit-graph.ts), fed the same latents. tools/gpu-check.sh runs
// it; each check prints PASS or FAIL and a figure:
//   1. graph launches give the eager forward's output bit for bit (every step of the chunks in
//      --check, each compared whole);
//   2. seconds per chunk both ways: the first chunk, and the median once the window is full;
//   3. no cudaMalloc in the steady state (MemoryStats.systemAllocations flat from the end of the first
//      chunk that evicts — both models ran it — to the end), and the blocks handed out per
//      denoising step both ways.
// Exits 1 when a check fails; prints one skipped line without a GPU. `--cpu` runs the same checks on
// the WebAssembly backend with a DiT of the same shape family but tiny widths at 64x64 (the script's
// own test where no GPU is lent).
//
//   bun tools/bench/dit-graph.ts [--chunks 10] [--check 0,1,7] [--window 21] [--cpu]
import { parseDitConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { warpedSchedule } from "../../src/models/schedules.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { WAN21_T2V_1_3B_TRANSFORMER, chunkGeometry, wan13bSpec } from "./model.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const chunks = Number(arg("chunks", "10"));
const checked = new Set(arg("check", "0,1,7").split(",").map(Number));
const cpu = process.argv.includes("--cpu");
const TINY = { ...WAN21_T2V_1_3B_TRANSFORMER, num_attention_heads: 2, attention_head_dim: 32, ffn_dim: 128, num_layers: 2, text_dim: 32, freq_dim: 32 };
const spec = cpu
  ? { ...wan13bSpec(Number(arg("window", "21"))), dit: parseDitConfig(TINY, "tiny Wan", 16), width: 64, height: 64 }
  : wan13bSpec(Number(arg("window", "21")));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

let backend: Backend;
try {
  backend = await openBackend(cpu ? "cpu" : "cuda", { log: () => {} });
} catch (e) {
  console.log(`DiT graphs: skipped, the CUDA backend did not open (${(e as Error).message})`);
  process.exit(0);
}
const b = backend;
if (!b.graphs) {
  console.log(`FAIL DiT graphs: the ${b.name} backend has no graphs (a libkino_cuda.so built without kc_capture_begin …)`);
  process.exit(1);
}

const g = chunkGeometry(spec);
const dit = await WanDiT.load(new RandomWeights(b, { seed: 1, dtype: "bf16" }), spec.dit);
const rng = new SeededRandom(1);
const cross = await dit.crossAttnKV(rng.normal(spec.dit.textLen * spec.dit.textDim).map((v) => 0.1 * v));
const opts = { chunkFrames: spec.chunkFrames, windowFrames: spec.windowFrames, sinkFrames: spec.sinkFrames, height: g.latentHeight, width: g.latentWidth };
const models = { eager: new CausalWanDiT(dit, opts), graphs: new CausalWanDiT(dit, { ...opts, graphs: true }) };
const { timesteps } = warpedSchedule(spec.steps, spec.shift);
const latentShape = [spec.dit.inDim, spec.chunkFrames, g.latentHeight, g.latentWidth];

type Way = keyof typeof models;
const seconds: Record<Way, number[]> = { eager: [], graphs: [] };
/** cudaMalloc calls so far, after each chunk of both models. */
const systemAllocations: number[] = [];
const stepAllocations: Record<Way, number[]> = { eager: [], graphs: [] };
let compared = 0, differing = 0, maxDiff = 0;

/** One chunk on one model: 4 denoising steps (a sampler-like update of the latent after each) and the
 *  context pass, timed to its last kernel. With `keep`, every step's prediction is downloaded (after
 *  the timing) for the comparison. */
async function chunk(way: Way, values: Float32Array, keep: boolean): Promise<Float32Array[]> {
  const m = models[way], x = b.upload(values, latentShape), kept: Float32Array[] = [];
  const outs = [];
  await b.sync();
  const started = performance.now();
  for (const t of timesteps) {
    const before = b.memory().allocations;
    const v = (await m.forwardChunk(x, t, cross))!;
    stepAllocations[way].push(b.memory().allocations - before);
    b.axpby(x, x, v, 1, -0.05);
    if (keep) outs.push(v);
    else b.free(v);
  }
  await m.forwardChunk(x, 0, cross, true);
  await b.sync();
  seconds[way].push((performance.now() - started) / 1000);
  for (const v of outs) {
    kept.push(await b.download(v));
    b.free(v);
  }
  b.free(x);
  return kept;
}

for (let c = 0; c < chunks; c++) {
  const values = rng.normal(latentShape.reduce((a, n) => a * n, 1));
  const keep = checked.has(c);
  const eager = await chunk("eager", values, keep);
  const graphs = await chunk("graphs", values, keep);
  systemAllocations.push(b.memory().systemAllocations);
  for (const [i, want] of eager.entries()) {
    const got = graphs[i]!;
    compared++;
    let d = 0;
    for (let j = 0; j < want.length; j++) d = Math.max(d, Math.abs(got[j]! - want[j]!));
    if (d !== 0 || !Buffer.from(got.buffer).equals(Buffer.from(want.buffer))) differing++;
    maxDiff = Math.max(maxDiff, d);
  }
  console.log(`chunk ${c}: eager ${seconds.eager[c]!.toFixed(3)} s, graphs ${seconds.graphs[c]!.toFixed(3)} s`);
}

const stats = models.graphs.graph!.stats;
let failed = false;
const report = (ok: boolean, line: string) => {
  failed ||= !ok;
  console.log(`${ok ? "PASS" : "FAIL"} ${line}`);
};
report(differing === 0 && compared > 0 && stats.disabled === null,
  `graph launches equal eager forwards bit for bit: ${compared - differing}/${compared} predictions identical (max abs diff ${maxDiff}); ` +
  `graphs recorded ${stats.recorded}, updated in place ${stats.updated}, launched without recording ${stats.replayed}${stats.disabled ? `; disabled: ${stats.disabled}` : ""}`);
const steadyFrom = 1 + g.warmupChunks;
const per = (w: Way) => median(seconds[w].slice(steadyFrom));
console.log(`chunk time (4 steps + context pass, ${spec.width}x${spec.height}, window ${spec.windowFrames}): first chunk eager ${seconds.eager[0]!.toFixed(3)} s, graphs ${seconds.graphs[0]!.toFixed(3)} s; ` +
  `steady (chunks ≥ ${steadyFrom}) eager ${per("eager").toFixed(3)} s, graphs ${per("graphs").toFixed(3)} s (${(per("eager") / per("graphs")).toFixed(3)}x), ` +
  `${(g.videoFramesPerChunk / per("graphs")).toFixed(1)} video fps with graphs`);
// chunk steadyFrom is the first to evict (and makes the cache's eviction buffer): settled after it
const settled = steadyFrom + 1;
const steady = systemAllocations.slice(settled - 1);
const perStep = (w: Way) => [...new Set(stepAllocations[w].slice(settled * timesteps.length))].join(", ");
report(steady.length > 1 && new Set(steady).size === 1,
  `no ${cpu ? "memory growth" : "cudaMalloc"} in the steady state: ${cpu ? "wasm memory grows" : "cudaMalloc calls"} so far after chunks ${settled - 1}…${chunks - 1}: ${steady.join(" → ")}; ` +
  `blocks handed out per denoising step: eager ${perStep("eager")}, graphs ${perStep("graphs")} (a recording step, then launches)`);

models.eager.free();
models.graphs.free();
dit.freeCross(cross);
dit.free();
b.dispose();
process.exit(failed ? 1 : 0);
