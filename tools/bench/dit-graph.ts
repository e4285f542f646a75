// The DiT forward as a CUDA graph and with bf16 activations, checked and timed at Wan2.1-1.3B's real
// size (random bf16 weights made on the device, 832x480, 3-latent-frame chunks of 4680 tokens, 4 steps
// + the context pass, a 21-frame window): four causal models over the same weights — eager and graphs
// (src/models/dit-graph.ts), each with bf16 activations (the CUDA default once verified: dit-activations.ts) and with
// f32 ones — fed the same latents. tools/gpu-check.sh runs it; each check prints PASS or FAIL and a
// figure:
//   1. graph launches give the eager forward's output bit for bit, for both activation dtypes (every
//      step of the chunks in --check, each compared whole);
//   2. the graphs are recorded only while the window fills: each of the two (the denoising forward and
//      the context pass) once per held cache length — 1 + warm-up chunks of them, chunks 0…6 at the
//      defaults — and launched without recording from then on (the RoPE frame offset is read from a
//      device tensor); prints the recordings, in-place updates and launches per stream and per chunk;
//   3. the x0 prediction (x − σ·v) with bf16 activations within X0_BOUND (max abs error relative to
//      max|x0|) of the f32-activation model's, every step of the checked chunks;
//   4. seconds per chunk all four ways: the first chunk, and the median once the window is full, with
//      the host's share (the time until the chunk's last op is enqueued, before the wait for the
//      device: what launch overhead costs, which graphs remove);
//   5. no cudaMalloc in the steady state (MemoryStats.systemAllocations flat from the end of the first
//      chunk that evicts — every model ran it — to the end), and the blocks handed out per
//      denoising step each way;
//   6. the host's launches per steady chunk each way (ops enqueued outside a graph, each a kernel launch
//      of its own or more, plus graph launches: src/runtime/counting-backend.ts), the context pass's
//      share of them, and the ops each graph holds.
// Ends with one VERDICT-DATA line (each check's outcome and the figures, as JSON) for tools/gpu-verdicts.ts.
// Exits 1 when a check fails; prints one skipped line and exits 77 without a GPU. `--cpu` runs the same checks on
// the WebAssembly backend with a DiT of the same shape family but tiny widths at 64x64 (the script's
// own test on a machine without a GPU).
//
// `--layers N` (with --cpu) gives the tiny DiT N layers: Wan-1.3B's 30 show its launch counts.
//
//   bun tools/bench/dit-graph.ts [--chunks 10] [--check 0,1,7] [--window 21] [--cpu [--layers 2]]
import { parseDitConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { warpedSchedule } from "../../src/models/schedules.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { countingBackend } from "../../src/runtime/counting-backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { WAN21_T2V_1_3B_TRANSFORMER, chunkGeometry, wan13bSpec } from "./model.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const chunks = Number(arg("chunks", "10"));
const checked = new Set(arg("check", "0,1,7").split(",").map(Number));
const cpu = process.argv.includes("--cpu");
const TINY = { ...WAN21_T2V_1_3B_TRANSFORMER, num_attention_heads: 2, attention_head_dim: 32, ffn_dim: 128, num_layers: Number(arg("layers", "2")), text_dim: 32, freq_dim: 32 };
const spec = cpu
  ? { ...wan13bSpec(Number(arg("window", "21"))), dit: parseDitConfig(TINY, "tiny Wan", 16), width: 64, height: 64 }
  : wan13bSpec(Number(arg("window", "21")));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
/** "1+1 ×7, 0+0 ×3": equal neighbours counted once. */
const runs = (xs: string[]) => xs.reduce<[string, number][]>((acc, x) => (acc.at(-1)?.[0] === x ? acc.at(-1)![1]++ : acc.push([x, 1]), acc), []).map(([x, n]) => `${x} ×${n}`).join(", ");

let opened: Backend;
try {
  opened = await openBackend(cpu ? "cpu" : "cuda", { log: () => {} });
} catch (e) {
  console.log(`DiT graphs: skipped, the CUDA backend did not open (${(e as Error).message})`);
  process.exit(77); // skipped: what tools/gpu-check-steps.sh reports as SKIPPED
}
const counting = countingBackend(opened);
const b = counting.backend;
if (!b.graphs) {
  console.log(`FAIL DiT graphs: the ${b.name} backend has no graphs (a libkino_cuda.so built without kc_capture_begin …)`);
  process.exit(1);
}

const g = chunkGeometry(spec);
const dit = await WanDiT.load(new RandomWeights(b, { seed: 1, dtype: "bf16" }), spec.dit, { activations: "bf16" });
const dit32 = dit.withActivations("f32");
const rng = new SeededRandom(1);
const context = rng.normal(spec.dit.textLen * spec.dit.textDim).map((v) => 0.1 * v);
const crosses = { bf16: await dit.crossAttnKV(context), f32: await dit32.crossAttnKV(context) };
const opts = { chunkFrames: spec.chunkFrames, windowFrames: spec.windowFrames, sinkFrames: spec.sinkFrames, height: g.latentHeight, width: g.latentWidth };
const models = {
  "eager bf16": new CausalWanDiT(dit, opts), "graphs bf16": new CausalWanDiT(dit, { ...opts, graphs: true }),
  "eager f32": new CausalWanDiT(dit32, opts), "graphs f32": new CausalWanDiT(dit32, { ...opts, graphs: true }),
};
const { timesteps } = warpedSchedule(spec.steps, spec.shift);
const latentShape = [spec.dit.inDim, spec.chunkFrames, g.latentHeight, g.latentWidth];
/** max|x0(bf16 activations) − x0(f32)| / max|x0(f32)| allowed at every checked step: bf16 keeps 8 bits
 *  (2⁻⁸ per rounding); the 2-layer golden DiT stays within 2.5e-3 (test/models/dit-activations.test.ts),
 *  30 layers of residual updates may add up to several times that. */
const X0_BOUND = 2e-2;

type Way = keyof typeof models;
const ways = Object.keys(models) as Way[];
const dtypeOf = (w: Way) => (w.endsWith("bf16") ? "bf16" : "f32");
const seconds = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
/** Seconds until each chunk's last op was enqueued (the host's share of `seconds`). */
const hostSeconds = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
/** Recordings (new or updated) of the denoising and the context graph in each chunk, per graphed way. */
const recordingsPerChunk = Object.fromEntries(ways.map((w) => [w, [] as string[]])) as Record<Way, string[]>;
const recordingsOf = (w: Way) => [models[w].graph, models[w].contextGraph].map((gr) => (gr ? gr.stats.recorded + gr.stats.updated : 0));
/** cudaMalloc calls so far, after each chunk of every model. */
const systemAllocations: number[] = [];
const stepAllocations = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
let compared = 0, differing = 0, maxDiff = 0, x0Steps = 0, x0Worst = 0;
/** Host launches (ops outside graphs + graph launches) of each chunk's forwards, and of its context pass alone. */
const launchesPerChunk = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
const contextLaunchesPerChunk = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
/** Host launches of each chunk's last denoising forward (the others may also set the RoPE offset). */
const lastDenoiseLaunches = Object.fromEntries(ways.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
/** Ops recorded into each graph at its last recording (what one launch runs). */
const opsPerGraph = Object.fromEntries(ways.map((w) => [w, { denoise: 0, context: 0 }])) as Record<Way, { denoise: number; context: number }>;
/** Runs `forward`, adding its host launches to `into` and, when it recorded, its op count to `graphOps`. */
async function counted<T>(forward: () => Promise<T>, into: number[], graphOps: (ops: number) => void): Promise<T> {
  const launches = counting.launches(), recorded = counting.counts.recorded;
  const out = await forward();
  into[into.length - 1]! += counting.launches() - launches;
  if (counting.counts.recorded > recorded) graphOps(counting.counts.recorded - recorded);
  return out;
}

/** One chunk on one model: 4 denoising steps (a sampler-like update of the latent after each) and the
 *  context pass, timed to its last kernel. With `keep`, every step's x0 prediction x − σ·v is
 *  computed on the device and downloaded (after the timing) for the comparisons. */
async function chunk(way: Way, values: Float32Array, keep: boolean): Promise<Float32Array[]> {
  const m = models[way], cross = crosses[dtypeOf(way)], x = b.upload(values, latentShape), kept: Float32Array[] = [];
  const outs: Tensor[] = [];
  await b.sync();
  const recordedBefore = recordingsOf(way);
  launchesPerChunk[way].push(0);
  contextLaunchesPerChunk[way].push(0);
  const started = performance.now();
  for (const t of timesteps) {
    const before = b.memory().allocations;
    const launched = launchesPerChunk[way].at(-1)!;
    const v = (await counted(() => m.forwardChunk(x, t, cross), launchesPerChunk[way], (n) => (opsPerGraph[way].denoise = n)))!;
    if (t === timesteps.at(-1)) lastDenoiseLaunches[way].push(launchesPerChunk[way].at(-1)! - launched);
    stepAllocations[way].push(b.memory().allocations - before);
    if (keep) {
      const x0 = b.alloc(latentShape);
      b.axpby(x0, x, v, 1, -t / 1000); // flow matching: x0 = x − σ·v, σ = t / 1000
      outs.push(x0);
    }
    b.axpby(x, x, v, 1, -0.05);
    b.free(v);
  }
  const contextLaunches: number[] = [0];
  await counted(() => m.forwardChunk(x, 0, cross, true), contextLaunches, (n) => (opsPerGraph[way].context = n));
  launchesPerChunk[way][launchesPerChunk[way].length - 1]! += contextLaunches[0]!;
  contextLaunchesPerChunk[way][contextLaunchesPerChunk[way].length - 1] = contextLaunches[0]!;
  hostSeconds[way].push((performance.now() - started) / 1000);
  await b.sync();
  seconds[way].push((performance.now() - started) / 1000);
  const recordedAfter = recordingsOf(way);
  recordingsPerChunk[way].push(`${recordedAfter[0]! - recordedBefore[0]!}+${recordedAfter[1]! - recordedBefore[1]!}`);
  for (const x0 of outs) {
    kept.push(await b.download(x0));
    b.free(x0);
  }
  b.free(x);
  return kept;
}

const maxAbsDiff = (a: Float32Array, c: Float32Array) => {
  let d = 0;
  for (let j = 0; j < a.length; j++) d = Math.max(d, Math.abs(a[j]! - c[j]!));
  return d;
};

for (let c = 0; c < chunks; c++) {
  const values = rng.normal(latentShape.reduce((a, n) => a * n, 1));
  const keep = checked.has(c);
  const kept = {} as Record<Way, Float32Array[]>;
  for (const w of ways) kept[w] = await chunk(w, values, keep);
  systemAllocations.push(b.memory().systemAllocations);
  for (const dt of ["bf16", "f32"] as const) {
    for (const [i, want] of kept[`eager ${dt}`].entries()) {
      const got = kept[`graphs ${dt}`][i]!;
      compared++;
      const d = maxAbsDiff(got, want);
      if (d !== 0 || !Buffer.from(got.buffer).equals(Buffer.from(want.buffer))) differing++;
      maxDiff = Math.max(maxDiff, d);
    }
  }
  for (const [i, want] of kept["eager f32"].entries()) {
    x0Steps++;
    x0Worst = Math.max(x0Worst, maxAbsDiff(kept["eager bf16"][i]!, want) / want.reduce((m, v) => Math.max(m, Math.abs(v)), 0));
  }
  console.log(`chunk ${c}: ${ways.map((w) => `${w} ${seconds[w][c]!.toFixed(3)} s`).join(", ")}`);
}

let failed = false;
const checks: Record<string, boolean> = {};
const report = (check: string, ok: boolean, line: string) => {
  failed ||= !ok;
  checks[check] = ok;
  console.log(`${ok ? "PASS" : "FAIL"} ${line}`);
};
const stats = (w: Way) => models[w].graph!.stats, contextStats = (w: Way) => models[w].contextGraph!.stats;
const graphed = ["graphs bf16", "graphs f32"] as const;
const disabled = graphed.flatMap((w) => [stats(w).disabled, contextStats(w).disabled]).filter(Boolean);
const described = (st: ReturnType<typeof stats>) => `recorded ${st.recorded}, updated in place ${st.updated}, launched without recording ${st.replayed}`;
report("bitForBit", differing === 0 && compared > 0 && disabled.length === 0,
  `graph launches equal eager forwards bit for bit (bf16 and f32 activations): ${compared - differing}/${compared} predictions identical (max abs diff ${maxDiff})` +
  (disabled.length ? `; disabled: ${disabled.join("; ")}` : ""));
// one recording per held cache length while the window fills (chunks 0 … warm-up), none after
const fillChunks = Math.min(chunks, 1 + g.warmupChunks);
const expectedPerChunk = Array.from({ length: chunks }, (_, c) => (c < fillChunks ? "1+1" : "0+0"));
report("recordings", graphed.every((w) => recordingsPerChunk[w].join() === expectedPerChunk.join()) && chunks > fillChunks,
  `recordings per stream of ${chunks} chunks (denoising forward / context pass), ${fillChunks} expected each, all while the window fills: ` +
  graphed.map((w) => `${w}: ${described(stats(w))} / ${described(contextStats(w))}; per chunk ${runs(recordingsPerChunk[w])}`).join("; "));
report("x0", x0Steps > 0 && x0Worst <= X0_BOUND,
  `x0 prediction with bf16 activations vs f32 activations: max abs err ${x0Worst.toExponential(2)} of max|x0| over ${x0Steps} steps (bound ${X0_BOUND})`);
const steadyFrom = 1 + g.warmupChunks;
const per = (w: Way) => median(seconds[w].slice(steadyFrom));
const hostPer = (w: Way) => median(hostSeconds[w].slice(steadyFrom));
console.log(`chunk time (4 steps + context pass, ${spec.width}x${spec.height}, window ${spec.windowFrames}): first chunk ${ways.map((w) => `${w} ${seconds[w][0]!.toFixed(3)} s`).join(", ")}; ` +
  `steady (chunks ≥ ${steadyFrom}) ${ways.map((w) => `${w} ${per(w).toFixed(4)} s (host ${hostPer(w).toFixed(4)} s)`).join(", ")}; ` +
  `speed-up of bf16 activations (f32 time / bf16 time): eager ${(per("eager f32") / per("eager bf16")).toFixed(3)}x, graphs ${(per("graphs f32") / per("graphs bf16")).toFixed(3)}x; ` +
  `${(g.videoFramesPerChunk / per("graphs bf16")).toFixed(1)} video fps with graphs and bf16 activations`);
// chunk steadyFrom is the first whose denoising forwards see a full window: settled after it
const settled = steadyFrom + 1;
const steady = systemAllocations.slice(settled - 1);
const perStep = (w: Way) => [...new Set(stepAllocations[w].slice(settled * timesteps.length))].join(", ");
report("noSteadyMalloc", steady.length > 1 && new Set(steady).size === 1,
  `no ${cpu ? "memory growth" : "cudaMalloc"} in the steady state: ${cpu ? "wasm memory grows" : "cudaMalloc calls"} so far after chunks ${settled - 1}…${chunks - 1}: ${steady.join(" → ")}; ` +
  `blocks handed out per denoising step: ${ways.map((w) => `${w} ${perStep(w)}`).join(", ")} (graphs: every steady step a launch)`);

const steadyLaunches = (w: Way) => runs(launchesPerChunk[w].slice(settled).map(String));
const steadyContext = (w: Way) => runs(contextLaunchesPerChunk[w].slice(settled).map(String));
console.log(`host launches per steady chunk (chunks ≥ ${settled}: ${timesteps.length} denoising forwards + the context pass; ops enqueued outside a graph + graph launches), ` +
  `the context pass's share in brackets: ${ways.map((w) => `${w} ${steadyLaunches(w)} (${steadyContext(w)})`).join(", ")}; ` +
  `ops in one launch of the steady graphs, denoising forward / context pass: ${graphed.map((w) => `${w} ${opsPerGraph[w].denoise} / ${opsPerGraph[w].context}`).join(", ")}`);

// The context pass computes the K/V alone (wan-dit-causal.ts): against a full forward at t = 0 over the
// same chunk, it skips the last block after its K/V projection — the q third of that projection, the
// self-attention over the window, the output projection, the cross-attention, the FFN — and the head.
{
  const { dim, ffnDim, textLen, outDim, patch } = spec.dit, m = models["eager bf16"];
  const L = m.chunkTokens, window = m.cache.shape.windowFrames * m.cache.shape.tokensPerFrame;
  const q = 2 * L * dim * dim;
  const skipped = q + 4 * L * window * dim + 2 * L * dim * dim + 2 * L * dim * dim + 4 * L * textLen * dim + 2 * L * dim * dim +
    4 * L * dim * ffnDim + 2 * L * dim * outDim * patch[0] * patch[1] * patch[2];
  const gflop = (f: number) => (f / 1e9).toPrecision(3);
  console.log(`context pass (eager bf16, steady chunk): ${contextLaunchesPerChunk["eager bf16"][settled]} launches (the cache's eviction included), ` +
    `a denoising forward ${lastDenoiseLaunches["eager bf16"][settled]}; skipped against a full forward at t = 0: ${gflop(skipped)} GFLOP ` +
    `(the last block's q projection ${gflop(q)}, its self-attention over ${window} keys, output projection, cross-attention and FFN, and the head)`);
}

const byWay = (f: (w: Way) => number) => Object.fromEntries(ways.map((w) => [w, f(w)]));
console.log(`VERDICT-DATA ${JSON.stringify({
  script: "dit-graph", backend: b.name, width: spec.width, height: spec.height, chunks, steadyFrom, checks, compared, differing, x0Worst, x0Bound: X0_BOUND,
  videoFramesPerChunk: g.videoFramesPerChunk, firstS: byWay((w) => seconds[w][0]!), steadyS: byWay(per), hostSteadyS: byWay(hostPer),
})}`);

for (const w of ways) models[w].free();
dit.freeCross(crosses.bf16);
dit32.freeCross(crosses.f32);
dit.free();
b.dispose();
process.exit(failed ? 1 : 0);
