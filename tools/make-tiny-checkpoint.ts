// Writes a tiny random-weight Wan checkpoint in the diffusers layout kino-tiny uses (model_index.json;
// transformer/ with diffusers key names and a "kino" object; text_encoder/ with transformers UMT5
// names; a word-level tokenizer/tokenizer.json; vae/ with Wan key names, or with diffusers
// AutoencoderKLWan names as the *-Diffusers releases ship it (--vae-layout diffusers); scheduler/). Tests load it
// through loadPipeline to prove the whole path produces frames; it is also a quick way to try the
// server on a real (if meaningless) checkpoint. `--preset kino-tiny` writes kino-tiny's exact geometry
// and the "kino" block tools/train/export.py writes, so `npm run bench:model -- --model DIR` measures
// the real per-chunk cost before the trained weights exist. `--kind i2v` writes a bidirectional Wan2.1
// image-to-video checkpoint (in = 2·z + 4 channels, the CLIP image embedding and image keys/values,
// text_len 512, a tiny transformers CLIPVisionModel under image_encoder/), `--kind ti2v` a Wan2.2
// text-image-to-video one (48 channels on a tiny Wan2.2 VAE under Wan names). `--preset wan-1.3b`
// writes Wan2.1-T2V-1.3B at its real size as a causal streaming model (WAN_1_3B below: 3.9 GB, the
// text encoder cut short), for tools/bench/e2e-realtime.ts to time a realtime session of the server.
//
//   bun tools/make-tiny-checkpoint.ts OUT_DIR [--preset tiny|kino-tiny|wan-1.3b] [--kind t2v|i2v|ti2v] [--patch T,H,W] [--bidirectional]
//                                     [--bf16] [--seed N] [--vae-layout wan|diffusers] [--no-kino]
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type VaeConfig, parseVaeConfig } from "../src/models/configs.ts";
import { ditNameToDiffusers } from "../src/models/key-maps.ts";
import { SeededRandom } from "../src/models/random.ts";
import { writeSafetensorsStreaming } from "../src/models/safetensors-write.ts";
import type { DitKind } from "../src/models/dit-kind.ts";
import { vaeParameters } from "../src/models/wan-vae-layout.ts";
import { vae22Parameters } from "../src/models/wan-vae22-layout.ts";
import { NormalPool, Tensors } from "./checkpoint-tensors.ts";

export interface TinyOptions {
  /** A chunked causal (streaming) DiT, as kino-tiny; false: a bidirectional one. Default true. */
  causal?: boolean;
  /** Store the big matrices as bf16 (default: for kino-tiny, whose export does, and wan-1.3b). */
  bf16?: boolean;
  seed?: number;
  /** Tensor names of the VAE: Wan's (as Wan2.1_VAE.pth) or diffusers AutoencoderKLWan's (as the
   *  *-Diffusers releases). Default "wan". */
  vaeLayout?: "wan" | "diffusers";
  /** The shapes: "tiny" (default; the tests' few-thousand-parameter model), "kino-tiny" or "wan-1.3b". */
  preset?: PresetName;
  /** Overrides the preset's DiT patch (t, h, w): kino-tiny's is 1x4x4, 16 tokens per latent frame. */
  patch?: [number, number, number];
  /** kino.continuation_strength of a causal checkpoint (default: kino-tiny's 0.5 for that preset, else unset). */
  continuationStrength?: number;
  /** The pipeline (default t2v); i2v and ti2v are bidirectional and only exist for the "tiny" preset. */
  kind?: DitKind;
  /** Write no "kino" object (the release's own defaults apply, as for Wan's checkpoints). */
  noKino?: boolean;
}

const WORDS = ["a", "an", "the", "on", "background", "moving", "red", "orange", "yellow", "green", "cyan", "blue", "purple",
  "pink", "white", "gray", "black", "circle", "square", "ring", "left", "right", "up", "down", "bouncing", "still"];

