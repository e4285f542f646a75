// The image models' part of `bench:model`'s GPU half (tools/bench/model.ts): at the real geometry, with
// random weights made on the device (no checkpoint file),
// - Wan2.2 TI2V-5B at 1280x704, 121 frames (latent 48×31×44×80, 27 280 tokens): seconds per denoising
//   step of the image-to-video loop the pipeline runs (two guided forwards with frame 0 at t = 0,
//   UniPC, the first frame put back), then seconds of the Wan2.2 VAE decode — the first latent frame
//   and `vaeLatents − 1` more are decoded, one per call as the pipeline streams them, and the 121-frame
//   total is the first plus 30 × the median of the rest;
// - Wan2.1 I2V-14B at 832x480, 81 frames (32 760 tokens, 257 CLIP tokens beside the 512 text rows):
//   seconds per guided denoising step with the 36-channel input.
// Each DiT runs `steps` steps (the first pays for the first use of every kernel) and reports the last.
//
//   bun tools/bench/image-models.ts [--steps 2] [--vae-latents 3]   (on CUDA; tools/gpu-check.sh's
//                                    image-models step; without a GPU it prints one skipped line, exit 77)
import { type Json, parseDitConfig, parseVaeConfig, type WanDitConfig } from "../../src/models/configs.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { createSampler } from "../../src/models/samplers.ts";
import { unipcSchedule } from "../../src/models/schedules.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WanVaeDecoder } from "../../src/models/wan-vae.ts";
import { type GuidedRun, sampleGuided } from "../../src/pipelines/wan-clips.ts";
import { conditionedPredict } from "../../src/pipelines/wan-i2v.ts";
import { firstFrameRun } from "../../src/pipelines/wan-ti2v.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";

/** wan/configs/wan_ti2v_5B.py as WanModel arguments. */
export const WAN22_TI2V_5B = {
  model_type: "ti2v", patch_size: [1, 2, 2], dim: 3072, ffn_dim: 14336, freq_dim: 256, num_heads: 24, num_layers: 30, in_dim: 48, out_dim: 48,
  text_dim: 4096, text_len: 512, qk_norm: true, cross_attn_norm: true, eps: 1e-6, window_size: [-1, -1],
};
/** wan/configs/wan_i2v_14B.py as WanModel arguments (img_emb takes ViT-H's 1280-wide features). */
export const WAN21_I2V_14B = {
  model_type: "i2v", patch_size: [1, 2, 2], dim: 5120, ffn_dim: 13824, freq_dim: 256, num_heads: 40, num_layers: 40, in_dim: 36, out_dim: 16,
  text_dim: 4096, text_len: 512, qk_norm: true, cross_attn_norm: true, eps: 1e-6, window_size: [-1, -1],
};
/** Wan2.2_VAE.pth's shape: base width 160, decoder width 256, 48 latent channels. */
export const WAN22_VAE = { base_dim: 160, decoder_base_dim: 256, z_dim: 48, is_residual: true, patch_size: 2, in_channels: 12, out_channels: 12 };

export interface DenoiseSpec {
  name: string;
  dit: WanDitConfig;
  /** The latent [C, T, h, w] being denoised. */
  latent: [number, number, number, number];
  /** CLIP tokens of an i2v model (257 for ViT-H/14 at 224), 0 otherwise. */
  imageTokens: number;
}

export function ti2v5bSpec(): DenoiseSpec {
  return { name: "Wan2.2 TI2V-5B 1280x704, 121 frames", dit: parseDitConfig(WAN22_TI2V_5B, "wan_ti2v_5B.py"), latent: [48, 31, 44, 80], imageTokens: 0 };
}

export function i2v14bSpec(): DenoiseSpec {
  return { name: "Wan2.1 I2V-14B 832x480, 81 frames", dit: parseDitConfig(WAN21_I2V_14B, "wan_i2v_14B.py"), latent: [16, 21, 60, 104], imageTokens: 257 };
}

export function tokensOf(s: DenoiseSpec): number {
  const [, T, h, w] = s.latent, [pt, ph, pw] = s.dit.patch;
  return (T / pt) * (h / ph) * (w / pw);
}

/** TFLOP of one guided step (two forwards): every linear layer on the tokens, self-attention over all
 *  of them, cross-attention over the text rows (and the image tokens). Embeddings and head left out. */
export function stepTflop(s: DenoiseSpec): number {
  const { dim: d, ffnDim, numLayers, textLen } = s.dit, L = tokensOf(s);
  const linear = 2 * L * (6 * d * d + 2 * d * ffnDim);
  const attention = 4 * L * (L + textLen + s.imageTokens) * d;
  return (2 * numLayers * (linear + attention)) / 1e12;
}

export interface DenoiseResult {
  parameters: number;
  tokens: number;
  /** Seconds of each step, in order (the first includes every kernel's first use). */
  steps: number[];
  tflop: number;
  finite: boolean;
}

