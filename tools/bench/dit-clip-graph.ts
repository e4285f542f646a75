// The bidirectional DiT forward of a text-to-video clip as one CUDA graph (src/models/wan-dit-graphed.ts),
// checked and timed at Wan2.1-T2V-1.3B's real size: random bf16 weights made on the device, 832x480,
// 81 frames (a [16, 21, 60, 104] latent, 32760 tokens), classifier-free guidance (a conditional and an
// unconditional forward per step) over a few UniPC steps — the loop wan-t2v.ts runs (sampleGuided) —
// once eagerly and once with the clip's forwards recorded as a graph, from the same noise.
// tools/gpu-check.sh runs it; it prints PASS or FAIL and a figure:
//   1. every forward of the graphed clip (the first records, the others launch) equals the eager
//      one bit for bit, and the final latents are equal;
//   2. seconds per step (both forwards, synced) each way: the first step, and the later steps' median.
// Ends with one VERDICT-DATA line (the check and the figures, as JSON) for tools/gpu-verdicts.ts.
// Exits 1 when a check fails; prints one skipped line and exits 77 without a GPU. `--cpu` runs the same checks on
// the WebAssembly backend with a tiny DiT of the same family at 64x64 and 9 frames (the script's own
// test on a machine without a GPU).
//
//   bun tools/bench/dit-clip-graph.ts [--steps 3] [--frames 81] [--activations bf16|f32] [--cpu]
import { parseDitConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { createSampler } from "../../src/models/samplers.ts";
import { unipcSchedule } from "../../src/models/schedules.ts";
import type { CrossAttnKV } from "../../src/models/wan-dit.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { type DitForwards, GraphedForwards } from "../../src/models/wan-dit-graphed.ts";
import type { ActivationDtype, Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { sampleGuided } from "../../src/pipelines/wan-clips.ts";
import { WAN21_T2V_1_3B_TRANSFORMER } from "./model.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const cpu = process.argv.includes("--cpu");
const steps = Number(arg("steps", "3"));
const frames = Number(arg("frames", cpu ? "9" : "81"));
const activations = arg("activations", "bf16") as ActivationDtype;
if (!Number.isInteger(steps) || steps < 2) throw new Error(`--steps ${steps}: at least 2 (the first step records, the others are timed as launches)`);
if (!Number.isInteger(frames) || (frames - 1) % 4) throw new Error(`--frames ${frames}: a Wan clip has 1 + 4k frames`);
if (activations !== "bf16" && activations !== "f32") throw new Error(`--activations ${activations}: bf16 or f32`);
const TINY = { ...WAN21_T2V_1_3B_TRANSFORMER, num_attention_heads: 2, attention_head_dim: 32, ffn_dim: 128, num_layers: 2, text_dim: 32, freq_dim: 32 };
const config = parseDitConfig(cpu ? TINY : WAN21_T2V_1_3B_TRANSFORMER, cpu ? "tiny Wan" : "Wan2.1-T2V-1.3B", cpu ? 16 : 512);
const [width, height] = cpu ? [64, 64] : [832, 480];
const latentShape = [config.inDim, (frames - 1) / 4 + 1, height / 8, width / 8];
const median = (xs: number[]) => [...xs].sort((a, c) => a - c)[Math.floor(xs.length / 2)] ?? NaN;

let backend: Backend;
try {
  backend = await openBackend(cpu ? "cpu" : "cuda", { log: () => {} });
} catch (e) {
  console.log(`bidirectional DiT graph: skipped, the CUDA backend did not open (${(e as Error).message})`);
  process.exit(77); // skipped: what tools/gpu-check-steps.sh reports as SKIPPED
}
const b = backend;
if (!b.graphs) {
  console.log(`FAIL bidirectional DiT graph: the ${b.name} backend has no graphs`);
  process.exit(1);
}

const dit = await WanDiT.load(new RandomWeights(b, { seed: 1, dtype: "bf16" }), config, { activations });
const rng = new SeededRandom(2);
const context = () => rng.normal(16 * config.textDim).map((v) => 0.1 * v);
const cond = await dit.crossAttnKV(context()), uncond = await dit.crossAttnKV(context());
const noise = rng.normal(latentShape.reduce((a, n) => a * n, 1));

/** The guided clip run by `forwards`: every prediction, seconds per step (its two forwards), the final latent. */
async function clip(forwards: DitForwards) {
  const x = b.upload(noise, latentShape), predictions: Float32Array[] = [], perStep: number[] = [];
  const sampler = createSampler("unipc", b, unipcSchedule(steps, 5), () => {
    throw new Error("UniPC draws no noise");
  });
  await sampleGuided(b, sampler, {
    x, cond, uncond: uncond as CrossAttnKV, guidanceScale: 5,
    predict: async (latent, t, cross) => {
      await b.sync();
      const started = performance.now();
      const v = await forwards.forward(latent, t, cross);
      await b.sync();
      const s = (performance.now() - started) / 1000;
      if (cross === cond) perStep.push(s);
      else perStep[perStep.length - 1]! += s;
      predictions.push(await b.download(v));
      return v;
    },
  });
  sampler.free();
  const latent = await b.download(x);
  b.free(x);
  return { predictions, perStep, latent };
}

const same = (a: Float32Array, c: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
const eager = await clip(dit);
const graphed = new GraphedForwards(dit, { graphs: true });
const launched = await clip(graphed);
const stats = graphed.graph!.stats;
const identical = launched.predictions.filter((p, i) => eager.predictions[i] && same(p, eager.predictions[i]!)).length;
let maxDiff = 0;
for (const [i, p] of launched.predictions.entries()) {
  for (let j = 0; j < p.length; j++) maxDiff = Math.max(maxDiff, Math.abs(p[j]! - eager.predictions[i]![j]!));
}
const ok = stats.disabled === null && identical === eager.predictions.length && identical === 2 * steps && same(launched.latent, eager.latent);
console.log(`${ok ? "PASS" : "FAIL"} bidirectional t2v clip as one graph (${width}x${height}, ${frames} frames, ${latentShape[1]}x${height / 16}x${width / 16} tokens, ` +
  `${activations} activations, ${steps} guided steps): ${identical}/${2 * steps} predictions identical to eager (max abs diff ${maxDiff}), final latent ${same(launched.latent, eager.latent) ? "identical" : "DIFFERS"}; ` +
  `recorded ${stats.recorded}, launched without recording ${stats.replayed}${stats.disabled ? `; disabled: ${stats.disabled}` : ""}`);
const later = (xs: number[]) => median(xs.slice(1));
console.log(`s/step (cond + uncond forward): eager first ${eager.perStep[0]!.toFixed(3)} s, later ${later(eager.perStep).toFixed(3)} s; ` +
  `graph first (recording) ${launched.perStep[0]!.toFixed(3)} s, later (launches) ${later(launched.perStep).toFixed(3)} s; ` +
  `eager / graph ${(later(eager.perStep) / later(launched.perStep)).toFixed(3)}x`);
console.log(`VERDICT-DATA ${JSON.stringify({
  script: "dit-clip-graph", backend: b.name, width, height, frames, steps, activations, ok, identical, predictions: 2 * steps,
  latentIdentical: same(launched.latent, eager.latent), eagerFirstS: eager.perStep[0]!, eagerLaterS: later(eager.perStep),
  graphFirstS: launched.perStep[0]!, graphLaterS: later(launched.perStep),
})}`);
graphed.free();
dit.freeCross(cond);
dit.freeCross(uncond);
dit.free();
b.dispose();
process.exit(ok ? 0 : 1);
