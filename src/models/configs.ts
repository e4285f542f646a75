// Model hyper-parameters, read from the config files of either layout: diffusers
// (WanTransformer3DModel / UMT5 / AutoencoderKLWan config.json keys) or the original Wan configs.
// Everything downstream sees these typed shapes only. A value a config cannot express for the code we
// have (per-head qk norm, windowed attention, ...) fails here with the key that says so.
import { type DitKind, type ImageFeatures, type TensorShapes, recogniseDitKind } from "./dit-kind.ts";
import { CheckpointError } from "./safetensors.ts";

export interface WanDitConfig {
  /** The pipeline the DiT belongs to (dit-kind.ts): text-to-video, Wan2.1 image-to-video (CLIP image
   *  cross-attention, in = 2·out + 4 channels) or Wan2.2 text-image-to-video (per-token timesteps). */
  kind: DitKind;
  /** Width of the features img_emb takes (i2v: CLIP's; kino-tiny: a latent patch); null without an image branch. */
  imageDim: number | null;
  /** Where the image branch's tokens come from (dit-kind.ts): CLIP features, required (i2v), or the
   *  given first frame's latent patches, optional (a text-to-video DiT's branch); null without one. */
  imageFeatures: ImageFeatures | null;
  dim: number;
  ffnDim: number;
  freqDim: number;
  textDim: number;
  inDim: number;
  outDim: number;
  numHeads: number;
  numLayers: number;
  patch: [number, number, number];
  eps: number;
  /** Context rows after zero padding (512 in Wan2.1). Not in diffusers configs: kino object or 512. */
  textLen: number;
  /** RMSNorm over the full width on q and k (diffusers "rms_norm_across_heads"). */
  qkNorm: boolean;
  /** Affine LayerNorm before cross-attention (Wan "norm3"). */
  crossAttnNorm: boolean;
  /** Rows of the RoPE tables Wan builds (positions per axis). */
  ropeMaxSeqLen: number;
}

export interface T5Config {
  vocab: number;
  dim: number;
  /** heads × head dim */
  dimAttn: number;
  dimFfn: number;
  numHeads: number;
  numLayers: number;
  numBuckets: number;
  maxDistance: number;
  eps: number;
  /** T5 shares one position-bias table (layer 0); umT5 has one per layer. */
  sharedPos: boolean;
  padId: number;
  eosId: number;
}

export interface VaeConfig {
  dim: number;
  zDim: number;
  dimMult: number[];
  numResBlocks: number;
  temporalDownsample: boolean[];
  /** Per-channel latent statistics: the DiT works on (mu − mean) / std. */
  latentsMean: number[];
  latentsStd: number[];
  /** Wan2.2's VAE (wan/modules/vae2_2.py: 2×2 patchified pixels, residual levels with averaging /
   *  duplicating shortcuts, its own decoder width); absent for Wan2.1's. */
  wan22?: { decoderDim: number };
}

/** A parsed config.json. */
export type Json = Record<string, unknown>;

function need<T>(cfg: Json, file: string, ...keys: string[]): T {
  for (const k of keys) if (cfg[k] !== undefined && cfg[k] !== null) return cfg[k] as T;
  throw new CheckpointError(`${file}: missing config key ${keys.map((k) => `'${k}'`).join(" / ")}`);
}

function opt<T>(cfg: Json, fallback: T, ...keys: string[]): T {
  for (const k of keys) if (cfg[k] !== undefined && cfg[k] !== null) return cfg[k] as T;
  return fallback;
}