interface Geometry {
  dit: { heads: number; headDim: number; ffn: number; freq: number; layers: number; patch: number[]; channels: number; textLen: number };
  t5: { dim: number; heads: number; dKv: number; ff: number; layers: number; buckets: number };
  vae: VaeConfig;
}

const TINY_DIT = { heads: 2, headDim: 16, ffn: 64, freq: 16, layers: 2, patch: [1, 2, 2], channels: 4, textLen: 16 };
/** The tiny image tower of an i2v checkpoint: 28×28 input in 14-pixel patches (5 tokens), 2 blocks. */
const TINY_CLIP = { dim: 32, heads: 2, layers: 2, ffn: 64, image: 28, patch: 14, projection: 16 };
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

/** Wan2.1 I2V, tiny: the t2v tiny shapes with text_len 512 (the i2v cross-attention's fixed split). */
const TINY_I2V: Geometry = { ...TINY, dit: { ...TINY_DIT, textLen: 512 } };
/** Wan2.2 TI2V, tiny: 48 latent channels on a tiny Wan2.2 VAE (widths 4 and 6, as goldens/vae22). */
const TINY_TI2V: Geometry = {
  ...TINY,
  dit: { ...TINY_DIT, channels: 48 },
  vae: {
    dim: 4, zDim: 48, dimMult: [1, 2, 4, 4], numResBlocks: 2, temporalDownsample: [false, true, true],
    latentsMean: new Array(48).fill(0), latentsStd: new Array(48).fill(1), wan22: { decoderDim: 6 },
  },
};

/**
 * Wan2.1-T2V-1.3B as a causal streaming model, for timing kino end to end at real size: the released
 * transformer (as tools/bench/model.ts WAN21_T2V_1_3B_TRANSFORMER) with bf16 weights, the released
 * Wan2.1 VAE geometry (f32, as Wan2.1_VAE.pth), and a umT5 of the real width — d_model 4096, 64 heads,
 * d_ff 10240, bf16, so the DiT's cross-attention input is what umT5-XXL gives it — but 2 of its 24
 * layers and the tiny presets' word-level vocabulary instead of its 256k. Text is encoded once per
 * prompt, off the streaming path: only a session's first chunk (and a prompt change) would pay for
 * the 22 layers left out, a few ms at 512 tokens on a GPU. 3.9 GB on disk, written in pooled mode
 * (tools/checkpoint-tensors.ts).
 */
const WAN_1_3B: Geometry = {
  dit: { heads: 12, headDim: 128, ffn: 8960, freq: 256, layers: 30, patch: [1, 2, 2], channels: 16, textLen: 512 },
  t5: { dim: 4096, heads: 64, dKv: 64, ff: 10240, layers: 2, buckets: 32 },
  vae: parseVaeConfig({}, "Wan2.1 VAE (released geometry)"),
};

export type PresetName = "tiny" | "kino-tiny" | "wan-1.3b";
export const PRESET_NAMES: PresetName[] = ["tiny", "kino-tiny", "wan-1.3b"];
const PRESETS: Record<PresetName, Geometry> = { tiny: TINY, "kino-tiny": KINO_TINY, "wan-1.3b": WAN_1_3B };

/**
 * wan-1.3b's "kino" block: streaming 832x480 as Self-Forcing samples Wan2.1-1.3B — chunks of 3 latent
 * frames (9 video frames first, then 12), attention over a 21-frame window without a sink, the 4
 * warped steps [1000, 750, 500, 250] at shift 5 and no guidance; each chunk then runs the context
 * pass. The same stream tools/bench/model.ts wan13bSpec() times the DiT of.
 */
function wan13bBlock(textLen: number): object {
  return {
    chunk_frames: 3, window_frames: 21, sink_frames: 0, text_len: textLen, timesteps: [1000, 750, 500, 250], shift: 5, guidance_scale: 1,
    native_width: 832, native_height: 480, fps: 16, num_frames: 81, default_transition_chunks: 2,
  };
}

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

