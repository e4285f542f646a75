// Finding the parts of a Wan checkpoint on disk, in either layout:
// - diffusers: model_index.json, then transformer/, text_encoder/, tokenizer/, vae/, scheduler/, each
//   with its config and weights (single or sharded safetensors);
// - original Wan (Wan-AI/Wan2.1-T2V-*): config.json (WanModel), diffusion_pytorch_model*.safetensors,
//   the umT5 and VAE weights beside it (as safetensors: the .pth pickles are not read), and the
//   tokenizer under google/umt5-xxl/.
// An image-to-video (i2v) checkpoint also needs the CLIP image encoder: `image_encoder/` (transformers
// CLIPVisionModel, its config.json) in the diffusers layout, `models_clip_*.safetensors` (the
// open-clip .pth converted, config inferred from shapes) in the original one. A diffusers folder may
// also hold `prompt_extender/` (kino-tiny's image reader, image-attributes.ts).
// Tensor key names are recognised per component from the names themselves (key-maps.ts,
// wan-vae-layout.ts), so a diffusers folder may hold a Wan-named DiT or VAE and vice versa. Configs
// missing from the original layout are inferred from shapes.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { type Json, type T5Config, type VaeConfig, type WanDitConfig, UMT5_XXL, parseDitConfig, parseT5Config, parseVaeConfig } from "./configs.ts";
import { ditNameToDiffusers, ditNameToWan, isDiffusersDit, isHfT5, t5NameToHf, t5Renamer } from "./key-maps.ts";
import { type ClipVisionConfig, clipNameToWan, inferClipVisionConfig, isTransformersClip, parseClipVisionConfig } from "./clip-vision-config.ts";
import { type ImageReaderConfig, parseImageReaderConfig } from "./image-attributes.ts";
import { type KinoConfig, kinoTextLen, parseKinoConfig } from "./kino-config.ts";
import { CheckpointError, type TensorTable, openTensorTable } from "./safetensors.ts";
import { isDiffusersVae, vaeKeyMap } from "./wan-vae-layout.ts";
import { isWan22Vae } from "./wan-vae22-layout.ts";

export interface Component<C> {
  config: C;
  table: TensorTable;
  /** File tensor name → Wan (canonical) name; null drops it. */
  rename: (name: string) => string | null;
  /** Wan name → this file's name (for messages about missing tensors). */
  fileName?: (name: string) => string;
}

export interface WanCheckpoint {
  layout: "diffusers" | "wan";
  root: string;
  /** A name for the model card: model_index `_name_or_path`, or the folder name. */
  name: string;
  dit: Component<WanDitConfig>;
  textEncoder: Component<T5Config>;
  tokenizerJson: string;
  vae: Component<VaeConfig>;
  /** The CLIP visual tower of an image-to-video (i2v) checkpoint; null for the other kinds. */
  imageEncoder: Component<ClipVisionConfig> | null;
  /** The image reader that words what a given frame shows into the prompt (prompt_extender/), if any. */
  promptExtender: Component<ImageReaderConfig> | null;
  /** The serving/sampling settings (transformer config "kino" object, scheduler config, defaults). */
  kino: KinoConfig;
}

async function readJson(path: string): Promise<Json> {
  try {
    return (await Bun.file(path).json()) as Json;
  } catch (err) {
    throw new CheckpointError(`${path}: cannot read JSON (${(err as Error).message})`);
  }
}

/** The weights file of a folder: a shard index if there is one, else the single safetensors file. */
function weightsIn(dir: string, preferred: string[], what: string): string {
  if (!existsSync(dir)) throw new CheckpointError(`${dir}: missing ${what} folder`);
  const files = readdirSync(dir);
  for (const p of preferred) {
    if (files.includes(`${p}.safetensors.index.json`)) return join(dir, `${p}.safetensors.index.json`);
    if (files.includes(`${p}.safetensors`)) return join(dir, `${p}.safetensors`);
  }
  const index = files.filter((f) => f.endsWith(".safetensors.index.json"));
  if (index.length === 1) return join(dir, index[0]!);
  const single = files.filter((f) => f.endsWith(".safetensors"));
  if (single.length === 1) return join(dir, single[0]!);
  const pth = files.find((f) => f.endsWith(".pth") || f.endsWith(".bin") || f.endsWith(".pt"));
  if (pth) throw new CheckpointError(`${join(dir, pth)}: PyTorch pickles are not read; convert the ${what} weights to safetensors`);
  throw new CheckpointError(`${dir}: no ${what} weights (*.safetensors) found`);
}

