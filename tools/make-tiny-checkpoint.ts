// Writes a tiny random-weight Wan checkpoint in the diffusers layout kino-tiny uses (model_index.json;
// transformer/ with diffusers key names and a "kino" object; text_encoder/ with transformers UMT5
// names; a word-level tokenizer/tokenizer.json; vae/ with Wan key names, or with diffusers
// AutoencoderKLWan names as the *-Diffusers releases ship it (--vae-layout diffusers); scheduler/). Tests load it
// through loadPipeline to prove the whole path produces frames; it is also a quick way to try the
// server on a real (if meaningless) checkpoint. `--preset kino-tiny` writes kino-tiny's exact geometry
// and the "kino" block tools/train/export.py writes, so `npm run bench:model -- --model DIR` measures
// the real per-chunk cost before the trained weights exist.
//
//   bun tools/make-tiny-checkpoint.ts OUT_DIR [--preset tiny|kino-tiny] [--patch T,H,W] [--bidirectional] [--bf16]
//                                     [--seed N] [--vae-layout wan|diffusers]
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { VaeConfig } from "../src/models/configs.ts";
import { ditNameToDiffusers } from "../src/models/key-maps.ts";
import { SeededRandom } from "../src/models/random.ts";
import { type TensorToWrite, writeSafetensors } from "../src/models/safetensors-write.ts";
import { vaeParameters } from "../src/models/wan-vae-layout.ts";

export interface TinyOptions {
  /** A chunked causal (streaming) DiT, as kino-tiny; false: a bidirectional one. Default true. */
  causal?: boolean;
  /** Store the big matrices as bf16 (default: only for kino-tiny, whose export does). */
  bf16?: boolean;
  seed?: number;
  /** Tensor names of the VAE: Wan's (as Wan2.1_VAE.pth) or diffusers AutoencoderKLWan's (as the
   *  *-Diffusers releases). Default "wan". */
  vaeLayout?: "wan" | "diffusers";
  /** The shapes: "tiny" (default; the tests' few-thousand-parameter model) or "kino-tiny". */
  preset?: PresetName;
  /** Overrides the preset's DiT patch (t, h, w): kino-tiny's is 1x4x4, 16 tokens per latent frame. */
  patch?: [number, number, number];
  /** kino.continuation_strength of a causal checkpoint (default: kino-tiny's 0.5 for that preset, else unset). */
  continuationStrength?: number;
}

const WORDS = ["a", "an", "the", "on", "background", "moving", "red", "orange", "yellow", "green", "cyan", "blue", "purple",
  "pink", "white", "gray", "black", "circle", "square", "ring", "left", "right", "up", "down", "bouncing", "still"];

interface Geometry {
  dit: { heads: number; headDim: number; ffn: number; freq: number; layers: number; patch: number[]; channels: number; textLen: number };
  t5: { dim: number; heads: number; dKv: number; ff: number; layers: number; buckets: number };
  vae: VaeConfig;
}

const TINY_DIT = { heads: 2, headDim: 16, ffn: 64, freq: 16, layers: 2, patch: [1, 2, 2], channels: 4, textLen: 16 };
const TINY: Geometry = {
  dit: TINY_DIT,
  t5: { dim: 16, heads: 2, dKv: 8, ff: 32, layers: 2, buckets: 32 },
  vae: {
    dim: 4, zDim: TINY_DIT.channels, dimMult: [1, 2, 4, 4], numResBlocks: 2, temporalDownsample: [false, true, true],
    latentsMean: new Array(TINY_DIT.channels).fill(0), latentsStd: new Array(TINY_DIT.channels).fill(1),
  },
};

/** kino-tiny (tools/train/common.py CFG): 64x64 video, 4x spatial and 4x temporal VAE, 16 tokens per
 *  latent frame. */
const KINO_TINY: Geometry = {
  dit: { heads: 3, headDim: 64, ffn: 576, freq: 256, layers: 6, patch: [1, 4, 4], channels: 16, textLen: 32 },
  t5: { dim: 128, heads: 4, dKv: 32, ff: 256, layers: 2, buckets: 32 },
  vae: {
    dim: 12, zDim: 16, dimMult: [1, 2, 4], numResBlocks: 1, temporalDownsample: [true, true],
    latentsMean: new Array(16).fill(0), latentsStd: new Array(16).fill(1),
  },
};