function ditTensors(t: Tensors, g: Geometry, kind: DitKind): void {
  const { dit: DIT, t5: T5 } = g;
  const dim = DIT.heads * DIT.headDim, [pt, ph, pw] = DIT.patch as [number, number, number];
  const inChannels = kind === "i2v" ? 2 * DIT.channels + 4 : DIT.channels;
  t.add("patch_embedding.weight", [dim, inChannels, pt, ph, pw], "weight");
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
    if (kind === "i2v") {
      t.linear(`${p}.cross_attn.k_img`, dim, dim);
      t.linear(`${p}.cross_attn.v_img`, dim, dim);
      t.add(`${p}.cross_attn.norm_k_img.weight`, [dim], "norm");
    }
    t.add(`${p}.norm3.weight`, [dim], "norm");
    t.add(`${p}.norm3.bias`, [dim], "bias");
    t.linear(`${p}.ffn.0`, DIT.ffn, dim);
    t.linear(`${p}.ffn.2`, dim, DIT.ffn);
  }
  t.add("head.modulation", [1, 2, dim], "table");
  t.linear("head.head", DIT.channels * pt * ph * pw, dim);
  if (kind === "i2v") {
    const c = TINY_CLIP.dim;
    t.add("img_emb.proj.0.weight", [c], "norm");
    t.add("img_emb.proj.0.bias", [c], "bias");
    t.linear("img_emb.proj.1", c, c);
    t.linear("img_emb.proj.3", dim, c);
    t.add("img_emb.proj.4.weight", [dim], "norm");
    t.add("img_emb.proj.4.bias", [dim], "bias");
  }
}

