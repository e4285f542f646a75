// Which Wan pipeline a DiT belongs to, from its config and (where the config cannot tell) its
// tensors:
// - "t2v": Wan2.1 / Wan2.2 text-to-video (in = out channels, no image branch);
// - "i2v": Wan2.1 image-to-video (Wan2.1-I2V-14B-480P/720P): the CLIP image embedding `img_emb`, image
//   key/value projections in every cross-attention, and `in_dim` = noise + 4 mask channels + the
//   VAE latent of the conditioning frames (36 for 16 latent channels);
// - "ti2v": Wan2.2 text-image-to-video (Wan2.2-TI2V-5B): in = out = 48 latent channels (the Wan2.2
//   VAE), image conditioning by replacing the first latent frame, one timestep per token.
// The original layout says it in `model_type`; a diffusers WanTransformer3DModel config says i2v with
// `image_dim` / `added_kv_proj_dim`, and TI2V only through its 48 channels. Everything else (Wan2.2's
// channel-concat I2V-A14B without CLIP, first-last-frame, VACE, speech-to-video, ...) is refused with a
// message naming what was found.
// kino-tiny's image branch is Wan2.1 I2V's (img_emb, image keys/values in every cross-attention) fed
// with the given first frame's own latent cut into the DiT's patches instead of CLIP features, on a
// text-to-video DiT (in = out channels) whose kino block says `"image_features": "latent_patches"`: a
// "t2v" kind whose image tokens are optional (without an image it is the text-to-video model).
import { CheckpointError } from "./safetensors.ts";

export type DitKind = "t2v" | "i2v" | "ti2v";

/** What an image branch's tokens come from: CLIP features (Wan2.1 I2V; required), or the given first
 *  frame's latent in DiT patches (kino-tiny; optional). */
export type ImageFeatures = "clip" | "latent_patches";

export interface DitKindInfo {
  kind: DitKind;
  /** Width of the image features the image embedding takes (1280 for CLIP ViT-H; out · ph · pw for
   *  latent patches); null without an image branch. */
  imageDim: number | null;
  imageFeatures: ImageFeatures | null;
}

/** The kino block's image_features key ("latent_patches" or absent). */
const LATENT_PATCHES = "latent_patches";

/** Tensor shapes by Wan (original) name. */
export type TensorShapes = ReadonlyMap<string, readonly number[]>;

/** Latent channels of the Wan2.2 VAE, the only TI2V latent space. */
export const WAN22_LATENT_CHANNELS = 48;
/** Channels of the i2v frame mask that precede the conditioning latent in y (Wan's 4-frame fold). */
export const I2V_MASK_CHANNELS = 4;
/** The width WanModel hard-codes for img_emb (CLIP ViT-H/14), used when no tensors are at hand. */
const CLIP_VIT_H_WIDTH = 1280;

const KNOWN_OTHERS: Record<string, string> = {
  flf2v: "first-last-frame-to-video",
  vace: "VACE (video editing / control)",
  s2v: "speech-to-video",
  animate: "character animation",
};