export type PresetName = "tiny" | "kino-tiny";
const PRESETS: Record<PresetName, Geometry> = { tiny: TINY, "kino-tiny": KINO_TINY };

/** The "kino" block of tools/train/export.py kino_block() with CFG's values (the keys the loader reads). */
function kinoTinyBlock(textLen: number): object {
  const steps = 8, shift = 3;
  const sigmas = Array.from({ length: steps + 1 }, (_, i) => { const s = 1 - i / steps; return (shift * s) / (1 + (shift - 1) * s); });
  return {
    text_len: textLen, chunk_latent_frames: 1, attn_window_chunks: 5, sink_frames: 1, sink_reanchor_on_cut: true,
    per_frame_timesteps: true, context_pass_timestep: 0,
    prediction_type: "sample",
    sampler: { type: "flow_euler", steps, shift, sigmas, timesteps: sigmas.slice(0, -1).map((s) => s * 1000) },
    continuation_strength: 0.5, guidance_scale: 2, negative_prompt: "", native_width: 64, native_height: 64, fps: 16, frames_per_chunk: 4, first_chunk_frames: 1,
    default_transition_chunks: 4, latent_channels: 16,
  };
}

type Init = "weight" | "norm" | "bias" | "table";

class Tensors {
  readonly list: TensorToWrite[] = [];
  constructor(private readonly rng: SeededRandom, private readonly half: boolean) {}
  add(name: string, shape: number[], init: Init): void {
    const n = shape.reduce((a, b) => a * b, 1);
    const z = this.rng.normal(n);
    const fanIn = shape.length > 1 ? n / shape[0]! : 1;
    const f = init === "weight" ? 1 / Math.sqrt(fanIn) : init === "table" ? 1 / Math.sqrt(shape[shape.length - 1]!) : init === "bias" ? 0.05 : 0.1;
    const data = z.map((v) => (init === "norm" ? 1 + f * v : f * v));
    this.list.push({ name, shape, data, dtype: this.half && init === "weight" && shape.length > 1 ? "BF16" : "F32" });
  }
  linear(name: string, out: number, inp: number, bias = true): void {
    this.add(`${name}.weight`, [out, inp], "weight");
    if (bias) this.add(`${name}.bias`, [out], "bias");
  }
}

function ditTensors(t: Tensors, g: Geometry): void {
  const { dit: DIT, t5: T5 } = g;
  const dim = DIT.heads * DIT.headDim, [pt, ph, pw] = DIT.patch as [number, number, number];
  t.add("patch_embedding.weight", [dim, DIT.channels, pt, ph, pw], "weight");
  t.add("patch_embedding.bias", [dim], "bias");
  t.linear("text_embedding.0", dim, T5.dim);
  t.linear("text_embedding.2", dim, dim);
  t.linear("time_embedding.0", dim, DIT.freq);
  t.linear("time_embedding.2", dim, dim);
  t.linear("time_projection.1", 6 * dim, dim);
  for (let i = 0; i < DIT.layers; i++) {
    const p = `blocks.${i}`;
    t.add(`${p}.modulation`, [1, 6, dim], "table");
    for (const a of ["self_attn", "cross_attn"]) {
      for (const m of ["q", "k", "v", "o"]) t.linear(`${p}.${a}.${m}`, dim, dim);
      t.add(`${p}.${a}.norm_q.weight`, [dim], "norm");
      t.add(`${p}.${a}.norm_k.weight`, [dim], "norm");
    }
    t.add(`${p}.norm3.weight`, [dim], "norm");
    t.add(`${p}.norm3.bias`, [dim], "bias");
    t.linear(`${p}.ffn.0`, DIT.ffn, dim);
    t.linear(`${p}.ffn.2`, dim, DIT.ffn);
  }
  t.add("head.modulation", [1, 2, dim], "table");
  t.linear("head.head", DIT.channels * pt * ph * pw, dim);
}

