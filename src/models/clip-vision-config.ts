// The CLIP visual tower's configuration and its two weight layouts:
// - Wan (`models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth`, converted to safetensors): the
//   whole XLM-RoBERTa CLIP, of which only `visual.*` is the image tower (`textual.*` and `log_scale`
//   belong to the text tower Wan never runs); fused `attn.to_qkv`, `mlp.{0,2}`, `[1, 1, D]` class and
//   `[1, N, D]` position embeddings. These are the canonical names the model asks for.
// - transformers CLIPVisionModel(WithProjection) (the `image_encoder/` of the *-Diffusers I2V
//   releases): `vision_model.*`, separate `q_proj`/`k_proj`/`v_proj` (canonical `attn.to_q` … here,
//   joined on the device at load), `[D]` class and `[N, D]` position embeddings.
import { type Json } from "./configs.ts";
import { CheckpointError, type TensorTable } from "./safetensors.ts";

export interface ClipVisionConfig {
  /** Square input side (224) and patch side (14): (imageSize / patchSize)² patches + 1 class token. */
  imageSize: number;
  patchSize: number;
  dim: number;
  numHeads: number;
  numLayers: number;
  ffnDim: number;
  /** LayerNorm eps (1e-5; the DiT's is 1e-6). */
  eps: number;
  /** Per-channel normalisation of the [0, 1] image (OpenAI CLIP's constants). */
  mean: readonly [number, number, number];
  std: readonly [number, number, number];
  /** Blocks run: Wan's I2V takes the hidden states after all blocks but the last (`use_31_block`,
   *  diffusers `hidden_states[-2]`). */
  usedLayers: number;
}

const OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
const OPENAI_STD = [0.26862954, 0.26130258, 0.27577711] as const;

/** The tower Wan2.1 I2V uses (open-clip xlm-roberta-large ViT-H/14): 257 tokens of width 1280. */
export const CLIP_VIT_H_14: ClipVisionConfig = {
  imageSize: 224, patchSize: 14, dim: 1280, numHeads: 16, numLayers: 32, ffnDim: 5120, eps: 1e-5,
  mean: OPENAI_MEAN, std: OPENAI_STD, usedLayers: 31,
};

/** ViT-H's head width: a checkpoint without a config has dim / 80 heads. */
const VIT_H_HEAD_DIM = 80;