/** The pipeline a DiT config belongs to; throws (naming what was found) when it is none of ours. */
export function recogniseDitKind(cfg: Record<string, unknown>, file: string, tensors?: TensorShapes): DitKindInfo {
  const diffusers = cfg.num_attention_heads !== undefined;
  const inDim = Number(diffusers ? cfg.in_channels : cfg.in_dim), outDim = Number(diffusers ? cfg.out_channels : cfg.out_dim);
  const found = `found ${diffusers ? `in_channels ${inDim}, out_channels ${outDim}` : `model_type ${JSON.stringify(cfg.model_type)}, in_dim ${inDim}, out_dim ${outDim}`}`;
  const none = (why: string): never => {
    throw new CheckpointError(`${file}: not a text-to-video, image-to-video or text-image-to-video Wan DiT (${found}): ${why}`);
  };
  const imgEmb = tensors?.get("img_emb.proj.0.weight");
  const features = (cfg.kino as Record<string, unknown> | undefined)?.image_features;
  if (features !== undefined && features !== LATENT_PATCHES) none(`kino.image_features ${JSON.stringify(features)}: only "${LATENT_PATCHES}" is known`);
  if (features === LATENT_PATCHES && tensors && !imgEmb) none(`kino.image_features "${LATENT_PATCHES}" but no img_emb.* tensors`);
  if (features === LATENT_PATCHES) return latentPatchBranch(cfg, diffusers, inDim, outDim, imgEmb, none);
  if (tensors?.has("img_emb.emb_pos")) none(`'img_emb.emb_pos' is the ${KNOWN_OTHERS.flf2v} position table, which is not supported`);
  if (diffusers && cfg.pos_embed_seq_len != null) none(`'pos_embed_seq_len' = ${JSON.stringify(cfg.pos_embed_seq_len)} marks ${KNOWN_OTHERS.flf2v}, which is not supported`);

  let kind: DitKind;
  if (diffusers) {
    const image = cfg.image_dim != null || cfg.added_kv_proj_dim != null;
    if (image && (cfg.image_dim == null || cfg.added_kv_proj_dim == null)) none("'image_dim' and 'added_kv_proj_dim' must both be set for image-to-video");
    kind = image ? "i2v" : inDim === WAN22_LATENT_CHANNELS && outDim === WAN22_LATENT_CHANNELS ? "ti2v" : "t2v";
  } else {
    const type = cfg.model_type ?? "t2v";
    if (type !== "t2v" && type !== "i2v" && type !== "ti2v") {
      none(typeof type === "string" && KNOWN_OTHERS[type] ? `${KNOWN_OTHERS[type]} is not supported` : `unknown model_type (t2v, i2v and ti2v are served)`);
    }
    kind = type as DitKind;
    if (kind === "i2v" && tensors && !imgEmb) none("no img_emb.* tensors: image-to-video by channel concatenation without the CLIP image branch (Wan2.2 I2V-A14B) is not supported");
  }
  if (kind !== "i2v" && imgEmb) none("img_emb.* (CLIP image embedding) tensors in a checkpoint whose config does not say image-to-video");

  if (kind === "i2v") {
    if (inDim !== 2 * outDim + I2V_MASK_CHANNELS) none(`image-to-video takes the noise, ${I2V_MASK_CHANNELS} mask channels and the conditioning latent: in_dim must be 2·${outDim} + ${I2V_MASK_CHANNELS} = ${2 * outDim + I2V_MASK_CHANNELS}`);
    const imageDim = imgEmb?.[0] ?? (diffusers ? Number(cfg.image_dim) : CLIP_VIT_H_WIDTH);
    if (diffusers && imgEmb && imgEmb[0] !== cfg.image_dim) none(`'image_dim' = ${cfg.image_dim} but img_emb's first norm has ${imgEmb[0]} channels`);
    return { kind, imageDim, imageFeatures: "clip" };
  }
  if (inDim !== outDim) {
    none(kind === "t2v" && inDim === 2 * outDim + I2V_MASK_CHANNELS
      ? "image-to-video channels without the CLIP image branch (Wan2.2 I2V-A14B style) are not supported"
      : `${kind === "ti2v" ? "text-image-to-video" : "text-to-video"} needs as many input as output channels`);
  }
  if (kind === "ti2v" && inDim !== WAN22_LATENT_CHANNELS) none(`text-image-to-video works on the Wan2.2 VAE's ${WAN22_LATENT_CHANNELS} latent channels`);
  return { kind, imageDim: null, imageFeatures: null };
}

/** A text-to-video DiT with kino's latent-patch image branch: its image features are out · ph · pw wide. */
function latentPatchBranch(cfg: Record<string, unknown>, diffusers: boolean, inDim: number, outDim: number, imgEmb: readonly number[] | undefined, none: (why: string) => never): DitKindInfo {
  const patch = cfg.patch_size as number[] | undefined;
  const width = outDim * (patch?.[1] ?? 0) * (patch?.[2] ?? 0);
  if (inDim !== outDim) none(`kino.image_features "${LATENT_PATCHES}" is a text-to-video DiT's branch: in and out channels must match`);
  if (diffusers && (cfg.image_dim !== width || cfg.added_kv_proj_dim == null)) {
    none(`kino.image_features "${LATENT_PATCHES}" needs 'image_dim' = out_channels · patch height · patch width = ${width} and 'added_kv_proj_dim' (found ${JSON.stringify(cfg.image_dim)} and ${JSON.stringify(cfg.added_kv_proj_dim)})`);
  }
  if (!diffusers && (cfg.model_type ?? "t2v") !== "t2v") none(`kino.image_features "${LATENT_PATCHES}" is a text-to-video DiT's branch (model_type t2v)`);
  if (imgEmb && imgEmb[0] !== width) none(`img_emb's first norm has ${imgEmb[0]} channels, not the ${width} values of a latent patch`);
  return { kind: "t2v", imageDim: width, imageFeatures: LATENT_PATCHES };
}