function t5Tensors(t: Tensors, vocab: number, T5: Geometry["t5"]): void {
  const inner = T5.heads * T5.dKv;
  t.add("shared.weight", [vocab, T5.dim], "norm");
  for (let i = 0; i < T5.layers; i++) {
    const p = `encoder.block.${i}.layer`;
    t.add(`${p}.0.layer_norm.weight`, [T5.dim], "norm");
    for (const m of ["q", "k", "v"]) t.linear(`${p}.0.SelfAttention.${m}`, inner, T5.dim, false);
    t.linear(`${p}.0.SelfAttention.o`, T5.dim, inner, false);
    t.add(`${p}.0.SelfAttention.relative_attention_bias.weight`, [T5.buckets, T5.heads], "bias");
    t.add(`${p}.1.layer_norm.weight`, [T5.dim], "norm");
    t.linear(`${p}.1.DenseReluDense.wi_0`, T5.ff, T5.dim, false);
    t.linear(`${p}.1.DenseReluDense.wi_1`, T5.ff, T5.dim, false);
    t.linear(`${p}.1.DenseReluDense.wo`, T5.dim, T5.ff, false);
  }
  t.add("encoder.final_layer_norm.weight", [T5.dim], "norm");
}

/** The Wan-VAE tensors (the structure wan-vae.ts loads), in either layout's names. */
function vaeTensors(t: Tensors, layout: "wan" | "diffusers", vae: VaeConfig): void {
  for (const p of vaeParameters(vae)) {
    const name = p[layout];
    t.add(name, p.shape, name.endsWith(".gamma") ? "norm" : name.endsWith(".bias") ? "bias" : "weight");
  }
}

function tokenizerJson(): object {
  const special = ["<pad>", "</s>", "<unk>"];
  const vocab = Object.fromEntries([...special, ...WORDS].map((w, i) => [w, i]));
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: special.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: "Lowercase" },
    pre_tokenizer: { type: "Whitespace" },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      special_tokens: { "</s>": { id: "</s>", ids: [1], tokens: ["</s>"] } },
    },
    decoder: null,
    model: { type: "WordLevel", vocab, unk_token: "<unk>" },
  };
}