/** The DiT's naming (diffusers or Wan, recognised from the tensors) and config; the pipeline it
 *  belongs to is recognised from both (dit-kind.ts). */
function ditComponent(json: Json, file: string, textLen: number | undefined, table: TensorTable): Component<WanDitConfig> {
  const diffusers = isDiffusersDit(table.tensors.keys());
  const rename = diffusers ? ditNameToWan : (n: string) => n;
  const shapes = new Map([...table.tensors].map(([name, info]) => [rename(name), info.shape] as const));
  return { config: parseDitConfig(json, file, textLen, shapes), table, rename, fileName: diffusers ? ditNameToDiffusers : undefined };
}

/** The text encoder's naming: transformers UMT5 or Wan, recognised from the tensors. */
function t5Component(config: T5Config, table: TensorTable): Component<T5Config> {
  const names = [...table.tensors.keys()];
  return { config, table, rename: t5Renamer(names), fileName: isHfT5(names) ? t5NameToHf : undefined };
}

/** The VAE's naming: AutoencoderKLWan or Wan, recognised from the tensors; the structure the config
 *  names (Wan2.1 or Wan2.2) must be the one the tensors have. */
function vaeComponent(config: VaeConfig, table: TensorTable): Component<VaeConfig> {
  const file = table.files[0]!, which = (v22: boolean) => (v22 ? "Wan2.2" : "Wan2.1");
  if (!isDiffusersVae(table.tensors.keys())) {
    const v22 = isWan22Vae(table.tensors.keys());
    if (v22 !== !!config.wan22) throw new CheckpointError(`${file}: the config describes a ${which(!!config.wan22)} VAE but the tensors are a ${which(v22)} VAE's`);
    return { config, table, rename: (n) => n };
  }
  if (config.wan22) throw new CheckpointError(`${file}: a Wan2.2 VAE under diffusers AutoencoderKLWan names is not supported; use Wan2.2_VAE.pth (Wan names) converted to safetensors`);
  const map = vaeKeyMap(config);
  return { config, table, rename: map.toWan, fileName: map.toDiffusers };
}

/** The last path component (a model card name). */
const folderName = (root: string) => root.split("/").filter(Boolean).pop() ?? "wan";

export async function resolveCheckpoint(root: string): Promise<WanCheckpoint> {
  if (!existsSync(root)) throw new CheckpointError(`${root}: checkpoint directory not found`);
  if (existsSync(join(root, "model_index.json"))) return resolveDiffusers(root);
  if (existsSync(join(root, "config.json"))) return resolveOriginal(root);
  throw new CheckpointError(`${root}: not a checkpoint (no model_index.json for diffusers, no config.json for the Wan layout)`);
}

/** The CLIP tower's naming: transformers CLIPVisionModel or Wan's open-clip, recognised from the tensors. */
function clipComponent(config: ClipVisionConfig, table: TensorTable): Component<ClipVisionConfig> {
  return isTransformersClip(table.tensors.keys()) ? { config, table, rename: clipNameToWan } : { config, table, rename: (n) => n };
}

const missingClip = (root: string) =>
  new CheckpointError(`${root}: an image-to-video (i2v) checkpoint needs the CLIP image encoder: no models_clip_*.safetensors or image_encoder/ found`);