/** `steps` guided UniPC steps (of a 50-step, shift-5 schedule) of the spec's image-to-video loop. */
export async function benchDenoise(b: Backend, s: DenoiseSpec, steps = 2, seed = 1): Promise<DenoiseResult> {
  const weights = new RandomWeights(b, { seed, dtype: "bf16" });
  const dit = await WanDiT.load(weights, s.dit);
  const rng = new SeededRandom(seed);
  const context = () => rng.normal(s.dit.textLen * s.dit.textDim).map((v) => 0.1 * v);
  const features = s.imageTokens ? rng.normal(s.imageTokens * s.dit.imageDim!) : undefined;
  const cond = await dit.crossAttnKV(context(), undefined, features), uncond = await dit.crossAttnKV(context(), undefined, features);
  const [C, T, h, w] = s.latent, owned: Tensor[] = [];
  const upload = (shape: number[]) => {
    const t = b.upload(rng.normal(shape.reduce((a, c) => a * c, 1)), shape);
    owned.push(t);
    return t;
  };
  const x = upload([C, T, h, w]);
  const sampler = createSampler("unipc", b, unipcSchedule(50, 5), () => {
    throw new Error("UniPC draws no noise");
  });
  const run: GuidedRun = { x, cond, uncond, guidanceScale: 5, stop: steps, predict: (l, t, c) => dit.forward(l, t, c) };
  if (s.dit.kind === "i2v") run.predict = conditionedPredict(dit, upload([s.dit.inDim - s.dit.outDim, T, h, w]));
  if (s.dit.kind === "ti2v") Object.assign(run, firstFrameRun(dit, x, upload([C, 1, h, w])));
  const times: number[] = [], inject = run.afterStep;
  let last = performance.now();
  run.afterStep = async (latent, i) => {
    await inject?.(latent, i);
    await b.sync();
    const now = performance.now();
    times.push((now - last) / 1000);
    last = now;
  };
  try {
    await sampleGuided(b, sampler, run);
    const finite = (await b.download(x)).every(Number.isFinite);
    return { parameters: weights.parameters, tokens: tokensOf(s), steps: times, tflop: stepTflop(s), finite };
  } finally {
    sampler.free();
    b.free(...owned);
    dit.freeCross(cond);
    dit.freeCross(uncond);
    dit.free();
  }
}

export interface DecodeResult {
  parameters: number;
  /** Seconds per decoded latent frame, in order (frame 0 gives 1 video frame, the others 4 each). */
  latents: number[];
  /** The first latent plus (total − 1) × the median of the others. */
  estimate: number;
  totalLatents: number;
  finite: boolean;
}

/** The Wan2.2 VAE decoder at `vae` widths, streaming `decoded` of `totalLatents` latent frames of h×w. */
export async function benchVae22Decode(b: Backend, h: number, w: number, decoded: number, totalLatents: number, vae: Json = WAN22_VAE, seed = 1): Promise<DecodeResult> {
  const cfg = parseVaeConfig(vae, "Wan2.2_VAE");
  const weights = new RandomWeights(b, { seed, dtype: "f32" }); // the original decodes in fp32
  const decoder = await WanVaeDecoder.load(weights, cfg);
  const rng = new SeededRandom(seed), times: number[] = [];
  const z = b.upload(rng.normal(cfg.zDim * h * w), [cfg.zDim, 1, h, w]);
  let finite = true;
  try {
    decoder.reset();
    for (let i = 0; i < decoded; i++) {
      const started = performance.now();
      const video = await decoder.decode(z);
      await b.sync();
      times.push((performance.now() - started) / 1000);
      if (i === decoded - 1) finite = (await b.download(video)).every(Number.isFinite);
      b.free(video);
    }
  } finally {
    b.free(z);
    decoder.free();
  }
  const rest = times.slice(1).sort((a, c) => a - c), median = rest[Math.floor(rest.length / 2)] ?? times[0]!;
  return { parameters: weights.parameters, latents: times, estimate: times[0]! + (totalLatents - 1) * median, totalLatents, finite };
}

/** Prints the three measurements (called by model.ts's GPU half with the CUDA backend). */
export async function benchImageModels(b: Backend, steps: number, vaeLatents: number): Promise<void> {
  for (const spec of [ti2v5bSpec(), i2v14bSpec()]) {
    const r = await benchDenoise(b, spec, steps);
    const s = r.steps[r.steps.length - 1]!;
    console.log(`${spec.name} — DiT (random bf16 weights, ${(r.parameters / 1e9).toFixed(2)} B parameters), ${r.tokens} tokens, guidance (2 forwards / step): ` +
      `steps ${r.steps.map((t) => t.toFixed(2)).join(", ")} s → ${s.toFixed(2)} s / step | ≈${r.tflop.toFixed(0)} TFLOP / step → ${(r.tflop / s).toFixed(0)} TFLOP/s | finite: ${r.finite}`);
    if (spec.dit.kind !== "ti2v") continue;
    const [, T, h, w] = spec.latent;
    const d = await benchVae22Decode(b, h, w, vaeLatents, T);
    console.log(`${spec.name} — Wan2.2 VAE decode (random f32 weights, ${(d.parameters / 1e6).toFixed(0)} M parameters): latent frames ${d.latents.map((t) => t.toFixed(2)).join(", ")} s ` +
      `→ ${d.totalLatents} latent frames (121 video frames) ≈ ${d.estimate.toFixed(1)} s${vaeLatents < T ? ` (first + ${T - 1} × median of the next ${vaeLatents - 1})` : ""} | finite: ${d.finite}`);
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : fallback;
  };
  let backend: Backend;
  try {
    backend = await openBackend("cuda", { log: () => {} });
  } catch (e) {
    console.log(`image models — skipped: the CUDA backend did not open (${(e as Error).message})`);
    process.exit(77); // skipped: what tools/gpu-check-steps.sh reports as SKIPPED
  }
  try {
    console.log(`image models — ${backend.description}`);
    await benchImageModels(backend, Number(arg("steps", "2")), Number(arg("vae-latents", "3")));
  } finally {
    backend.dispose();
  }
}