export async function makeTinyCheckpoint(dir: string, opts: TinyOptions = {}): Promise<void> {
  const causal = opts.causal ?? true;
  const preset = opts.preset ?? "tiny", base = PRESETS[preset];
  const g: Geometry = opts.patch ? { ...base, dit: { ...base.dit, patch: opts.patch } } : base, { dit: DIT, t5: T5, vae: VAE } = g;
  const rng = new SeededRandom(opts.seed ?? 1);
  for (const sub of ["transformer", "text_encoder", "tokenizer", "vae", "scheduler"]) mkdirSync(join(dir, sub), { recursive: true });
  const json = (path: string, value: object) => Bun.write(join(dir, path), JSON.stringify(value, null, 1));
  const vocab = 3 + WORDS.length;

  await json("model_index.json", {
    _class_name: "WanPipeline", _diffusers_version: "0.33.0", _name_or_path: `kino-tiny-random${preset === "tiny" ? "" : "-full-size"}${causal ? "" : "-bidirectional"}`,
    transformer: ["diffusers", "WanTransformer3DModel"], text_encoder: ["transformers", "UMT5EncoderModel"],
    tokenizer: ["transformers", "T5TokenizerFast"], vae: ["diffusers", "AutoencoderKLWan"], scheduler: ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  });
  const kino = preset === "kino-tiny" && causal
    ? kinoTinyBlock(DIT.textLen)
    : causal
    ? { chunk_frames: 2, text_len: DIT.textLen, timesteps: [1000, 750, 500, 250], shift: 5, guidance_scale: 1, width: 64, height: 64, fps: 16,
        num_frames: 21, frames_per_chunk: 8, first_chunk_frames: 5, default_transition_chunks: 2, window_frames: 6, sink_frames: 2 }
    : { text_len: DIT.textLen, sampler: "euler", num_inference_steps: 4, shift: 3, guidance_scale: 3, width: 64, height: 64, fps: 16, num_frames: 9 };
  if (causal && opts.continuationStrength !== undefined) Object.assign(kino, { continuation_strength: opts.continuationStrength });
  await json("transformer/config.json", {
    _class_name: "WanTransformer3DModel", patch_size: DIT.patch, num_attention_heads: DIT.heads, attention_head_dim: DIT.headDim,
    in_channels: DIT.channels, out_channels: DIT.channels, text_dim: T5.dim, freq_dim: DIT.freq, ffn_dim: DIT.ffn, num_layers: DIT.layers,
    cross_attn_norm: true, qk_norm: "rms_norm_across_heads", eps: 1e-6, image_dim: null, added_kv_proj_dim: null, rope_max_seq_len: 1024, kino,
  });
  const dit = new Tensors(rng, opts.bf16 ?? preset === "kino-tiny");
  ditTensors(dit, g);
  await writeSafetensors(join(dir, "transformer/diffusion_pytorch_model.safetensors"), dit.list.map((t) => ({ ...t, name: ditNameToDiffusers(t.name) })));

  await json("text_encoder/config.json", {
    architectures: ["UMT5EncoderModel"], model_type: "umt5", vocab_size: vocab, d_model: T5.dim, d_kv: T5.dKv, d_ff: T5.ff, num_layers: T5.layers,
    num_heads: T5.heads, relative_attention_num_buckets: T5.buckets, relative_attention_max_distance: 128, feed_forward_proj: "gated-gelu",
    dense_act_fn: "gelu_new", layer_norm_epsilon: 1e-6, pad_token_id: 0, eos_token_id: 1,
  });
  const t5 = new Tensors(rng, false);
  t5Tensors(t5, vocab, T5);
  await writeSafetensors(join(dir, "text_encoder/model.safetensors"), t5.list);
  await json("tokenizer/tokenizer.json", tokenizerJson());

  await json("vae/config.json", {
    _class_name: "AutoencoderKLWan", _diffusers_version: "0.33.0", base_dim: VAE.dim, z_dim: VAE.zDim, dim_mult: VAE.dimMult,
    num_res_blocks: VAE.numResBlocks, attn_scales: [], temperal_downsample: VAE.temporalDownsample, dropout: 0,
    latents_mean: VAE.latentsMean, latents_std: VAE.latentsStd,
  });
  const vae = new Tensors(rng, false);
  vaeTensors(vae, opts.vaeLayout ?? "wan", VAE);
  await writeSafetensors(join(dir, "vae/diffusion_pytorch_model.safetensors"), vae.list);
  await json("scheduler/scheduler_config.json", { _class_name: "FlowMatchEulerDiscreteScheduler", num_train_timesteps: 1000, shift: causal && preset === "tiny" ? 5 : 3 });
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const out = args.find((a) => !a.startsWith("--"));
  if (!out) {
    console.error("usage: bun tools/make-tiny-checkpoint.ts OUT_DIR [--preset tiny|kino-tiny] [--patch T,H,W] [--bidirectional] [--bf16] [--seed N] [--vae-layout wan|diffusers]");
    process.exit(2);
  }
  const value = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
  const vaeLayout = value("--vae-layout") ?? "wan";
  if (vaeLayout !== "wan" && vaeLayout !== "diffusers") {
    console.error(`--vae-layout must be wan or diffusers, got ${vaeLayout}`);
    process.exit(2);
  }
  const preset = value("--preset") ?? "tiny";
  if (!(preset in PRESETS)) {
    console.error(`--preset must be ${Object.keys(PRESETS).join(" or ")}, got ${preset}`);
    process.exit(2);
  }
  const patch = value("--patch")?.split(",").map(Number) as [number, number, number] | undefined;
  await makeTinyCheckpoint(out, { causal: !args.includes("--bidirectional"), bf16: args.includes("--bf16") || undefined, seed: Number(value("--seed") ?? 1), vaeLayout, preset: preset as PresetName, patch });
  console.log(`wrote a random ${preset} Wan checkpoint to ${out}`);
}