function int(v: unknown, file: string, key: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw new CheckpointError(`${file}: '${key}' must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/**
 * A config.json of either kind: Wan's VisionTransformer arguments (`dim`, `num_heads`, `num_layers`,
 * `mlp_ratio`, `activation`, `norm_eps`, …) or a transformers CLIPVisionConfig (`hidden_size`,
 * `num_attention_heads`, `num_hidden_layers`, `intermediate_size`, `hidden_act`, `layer_norm_eps`).
 * Only what Wan's tower computes is accepted: exact GELU, pre-norm, a class token.
 */
export function parseClipVisionConfig(cfg: Json, file: string): ClipVisionConfig {
  const hf = cfg.hidden_size !== undefined;
  const get = (wan: string, tf: string) => (hf ? cfg[tf] : cfg[wan]);
  const refuse = (key: string, why: string): never => {
    throw new CheckpointError(`${file}: '${key}' = ${JSON.stringify(cfg[key])}: ${why}`);
  };
  const act = get("activation", "hidden_act") ?? "gelu";
  if (act !== "gelu") refuse(hf ? "hidden_act" : "activation", "only exact GELU is supported (the ViT-H/14 tower Wan uses)");
  if (!hf && cfg.pool_type !== undefined && cfg.pool_type !== "token") refuse("pool_type", "only a class token ('token')");
  if (!hf && cfg.pre_norm === false) refuse("pre_norm", "the tower must normalise its embeddings before the blocks");
  const dim = int(get("dim", "hidden_size"), file, hf ? "hidden_size" : "dim");
  const numHeads = int(get("num_heads", "num_attention_heads"), file, hf ? "num_attention_heads" : "num_heads");
  if (dim % numHeads) refuse(hf ? "hidden_size" : "dim", `not divisible by ${numHeads} heads`);
  const numLayers = int(get("num_layers", "num_hidden_layers"), file, hf ? "num_hidden_layers" : "num_layers");
  const ffnDim = hf ? int(cfg.intermediate_size, file, "intermediate_size") : int(Math.round(dim * Number(cfg.mlp_ratio ?? 4)), file, "mlp_ratio");
  const imageSize = int(cfg.image_size ?? 224, file, "image_size"), patchSize = int(cfg.patch_size ?? 14, file, "patch_size");
  if (imageSize % patchSize) refuse("image_size", `not a multiple of patch_size ${patchSize}`);
  return {
    imageSize, patchSize, dim, numHeads, numLayers, ffnDim,
    eps: Number(get("norm_eps", "layer_norm_eps") ?? 1e-5),
    mean: OPENAI_MEAN, std: OPENAI_STD,
    usedLayers: numLayers - 1,
  };
}

/** transformers CLIPVisionModel names → Wan's (null: not a parameter Wan's tower has). */
export function clipNameToWan(name: string): string | null {
  if (name === "vision_model.embeddings.position_ids") return null;
  const m = /^vision_model\.encoder\.layers\.(\d+)\.(.+)$/.exec(name);
  if (m) {
    const inner: Record<string, string> = {
      "layer_norm1": "norm1", "layer_norm2": "norm2", "mlp.fc1": "mlp.0", "mlp.fc2": "mlp.2",
      "self_attn.q_proj": "attn.to_q", "self_attn.k_proj": "attn.to_k", "self_attn.v_proj": "attn.to_v", "self_attn.out_proj": "attn.proj",
    };
    const [, layer, rest] = m;
    const dot = rest!.lastIndexOf(".");
    const mod = inner[rest!.slice(0, dot)];
    return mod ? `visual.transformer.${layer}.${mod}${rest!.slice(dot)}` : name;
  }
  const top: Record<string, string> = {
    "vision_model.embeddings.patch_embedding.weight": "visual.patch_embedding.weight",
    "vision_model.embeddings.class_embedding": "visual.cls_embedding",
    "vision_model.embeddings.position_embedding.weight": "visual.pos_embedding",
    "vision_model.pre_layrnorm.weight": "visual.pre_norm.weight",
    "vision_model.pre_layrnorm.bias": "visual.pre_norm.bias",
    "vision_model.post_layernorm.weight": "visual.post_norm.weight",
    "vision_model.post_layernorm.bias": "visual.post_norm.bias",
    "visual_projection.weight": "visual.head",
  };
  return top[name] ?? name;
}

/** True when a CLIP file uses transformers names. */
export function isTransformersClip(names: Iterable<string>): boolean {
  for (const n of names) if (n.startsWith("vision_model.")) return true;
  return false;
}

/**
 * The tower's shape from the tensors alone (Wan ships no config for its CLIP): width and patch from
 * the patch embedding, image side from the position table, depth from the blocks present; heads at
 * ViT-H's width of 80. Fails, naming the file, when the tensors are not a CLIP visual tower.
 */
export function inferClipVisionConfig(table: TensorTable): ClipVisionConfig {
  const rename = isTransformersClip(table.tensors.keys()) ? clipNameToWan : (n: string) => n;
  const shapes = new Map<string, number[]>();
  for (const [n, info] of table.tensors) {
    const c = rename(n);
    if (c) shapes.set(c, info.shape);
  }
  const file = table.files[0]!;
  const patch = shapes.get("visual.patch_embedding.weight"), pos = shapes.get("visual.pos_embedding");
  const fc1 = shapes.get("visual.transformer.0.mlp.0.weight");
  if (!patch || patch.length !== 4 || patch[1] !== 3 || !pos || !fc1) {
    throw new CheckpointError(`${file}: not a CLIP visual tower (visual.patch_embedding / visual.pos_embedding / visual.transformer.0 missing)`);
  }
  const [dim, , p] = patch as [number, number, number, number];
  const tokens = pos.reduce((a, b) => a * b, 1) / dim;
  const side = Math.round(Math.sqrt(tokens - 1));
  if (side * side !== tokens - 1) throw new CheckpointError(`${file}: position table of ${tokens} tokens is not a class token plus a square grid`);
  if (dim % VIT_H_HEAD_DIM) throw new CheckpointError(`${file}: width ${dim} is not a multiple of ViT-H's head size ${VIT_H_HEAD_DIM}; give the tower a config.json with its head count`);
  let numLayers = 0;
  while (shapes.has(`visual.transformer.${numLayers}.norm1.weight`)) numLayers++;
  return { ...CLIP_VIT_H_14, imageSize: side * p, patchSize: p, dim, numHeads: dim / VIT_H_HEAD_DIM, numLayers, ffnDim: fc1[0]!, usedLayers: numLayers - 1 };
}
