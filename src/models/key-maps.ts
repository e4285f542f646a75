// Tensor names across layouts. Models name their tensors as the original Wan code does (the goldens'
// `weights.safetensors`); these tables map the other layouts' names onto those: the diffusers
// WanTransformer3DModel (diffusers' scripts/convert_wan_to_diffusers.py table, both ways) and the
// transformers UMT5EncoderModel. The Wan-VAE's map depends on the VAE's structure (vae-key-map.ts).
// A name with no mapping passes through unchanged, so the reader's "unexpected tensor" check reports
// it under its own name.

/**
 * The same tensor in two layouts: [Wan name, other name]. "#" stands for a block index. A name ending
 * in "." is a module prefix (the rest of the tensor name carries over); any other is a whole name.
 */
export type NamePair = readonly [wan: string, other: string];

type Rule = [RegExp, string];

function rule(from: string, to: string): Rule {
  const pattern = from.split("#").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("(\\d+)");
  return [new RegExp(`^${pattern}${from.endsWith(".") ? "" : "$"}`), to.replace("#", "$1")];
}

function apply(rules: readonly Rule[], name: string): string {
  for (const [re, to] of rules) if (re.test(name)) return name.replace(re, to);
  return name;
}

/** Renames both ways with a table of name pairs; the first matching pair wins. */
export class NameMap {
  readonly #toWan: Rule[];
  readonly #fromWan: Rule[];

  constructor(pairs: readonly NamePair[]) {
    this.#toWan = pairs.map(([wan, other]) => rule(other, wan));
    this.#fromWan = pairs.map(([wan, other]) => rule(wan, other));
  }

  toWan(name: string): string {
    return apply(this.#toWan, name);
  }

  fromWan(name: string): string {
    return apply(this.#fromWan, name);
  }
}

const attentionPairs = (wan: string, diffusers: string): NamePair[] => [
  [`blocks.#.${wan}.o.`, `blocks.#.${diffusers}.to_out.0.`],
  ...["q", "k", "v"].map((m): NamePair => [`blocks.#.${wan}.${m}.`, `blocks.#.${diffusers}.to_${m}.`]),
  ...["q", "k"].map((m): NamePair => [`blocks.#.${wan}.norm_${m}.`, `blocks.#.${diffusers}.norm_${m}.`]),
];

/** Wan DiT ↔ diffusers WanTransformer3DModel. */
const DIT = new NameMap([
  ["time_embedding.0.", "condition_embedder.time_embedder.linear_1."],
  ["time_embedding.2.", "condition_embedder.time_embedder.linear_2."],
  ["time_projection.1.", "condition_embedder.time_proj."],
  ["text_embedding.0.", "condition_embedder.text_embedder.linear_1."],
  ["text_embedding.2.", "condition_embedder.text_embedder.linear_2."],
  ...attentionPairs("self_attn", "attn1"),
  ...attentionPairs("cross_attn", "attn2"),
  // the affine pre-cross-attention norm: Wan "norm3", diffusers "norm2" (the unparameterised norms differ too)
  ["blocks.#.norm3.", "blocks.#.norm2."],
  ["blocks.#.ffn.0.", "blocks.#.ffn.net.0.proj."],
  ["blocks.#.ffn.2.", "blocks.#.ffn.net.2."],
  ["blocks.#.modulation", "blocks.#.scale_shift_table"],
  ["head.modulation", "scale_shift_table"],
  ["head.head.", "proj_out."],
  // Wan2.1 image-to-video: the CLIP image embedding (MLPProj: LayerNorm, Linear, GELU, Linear, LayerNorm)
  // and each cross-attention's own keys/values for the image tokens
  ["img_emb.proj.0.", "condition_embedder.image_embedder.norm1."],
  ["img_emb.proj.1.", "condition_embedder.image_embedder.ff.net.0.proj."],
  ["img_emb.proj.3.", "condition_embedder.image_embedder.ff.net.2."],
  ["img_emb.proj.4.", "condition_embedder.image_embedder.norm2."],
  ["img_emb.emb_pos", "condition_embedder.image_embedder.pos_embed"],
  ["blocks.#.cross_attn.k_img.", "blocks.#.attn2.add_k_proj."],
  ["blocks.#.cross_attn.v_img.", "blocks.#.attn2.add_v_proj."],
  ["blocks.#.cross_attn.norm_k_img.", "blocks.#.attn2.norm_added_k."],
]);

export function ditNameToWan(name: string): string {
  return DIT.toWan(name);
}

/** Wan DiT name → diffusers name (what scripts/convert_wan_to_diffusers.py writes). */
export function ditNameToDiffusers(name: string): string {
  return DIT.fromWan(name);
}

/** True when a DiT checkpoint uses diffusers names (it has the diffusers head table). */
export function isDiffusersDit(names: Iterable<string>): boolean {
  for (const n of names) if (n === "scale_shift_table" || n.startsWith("condition_embedder.")) return true;
  return false;
}

/** Wan T5Encoder ↔ transformers UMT5EncoderModel. */
const T5 = new NameMap([
  ["token_embedding.weight", "shared.weight"],
  ["blocks.#.norm1.", "encoder.block.#.layer.0.layer_norm."],
  ["blocks.#.pos_embedding.embedding.", "encoder.block.#.layer.0.SelfAttention.relative_attention_bias."],
  ...["q", "k", "v", "o"].map((m): NamePair => [`blocks.#.attn.${m}.`, `encoder.block.#.layer.0.SelfAttention.${m}.`]),
  ["blocks.#.norm2.", "encoder.block.#.layer.1.layer_norm."],
  ["blocks.#.ffn.gate.0.", "encoder.block.#.layer.1.DenseReluDense.wi_0."],
  ["blocks.#.ffn.fc1.", "encoder.block.#.layer.1.DenseReluDense.wi_1."],
  ["blocks.#.ffn.fc2.", "encoder.block.#.layer.1.DenseReluDense.wo."],
  ["norm.", "encoder.final_layer_norm."],
]);

/** Wan T5Encoder name → transformers UMT5EncoderModel name. */
export function t5NameToHf(name: string): string {
  return T5.fromWan(name);
}

/** True when a text encoder checkpoint uses transformers names. */
export function isHfT5(names: Iterable<string>): boolean {
  for (const n of names) if (n === "shared.weight" || n.startsWith("encoder.")) return true;
  return false;
}

/**
 * HF UMT5EncoderModel names → Wan T5Encoder names. HF files carry the embedding twice (`shared` and
 * its tied copy `encoder.embed_tokens`); the copy is dropped unless it is the only one.
 */
export function t5Renamer(names: readonly string[]): (name: string) => string | null {
  const hasShared = names.includes("shared.weight");
  return (name) => {
    if (name === "encoder.embed_tokens.weight") return hasShared ? null : "token_embedding.weight";
    return T5.toWan(name);
  };
}