async function resolveDiffusers(root: string): Promise<WanCheckpoint> {
  const index = await readJson(join(root, "model_index.json"));
  const ditCfgPath = join(root, "transformer", "config.json");
  const ditJson = await readJson(ditCfgPath);
  const sched = existsSync(join(root, "scheduler", "scheduler_config.json")) ? await readJson(join(root, "scheduler", "scheduler_config.json")) : {};
  const kinoJson = (ditJson.kino ?? null) as Json | null;
  const ditTable = await openTensorTable(weightsIn(join(root, "transformer"), ["diffusion_pytorch_model", "model"], "transformer"));
  const dit = ditComponent(ditJson, ditCfgPath, kinoTextLen(kinoJson), ditTable);
  const kino = parseKinoConfig(kinoJson, sched, ditCfgPath, dit.config.kind);
  const t5Path = join(root, "text_encoder", "config.json");
  const t5Table = await openTensorTable(weightsIn(join(root, "text_encoder"), ["model", "pytorch_model"], "text_encoder"));
  const vaeCfgPath = join(root, "vae", "config.json");
  const vaeTable = await openTensorTable(weightsIn(join(root, "vae"), ["diffusion_pytorch_model", "model"], "vae"));
  const tokenizerJson = join(root, "tokenizer", "tokenizer.json");
  if (!existsSync(tokenizerJson)) throw new CheckpointError(`${tokenizerJson}: missing (a tokenizer.json is needed; sentencepiece .model files are not read)`);
  return {
    layout: "diffusers",
    root,
    name: String(index._name_or_path ?? folderName(root)),
    dit,
    textEncoder: t5Component(parseT5Config(await readJson(t5Path), t5Path), t5Table),
    tokenizerJson,
    vae: vaeComponent(parseVaeConfig(await readJson(vaeCfgPath), vaeCfgPath), vaeTable),
    imageEncoder: dit.config.kind === "i2v" ? await diffusersClip(root) : null,
    promptExtender: await promptExtenderIn(root),
    kino,
  };
}

/** prompt_extender/: config.json and model.safetensors, when the checkpoint has one. */
async function promptExtenderIn(root: string): Promise<Component<ImageReaderConfig> | null> {
  const dir = join(root, "prompt_extender");
  if (!existsSync(dir)) return null;
  const cfgPath = join(dir, "config.json");
  const table = await openTensorTable(weightsIn(dir, ["model"], "prompt_extender"));
  return { config: parseImageReaderConfig(await readJson(cfgPath), cfgPath), table, rename: (n) => n };
}

/** image_encoder/: a transformers CLIPVisionModel(WithProjection), config and safetensors. */
async function diffusersClip(root: string): Promise<Component<ClipVisionConfig>> {
  const dir = join(root, "image_encoder");
  if (!existsSync(dir)) throw missingClip(root);
  const cfgPath = join(dir, "config.json");
  const table = await openTensorTable(weightsIn(dir, ["model", "pytorch_model"], "image_encoder"));
  const config = existsSync(cfgPath) ? parseClipVisionConfig(await readJson(cfgPath), cfgPath) : inferClipVisionConfig(table);
  return clipComponent(config, table);
}

/** Wan-AI/Wan2.1-T2V-* as released, with the .pth files converted to safetensors of the same stem. */
async function resolveOriginal(root: string): Promise<WanCheckpoint> {
  const cfgPath = join(root, "config.json");
  const cfg = await readJson(cfgPath);
  const kinoJson = (cfg.kino ?? null) as Json | null;
  const ditTable = await openTensorTable(weightsIn(root, ["diffusion_pytorch_model"], "DiT"));
  const dit = ditComponent(cfg, cfgPath, kinoTextLen(kinoJson), ditTable);
  const kino = parseKinoConfig(kinoJson, {}, cfgPath, dit.config.kind);
  const find = (prefix: string, what: string) => {
    const f = readdirSync(root).filter((n) => n.startsWith(prefix) && (n.endsWith(".safetensors") || n.endsWith(".safetensors.index.json")));
    if (f.length) return join(root, f.find((n) => n.endsWith(".index.json")) ?? f[0]!);
    const pth = readdirSync(root).find((n) => n.startsWith(prefix) && n.endsWith(".pth"));
    throw new CheckpointError(pth ? `${join(root, pth)}: PyTorch pickles are not read; convert the ${what} to safetensors (same file stem)` : `${root}: no ${what} weights (${prefix}*.safetensors)`);
  };
  const t5Table = await openTensorTable(find("models_t5", "umT5 text encoder"));
  const vaeFile = readdirSync(root).some((n) => n.startsWith("Wan2.2_VAE")) ? "Wan2.2_VAE" : "Wan2.1_VAE";
  const vaeTable = await openTensorTable(find(vaeFile, "VAE"));
  const tokenizerJson = [join(root, "google", "umt5-xxl", "tokenizer.json"), join(root, "tokenizer", "tokenizer.json")].find(existsSync);
  if (!tokenizerJson) throw new CheckpointError(`${root}: missing google/umt5-xxl/tokenizer.json`);
  let imageEncoder: Component<ClipVisionConfig> | null = null;
  if (dit.config.kind === "i2v") {
    // models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth beside the DiT, converted to safetensors
    if (!readdirSync(root).some((n) => n.startsWith("models_clip"))) throw missingClip(root);
    const table = await openTensorTable(find("models_clip", "CLIP image encoder"));
    imageEncoder = clipComponent(inferClipVisionConfig(table), table);
  }
  return {
    layout: "wan",
    root,
    name: folderName(root),
    dit,
    textEncoder: t5Component(inferT5Config(t5Table), t5Table),
    tokenizerJson,
    vae: vaeComponent(inferVaeConfig(vaeTable), vaeTable),
    imageEncoder,
    promptExtender: null,
    kino,
  };
}