function positiveInt(v: unknown, file: string, key: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw new CheckpointError(`${file}: '${key}' must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/** Context rows WanI2VCrossAttention counts back from the end as text (Wan's T5_CONTEXT_TOKEN_NUMBER):
 *  the image tokens are the rest, so an i2v model's text must be padded to exactly this many. */
export const I2V_TEXT_TOKENS = 512;

/**
 * WanTransformer3DModel (diffusers) or WanModel (original) config. `tensors` (shapes by Wan name)
 * lets the pipeline recognition see what the config cannot say (the original layout's CLIP width).
 */
export function parseDitConfig(cfg: Json, file: string, textLen?: number, tensors?: TensorShapes): WanDitConfig {
  const diffusers = cfg.num_attention_heads !== undefined;
  const unsupported = (key: string, why: string): never => {
    throw new CheckpointError(`${file}: '${key}' = ${JSON.stringify(cfg[key])}: ${why}`);
  };
  const patch = need<number[]>(cfg, file, "patch_size");
  if (!Array.isArray(patch) || patch.length !== 3) unsupported("patch_size", "must be [t, h, w]");
  // diffusers: "rms_norm_across_heads" (Wan) or null; original: a boolean
  const q = cfg.qk_norm;
  if (diffusers && !(q === "rms_norm_across_heads" || q === null || q === undefined || q === false)) unsupported("qk_norm", "only 'rms_norm_across_heads' (Wan) or null");
  const qkNorm = diffusers ? q === "rms_norm_across_heads" : opt(cfg, true, "qk_norm");
  const heads = positiveInt(need(cfg, file, "num_attention_heads", "num_heads"), file, "num_heads");
  const dim = diffusers ? heads * positiveInt(need(cfg, file, "attention_head_dim"), file, "attention_head_dim") : positiveInt(need(cfg, file, "dim"), file, "dim");
  if (dim % heads) unsupported("dim", `not divisible by ${heads} heads`);
  const window = cfg.window_size as number[] | undefined;
  if (window && (window[0] !== -1 || window[1] !== -1)) unsupported("window_size", "only global attention (-1, -1)");
  const inDim = positiveInt(need(cfg, file, "in_channels", "in_dim"), file, "in_channels");
  const outDim = positiveInt(need(cfg, file, "out_channels", "out_dim"), file, "out_channels");
  const { kind, imageDim, imageFeatures } = recogniseDitKind(cfg, file, tensors);
  const rows = textLen ?? opt(cfg, 512, "text_len");
  if (kind === "i2v" && rows !== I2V_TEXT_TOKENS) {
    throw new CheckpointError(`${file}: text_len ${rows}: the image-to-video cross-attention takes the last ${I2V_TEXT_TOKENS} context rows as text, so the text must be padded to ${I2V_TEXT_TOKENS}`);
  }
  if (imageDim !== null) positiveInt(imageDim, file, "image_dim");
  if (imageDim !== null && diffusers && cfg.added_kv_proj_dim !== dim) unsupported("added_kv_proj_dim", `the image keys/values are projected from the model width ${dim}`);
  return {
    kind,
    imageDim,
    imageFeatures,
    dim,
    ffnDim: positiveInt(need(cfg, file, "ffn_dim"), file, "ffn_dim"),
    freqDim: positiveInt(need(cfg, file, "freq_dim"), file, "freq_dim"),
    textDim: positiveInt(need(cfg, file, "text_dim"), file, "text_dim"),
    inDim,
    outDim,
    numHeads: heads,
    numLayers: positiveInt(need(cfg, file, "num_layers"), file, "num_layers"),
    patch: patch as [number, number, number],
    eps: opt(cfg, 1e-6, "eps"),
    textLen: rows,
    qkNorm,
    crossAttnNorm: opt(cfg, true, "cross_attn_norm"),
    ropeMaxSeqLen: opt(cfg, 1024, "rope_max_seq_len"),
  };
}

/** HF (U)MT5 config (diffusers text_encoder/config.json). */
export function parseT5Config(cfg: Json, file: string): T5Config {
  const ff = opt(cfg, "gated-gelu", "feed_forward_proj");
  if (ff !== "gated-gelu") throw new CheckpointError(`${file}: 'feed_forward_proj' = ${JSON.stringify(ff)}: only gated-gelu (umT5) is supported`);
  const heads = positiveInt(need(cfg, file, "num_heads"), file, "num_heads");
  return {
    vocab: positiveInt(need(cfg, file, "vocab_size"), file, "vocab_size"),
    dim: positiveInt(need(cfg, file, "d_model"), file, "d_model"),
    dimAttn: heads * positiveInt(need(cfg, file, "d_kv"), file, "d_kv"),
    dimFfn: positiveInt(need(cfg, file, "d_ff"), file, "d_ff"),
    numHeads: heads,
    numLayers: positiveInt(need(cfg, file, "num_layers"), file, "num_layers"),
    numBuckets: opt(cfg, 32, "relative_attention_num_buckets"),
    maxDistance: opt(cfg, 128, "relative_attention_max_distance"),
    eps: opt(cfg, 1e-6, "layer_norm_epsilon"),
    sharedPos: opt<string>(cfg, "umt5", "model_type") === "t5",
    padId: opt(cfg, 0, "pad_token_id"),
    eosId: opt(cfg, 1, "eos_token_id"),
  };
}

/** The real umT5-XXL (the original Wan layout ships no text encoder config). */
export const UMT5_XXL: T5Config = {
  vocab: 256384, dim: 4096, dimAttn: 4096, dimFfn: 10240, numHeads: 64, numLayers: 24,
  numBuckets: 32, maxDistance: 128, eps: 1e-6, sharedPos: false, padId: 0, eosId: 1,
};

/** Wan2.1's latent statistics (wan/modules/vae.py), used when a 16-channel VAE config has none. */
const WAN21_LATENTS_MEAN = [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921];
const WAN21_LATENTS_STD = [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916];

/** Wan2.2's latent statistics (wan/modules/vae2_2.py Wan2_2_VAE), used when a 48-channel Wan2.2 VAE config has none. */
const WAN22_LATENTS_MEAN = [
  -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813, 0.0891, 0.157, -0.0098, 0.0375, -0.1825,
  -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502, -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.123,
  -0.0313, -0.1649, 0.0117, 0.0723, -0.2839, -0.2083, -0.052, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667,
];
const WAN22_LATENTS_STD = [
  0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.499, 0.4818, 0.5013, 0.8158, 1.0344, 0.5894, 1.0901, 0.6885, 0.6165, 0.8454, 0.4978,
  0.5759, 0.3523, 0.7135, 0.6804, 0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999, 0.6866, 0.4093,
  0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887, 0.3971, 1.06, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744,
];

/**
 * AutoencoderKLWan (diffusers keys: base_dim, z_dim, dim_mult, num_res_blocks, attn_scales,
 * temperal_downsample, latents_mean, latents_std; Wan2.2: is_residual, patch_size 2,
 * decoder_base_dim) or WanVAE_ (original argument names; Wan2.2's has dec_dim) config. A Wan2.2 VAE
 * is recognised by those keys (`wan22: true` when the caller knows it from the weights); mixing the
 * two structures is refused by name.
 */
export function parseVaeConfig(cfg: Json, file: string, wan22Hint = false): VaeConfig {
  const base = opt(cfg, 96, "base_dim", "dim");
  const wan22 = wan22Hint || cfg.is_residual === true || cfg.patch_size === 2 || cfg.dec_dim !== undefined;
  const expect = (key: string, ok: (v: unknown) => boolean, what: string) => {
    if (cfg[key] !== undefined && !ok(cfg[key])) throw new CheckpointError(`${file}: '${key}' = ${JSON.stringify(cfg[key])}: ${what}`);
  };
  if (wan22) {
    const why = "not a Wan2.2 VAE (residual levels, 2×2 patchified pixels), and no Wan2.1 VAE has the other Wan2.2 keys";
    expect("is_residual", (v) => v === true || v === null, why);
    expect("patch_size", (v) => v === 2 || v === null, why);
    // diffusers counts the patchified channels its conv_in / conv_out see
    expect("in_channels", (v) => v === 12, why);
    expect("out_channels", (v) => v === 12, why);
  } else {
    const why = "only the Wan2.1 VAE (or Wan2.2's, with is_residual and patch_size 2) is supported";
    expect("in_channels", (v) => v === 3, why);
    expect("out_channels", (v) => v === 3, why);
    expect("decoder_base_dim", (v) => v === null || v === base, why);
  }
  const zDim = positiveInt(opt(cfg, wan22 ? 48 : 16, "z_dim"), file, "z_dim");
  const dimMult = opt(cfg, [1, 2, 4, 4], "dim_mult");
  const temporalDownsample = opt(cfg, [false, true, true], "temperal_downsample", "temporal_downsample");
  if (temporalDownsample.length !== dimMult.length - 1) {
    throw new CheckpointError(`${file}: 'temperal_downsample' needs ${dimMult.length - 1} entries (one per downsampling level)`);
  }
  const attnScales = opt<number[]>(cfg, [], "attn_scales");
  if (attnScales.length) throw new CheckpointError(`${file}: 'attn_scales' ${JSON.stringify(attnScales)}: attention inside the resolution levels is not supported (Wan2.1 has none)`);
  const known = wan22 ? (zDim === 48 ? [WAN22_LATENTS_MEAN, WAN22_LATENTS_STD] : null) : zDim === 16 ? [WAN21_LATENTS_MEAN, WAN21_LATENTS_STD] : null;
  const latentsMean = opt(cfg, known?.[0] ?? new Array(zDim).fill(0), "latents_mean");
  const latentsStd = opt(cfg, known?.[1] ?? new Array(zDim).fill(1), "latents_std");
  if (latentsMean.length !== zDim || latentsStd.length !== zDim) {
    throw new CheckpointError(`${file}: 'latents_mean' / 'latents_std' need ${zDim} values (z_dim)`);
  }
  const dim = positiveInt(base, file, "base_dim");
  return {
    dim,
    zDim,
    dimMult,
    numResBlocks: positiveInt(opt(cfg, 2, "num_res_blocks"), file, "num_res_blocks"),
    temporalDownsample,
    latentsMean,
    latentsStd,
    // the Wan2.2 WanVAE_ default decoder width is 256 whatever `dim` is (its loader never passes dec_dim)
    ...(wan22 ? { wan22: { decoderDim: positiveInt(opt(cfg, 256, "decoder_base_dim", "dec_dim"), file, "decoder_base_dim") } } : {}),
  };
}

/** Frames → latent frames ratio and pixel → latent ratio of a VAE config (Wan2.2's patchify adds 2×). */
export function vaeStrides(cfg: VaeConfig): { temporal: number; spatial: number } {
  return { temporal: 2 ** cfg.temporalDownsample.filter(Boolean).length, spatial: 2 ** (cfg.dimMult.length - 1) * (cfg.wan22 ? 2 : 1) };
}