/** A transformers CLIPVisionModelWithProjection's tensors (the *-Diffusers image_encoder/). */
function clipTensors(t: Tensors): void {
  const { dim: d, layers, ffn, image, patch, projection } = TINY_CLIP, tokens = (image / patch) ** 2 + 1;
  t.add("vision_model.embeddings.class_embedding", [d], "bias");
  t.add("vision_model.embeddings.patch_embedding.weight", [d, 3, patch, patch], "weight");
  t.add("vision_model.embeddings.position_embedding.weight", [tokens, d], "bias");
  t.add("vision_model.pre_layrnorm.weight", [d], "norm");
  t.add("vision_model.pre_layrnorm.bias", [d], "bias");
  for (let i = 0; i < layers; i++) {
    const p = `vision_model.encoder.layers.${i}`;
    for (const m of ["k_proj", "v_proj", "q_proj", "out_proj"]) t.linear(`${p}.self_attn.${m}`, d, d);
    t.add(`${p}.layer_norm1.weight`, [d], "norm");
    t.add(`${p}.layer_norm1.bias`, [d], "bias");
    t.linear(`${p}.mlp.fc1`, ffn, d);
    t.linear(`${p}.mlp.fc2`, d, ffn);
    t.add(`${p}.layer_norm2.weight`, [d], "norm");
    t.add(`${p}.layer_norm2.bias`, [d], "bias");
  }
  t.add("vision_model.post_layernorm.weight", [d], "norm");
  t.add("vision_model.post_layernorm.bias", [d], "bias");
  t.linear("visual_projection", projection, d, false);
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
  const kind = opts.kind ?? "t2v";
  if (kind !== "t2v" && (opts.causal || (opts.preset ?? "tiny") !== "tiny")) throw new Error(`a ${kind} checkpoint is bidirectional and tiny`);
  const causal = kind === "t2v" && (opts.causal ?? true);
  const preset = opts.preset ?? "tiny", base = kind === "ti2v" ? TINY_TI2V : kind === "i2v" ? TINY_I2V : PRESETS[preset];
  const g: Geometry = opts.patch ? { ...base, dit: { ...base.dit, patch: opts.patch } } : base, { dit: DIT, t5: T5, vae: VAE } = g;
  const rng = new SeededRandom(opts.seed ?? 1);
  for (const sub of ["transformer", "text_encoder", "tokenizer", "vae", "scheduler", ...(kind === "i2v" ? ["image_encoder"] : [])]) mkdirSync(join(dir, sub), { recursive: true });
  const json = (path: string, value: object) => Bun.write(join(dir, path), JSON.stringify(value, null, 1));
  const vocab = 3 + WORDS.length;

  await json("model_index.json", {
    _class_name: kind === "i2v" ? "WanImageToVideoPipeline" : "WanPipeline", _diffusers_version: "0.33.0",
    _name_or_path: `${preset === "wan-1.3b" ? "wan2.1-t2v-1.3b-random" : `kino-tiny-random${preset === "tiny" ? "" : "-full-size"}`}${kind === "t2v" ? (causal ? "" : "-bidirectional") : `-${kind}`}`,
    transformer: ["diffusers", "WanTransformer3DModel"], text_encoder: ["transformers", "UMT5EncoderModel"],
    tokenizer: ["transformers", "T5TokenizerFast"], vae: ["diffusers", "AutoencoderKLWan"], scheduler: ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  });
  const kino = preset === "kino-tiny" && causal
    ? kinoTinyBlock(DIT.textLen)
    : preset === "wan-1.3b" && causal
    ? wan13bBlock(DIT.textLen)
    : causal
    ? { chunk_frames: 2, text_len: DIT.textLen, timesteps: [1000, 750, 500, 250], shift: 5, guidance_scale: 1, width: 64, height: 64, fps: 16,
        num_frames: 21, frames_per_chunk: 8, first_chunk_frames: 5, default_transition_chunks: 2, window_frames: 6, sink_frames: 2 }
    : { text_len: DIT.textLen, sampler: "euler", num_inference_steps: 4, shift: 3, guidance_scale: 3, width: 64, height: 64, fps: 16, num_frames: 9 };
  if (causal && opts.continuationStrength !== undefined) Object.assign(kino, { continuation_strength: opts.continuationStrength });
  // ti2v: 16× VAE and 2×2 patches make 32-pixel tokens; its natives follow TI2V-5B's two aspects
  if (kind === "ti2v") Object.assign(kino, { width: 64, height: 32, native_sizes: ["64x32", "32x64"], fps: 24 });
  if (kind !== "t2v") Object.assign(kino, { sampler: "unipc", num_inference_steps: 3 });
  const dim = DIT.heads * DIT.headDim;
  await json("transformer/config.json", {
    _class_name: "WanTransformer3DModel", patch_size: DIT.patch, num_attention_heads: DIT.heads, attention_head_dim: DIT.headDim,
    in_channels: kind === "i2v" ? 2 * DIT.channels + 4 : DIT.channels, out_channels: DIT.channels, text_dim: T5.dim, freq_dim: DIT.freq,
    ffn_dim: DIT.ffn, num_layers: DIT.layers, cross_attn_norm: true, qk_norm: "rms_norm_across_heads", eps: 1e-6,
    image_dim: kind === "i2v" ? TINY_CLIP.dim : null, added_kv_proj_dim: kind === "i2v" ? dim : null, rope_max_seq_len: 1024,
    ...(opts.noKino ? {} : { kino }),
  });
  // real size: big tensors are windows of one seeded pool (exact draws would take a minute)
  const real = preset === "wan-1.3b", pool = real ? new NormalPool(rng) : null;
  const dit = new Tensors(rng, opts.bf16 ?? preset !== "tiny", pool);
  ditTensors(dit, g, kind);
  writeSafetensorsStreaming(join(dir, "transformer/diffusion_pytorch_model.safetensors"), dit.stream(ditNameToDiffusers));

  await json("text_encoder/config.json", {
    architectures: ["UMT5EncoderModel"], model_type: "umt5", vocab_size: vocab, d_model: T5.dim, d_kv: T5.dKv, d_ff: T5.ff, num_layers: T5.layers,
    num_heads: T5.heads, relative_attention_num_buckets: T5.buckets, relative_attention_max_distance: 128, feed_forward_proj: "gated-gelu",
    dense_act_fn: "gelu_new", layer_norm_epsilon: 1e-6, pad_token_id: 0, eos_token_id: 1,
  });
  const t5 = new Tensors(rng, real, pool);
  t5Tensors(t5, vocab, T5);
  writeSafetensorsStreaming(join(dir, "text_encoder/model.safetensors"), t5.stream());
  await json("tokenizer/tokenizer.json", tokenizerJson());

  await json("vae/config.json", {
    _class_name: "AutoencoderKLWan", _diffusers_version: "0.33.0", base_dim: VAE.dim, z_dim: VAE.zDim, dim_mult: VAE.dimMult,
    num_res_blocks: VAE.numResBlocks, attn_scales: [], temperal_downsample: VAE.temporalDownsample, dropout: 0,
    latents_mean: VAE.latentsMean, latents_std: VAE.latentsStd,
    ...(VAE.wan22 ? { decoder_base_dim: VAE.wan22.decoderDim, is_residual: true, patch_size: 2, in_channels: 12, out_channels: 12 } : {}),
  });
  const vae = new Tensors(rng, false, pool);
  if (VAE.wan22) {
    for (const p of vae22Parameters(VAE)) vae.add(p.name, p.shape, p.name.endsWith(".gamma") ? "norm" : p.name.endsWith(".bias") ? "bias" : "weight");
  } else vaeTensors(vae, opts.vaeLayout ?? "wan", VAE);
  writeSafetensorsStreaming(join(dir, "vae/diffusion_pytorch_model.safetensors"), vae.stream());
  if (kind === "i2v") {
    const { dim: d, heads, layers, ffn, image, patch, projection } = TINY_CLIP;
    await json("image_encoder/config.json", {
      architectures: ["CLIPVisionModelWithProjection"], model_type: "clip_vision_model", hidden_size: d, num_attention_heads: heads,
      num_hidden_layers: layers, intermediate_size: ffn, image_size: image, patch_size: patch, hidden_act: "gelu", layer_norm_eps: 1e-5,
      projection_dim: projection, num_channels: 3,
    });
    const clip = new Tensors(rng, false);
    clipTensors(clip);
    writeSafetensorsStreaming(join(dir, "image_encoder/model.safetensors"), clip.stream());
  }
  // the image releases ship UniPC with their flow shift (I2V-480P 3, TI2V-5B 5)
  await json("scheduler/scheduler_config.json", kind === "t2v"
    ? { _class_name: "FlowMatchEulerDiscreteScheduler", num_train_timesteps: 1000, shift: causal && preset === "tiny" ? 5 : 3 }
    : { _class_name: "UniPCMultistepScheduler", num_train_timesteps: 1000, prediction_type: "flow_prediction", use_flow_sigmas: true, flow_shift: kind === "ti2v" ? 5 : 3 });
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const out = args.find((a) => !a.startsWith("--"));
  if (!out) {
    console.error("usage: bun tools/make-tiny-checkpoint.ts OUT_DIR [--preset tiny|kino-tiny|wan-1.3b] [--kind t2v|i2v|ti2v] [--patch T,H,W] [--bidirectional] [--bf16] [--seed N] [--vae-layout wan|diffusers] [--no-kino]");
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
    console.error(`--preset must be ${PRESET_NAMES.join(", ")}, got ${preset}`);
    process.exit(2);
  }
  const patch = value("--patch")?.split(",").map(Number) as [number, number, number] | undefined;
  const kind = value("--kind") ?? "t2v";
  if (!["t2v", "i2v", "ti2v"].includes(kind)) {
    console.error(`--kind must be t2v, i2v or ti2v, got ${kind}`);
    process.exit(2);
  }
  await makeTinyCheckpoint(out, {
    causal: kind === "t2v" && !args.includes("--bidirectional"), bf16: args.includes("--bf16") || undefined, seed: Number(value("--seed") ?? 1),
    vaeLayout, preset: preset as PresetName, patch, kind: kind as DitKind, noKino: args.includes("--no-kino"),
  });
  console.log(`wrote a random ${preset} Wan checkpoint to ${out}`);
}