/** umT5 hyper-parameters from tensor shapes (the original layout ships no encoder config). */
function inferT5Config(table: TensorTable): T5Config {
  const rename = t5Renamer([...table.tensors.keys()]);
  const shapes = new Map<string, number[]>();
  for (const [n, info] of table.tensors) {
    const c = rename(n);
    if (c) shapes.set(c, info.shape);
  }
  const emb = shapes.get("token_embedding.weight"), q = shapes.get("blocks.0.attn.q.weight");
  const fc1 = shapes.get("blocks.0.ffn.fc1.weight"), pos = shapes.get("blocks.0.pos_embedding.embedding.weight");
  if (!emb || !q || !fc1 || !pos) throw new CheckpointError(`${table.files[0]}: not a umT5 encoder (token_embedding / blocks.0 tensors missing)`);
  let layers = 0;
  while (shapes.has(`blocks.${layers}.norm1.weight`)) layers++;
  return { ...UMT5_XXL, vocab: emb[0]!, dim: emb[1]!, dimAttn: q[0]!, dimFfn: fc1[0]!, numHeads: pos[1]!, numBuckets: pos[0]!, numLayers: layers, sharedPos: !shapes.has("blocks.1.pos_embedding.embedding.weight") && layers > 1 };
}

/**
 * The VAE's structure from its tensors (either naming): Wan2.1's (conv1 over 3 pixel channels, flat
 * stage lists) or Wan2.2's (conv1 over 12 patchified channels, nested levels); base width, decoder
 * width and z_dim from shapes, the rest as both releases have it. Anything else is refused, saying why.
 */
export function inferVaeConfig(table: TensorTable): VaeConfig {
  const file = table.files[0]!, shape = (...names: string[]) => names.map((n) => table.tensors.get(n)?.shape).find(Boolean);
  const conv1 = shape("encoder.conv1.weight", "encoder.conv_in.weight"), z = shape("conv2.weight", "post_quant_conv.weight");
  if (!conv1 || !z) throw new CheckpointError(`${file}: not a Wan VAE (encoder.conv1 / conv2 missing)`);
  const wan22 = isWan22Vae(table.tensors.keys()), pixels = conv1[1];
  if (pixels !== (wan22 ? 12 : 3)) {
    throw new CheckpointError(`${file}: neither a Wan2.1 VAE (encoder.conv1 over 3 pixel channels, flat stages) nor a Wan2.2 VAE (over 12 patchified channels, nested levels): encoder.conv1 takes ${pixels} channels and the stages are ${wan22 ? "nested" : "flat"}`);
  }
  if (!wan22) return parseVaeConfig({ dim: conv1[0], z_dim: z[0] }, file);
  const dec = shape("decoder.conv1.weight");
  if (!dec || dec[0]! % 4) throw new CheckpointError(`${file}: Wan2.2 VAE without a decoder.conv1 of 4·dec_dim channels`);
  return parseVaeConfig({ dim: conv1[0], z_dim: z[0], dec_dim: dec[0]! / 4 }, file, true);
}
