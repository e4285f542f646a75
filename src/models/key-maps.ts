// Tensor names across layouts. Models name their tensors as the original Wan code does (the goldens'
// `weights.safetensors`); these functions map the other layouts' names onto those: the diffusers
// WanTransformer3DModel (the inverse of diffusers' scripts/convert_wan_to_diffusers.py table) and the
// transformers UMT5EncoderModel. A name with no mapping passes through unchanged, so the reader's
// "unexpected tensor" check reports it under its own name.

/** Rules applied in order to a diffusers DiT name; the first match wins. */
const DIT_DIFFUSERS_TO_WAN: [RegExp, string][] = [
  [/^condition_embedder\.time_embedder\.linear_1\./, "time_embedding.0."],
  [/^condition_embedder\.time_embedder\.linear_2\./, "time_embedding.2."],
  [/^condition_embedder\.time_proj\./, "time_projection.1."],
  [/^condition_embedder\.text_embedder\.linear_1\./, "text_embedding.0."],
  [/^condition_embedder\.text_embedder\.linear_2\./, "text_embedding.2."],
  [/^blocks\.(\d+)\.attn1\.to_out\.0\./, "blocks.$1.self_attn.o."],
  [/^blocks\.(\d+)\.attn1\.to_([qkv])\./, "blocks.$1.self_attn.$2."],
  [/^blocks\.(\d+)\.attn1\.norm_([qk])\./, "blocks.$1.self_attn.norm_$2."],
  [/^blocks\.(\d+)\.attn2\.to_out\.0\./, "blocks.$1.cross_attn.o."],
  [/^blocks\.(\d+)\.attn2\.to_([qkv])\./, "blocks.$1.cross_attn.$2."],
  [/^blocks\.(\d+)\.attn2\.norm_([qk])\./, "blocks.$1.cross_attn.norm_$2."],
  // diffusers calls the affine pre-cross-attention norm "norm2"; Wan calls it "norm3"
  [/^blocks\.(\d+)\.norm2\./, "blocks.$1.norm3."],
  [/^blocks\.(\d+)\.ffn\.net\.0\.proj\./, "blocks.$1.ffn.0."],
  [/^blocks\.(\d+)\.ffn\.net\.2\./, "blocks.$1.ffn.2."],
  [/^blocks\.(\d+)\.scale_shift_table$/, "blocks.$1.modulation"],
  [/^scale_shift_table$/, "head.modulation"],
  [/^proj_out\./, "head.head."],
];

export function ditNameToWan(name: string): string {
  for (const [re, to] of DIT_DIFFUSERS_TO_WAN) if (re.test(name)) return name.replace(re, to);
  return name;
}

/** Wan DiT name → diffusers name (what scripts/convert_wan_to_diffusers.py writes). */
const DIT_WAN_TO_DIFFUSERS: [RegExp, string][] = [
  [/^time_embedding\.0\./, "condition_embedder.time_embedder.linear_1."],
  [/^time_embedding\.2\./, "condition_embedder.time_embedder.linear_2."],
  [/^time_projection\.1\./, "condition_embedder.time_proj."],
  [/^text_embedding\.0\./, "condition_embedder.text_embedder.linear_1."],
  [/^text_embedding\.2\./, "condition_embedder.text_embedder.linear_2."],
  [/^blocks\.(\d+)\.self_attn\.o\./, "blocks.$1.attn1.to_out.0."],
  [/^blocks\.(\d+)\.self_attn\.([qkv])\./, "blocks.$1.attn1.to_$2."],
  [/^blocks\.(\d+)\.self_attn\.norm_([qk])\./, "blocks.$1.attn1.norm_$2."],
  [/^blocks\.(\d+)\.cross_attn\.o\./, "blocks.$1.attn2.to_out.0."],
  [/^blocks\.(\d+)\.cross_attn\.([qkv])\./, "blocks.$1.attn2.to_$2."],
  [/^blocks\.(\d+)\.cross_attn\.norm_([qk])\./, "blocks.$1.attn2.norm_$2."],
  [/^blocks\.(\d+)\.norm3\./, "blocks.$1.norm2."],
  [/^blocks\.(\d+)\.ffn\.0\./, "blocks.$1.ffn.net.0.proj."],
  [/^blocks\.(\d+)\.ffn\.2\./, "blocks.$1.ffn.net.2."],
  [/^blocks\.(\d+)\.modulation$/, "blocks.$1.scale_shift_table"],
  [/^head\.modulation$/, "scale_shift_table"],
  [/^head\.head\./, "proj_out."],
];

export function ditNameToDiffusers(name: string): string {
  for (const [re, to] of DIT_WAN_TO_DIFFUSERS) if (re.test(name)) return name.replace(re, to);
  return name;
}

/** True when a DiT checkpoint uses diffusers names (it has the diffusers head table). */
export function isDiffusersDit(names: Iterable<string>): boolean {
  for (const n of names) if (n === "scale_shift_table" || n.startsWith("condition_embedder.")) return true;
  return false;
}

const T5_HF_TO_WAN: [RegExp, string][] = [
  [/^shared\.weight$/, "token_embedding.weight"],
  [/^encoder\.block\.(\d+)\.layer\.0\.layer_norm\./, "blocks.$1.norm1."],
  [/^encoder\.block\.(\d+)\.layer\.0\.SelfAttention\.relative_attention_bias\./, "blocks.$1.pos_embedding.embedding."],
  [/^encoder\.block\.(\d+)\.layer\.0\.SelfAttention\.([qkvo])\./, "blocks.$1.attn.$2."],
  [/^encoder\.block\.(\d+)\.layer\.1\.layer_norm\./, "blocks.$1.norm2."],
  [/^encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wi_0\./, "blocks.$1.ffn.gate.0."],
  [/^encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wi_1\./, "blocks.$1.ffn.fc1."],
  [/^encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wo\./, "blocks.$1.ffn.fc2."],
  [/^encoder\.final_layer_norm\./, "norm."],
];

/**
 * HF UMT5EncoderModel names → Wan T5Encoder names. HF files carry the embedding twice (`shared` and
 * its tied copy `encoder.embed_tokens`); the copy is dropped unless it is the only one.
 */
export function t5Renamer(names: readonly string[]): (name: string) => string | null {
  const hasShared = names.includes("shared.weight");
  return (name) => {
    if (name === "encoder.embed_tokens.weight") return hasShared ? null : "token_embedding.weight";
    for (const [re, to] of T5_HF_TO_WAN) if (re.test(name)) return name.replace(re, to);
    return name;
  };
}
