// Which pipeline a DiT checkpoint belongs to (text-to-video, Wan2.1 image-to-video, Wan2.2
// text-image-to-video), recognised from the golden configs in both layouts and from the weights where
// the original config cannot say; every other Wan variant refused with a message naming what was
// found. Then through an original-layout folder: resolveCheckpoint exposes the kind and finds the CLIP
// tower an i2v checkpoint needs (models_clip_*.safetensors), saying what is missing or unreadable, and
// the loader checks the tower against the DiT.
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { type Json, parseDitConfig } from "../../src/models/configs.ts";
import { readSafetensorsHeader } from "../../src/models/safetensors.ts";
import { type TensorToWrite, encodeSafetensors } from "../../src/models/safetensors-write.ts";
import { readAsF32 } from "../../src/models/weights.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { goldenJson, goldenPath } from "./helpers/goldens.ts";

await buildCpuWasm(); // loadPipeline opens the WebAssembly backend

const configs = {
  t2v: await goldenJson("dit_a", "config.json"),
  i2v: await goldenJson("dit_i2v", "config.json"),
  ti2v: await goldenJson("dit_ti2v", "config.json"),
};
const shapes = async (variant: string, file = "weights.safetensors") => new Map([...(await readSafetensorsHeader(goldenPath(variant, file))).tensors].map(([n, i]) => [n, i.shape] as const));
const i2vShapes = await shapes("dit_i2v");
const t2vShapes = await shapes("dit_a");
const ti2vShapes = await shapes("dit_ti2v");
/** The i2v weights without the CLIP branch: what Wan2.2's channel-concat I2V-A14B ships. */
const noClip = new Map([...i2vShapes].filter(([n]) => !n.startsWith("img_emb.") && !n.includes("_img.")));
const original = (c: Json, extra: Json = {}): Json => ({ ...(c.wan_original_config as Json), ...extra });
const parse = (cfg: Json, tensors?: Map<string, number[]>, textLen?: number) => parseDitConfig(cfg, "config.json", textLen ?? (cfg.text_len as number | undefined), tensors);

describe("the pipeline a DiT config belongs to", () => {
  test("text-to-video: dit_a in both layouts", () => {
    expect(parse(configs.t2v, t2vShapes)).toMatchObject({ kind: "t2v", imageDim: null });
    expect(parse(original(configs.t2v), t2vShapes)).toMatchObject({ kind: "t2v", imageDim: null });
    expect(parse(configs.t2v)).toMatchObject({ kind: "t2v" }); // the config alone suffices
  });

  test("image-to-video: diffusers image_dim / added_kv_proj_dim, or model_type 'i2v' with img_emb tensors (CLIP width from their shapes)", () => {
    expect(parse(configs.i2v, i2vShapes)).toMatchObject({ kind: "i2v", imageDim: 48, inDim: 36, outDim: 16 });
    expect(parse(original(configs.i2v), i2vShapes)).toMatchObject({ kind: "i2v", imageDim: 48, textLen: 512 });
    // without the weights the original config can only mean Wan2.1's ViT-H branch
    expect(parse(original(configs.i2v))).toMatchObject({ kind: "i2v", imageDim: 1280 });
  });

  test("text-image-to-video: model_type 'ti2v', or 48 = 48 channels (the Wan2.2 VAE's) in a diffusers config", () => {
    expect(parse(configs.ti2v)).toMatchObject({ kind: "ti2v", imageDim: null, inDim: 48 });
    expect(parse(original(configs.ti2v), ti2vShapes)).toMatchObject({ kind: "ti2v", imageDim: null });
  });

  const refused: [string, () => unknown, string][] = [
    ["Wan2.2 I2V-A14B (model_type i2v, no CLIP branch)", () => parse(original(configs.i2v), noClip),
      "config.json: not a text-to-video, image-to-video or text-image-to-video Wan DiT (found model_type \"i2v\", in_dim 36, out_dim 16): no img_emb.* tensors: image-to-video by channel concatenation without the CLIP image branch (Wan2.2 I2V-A14B) is not supported"],
    ["its diffusers config (36 → 16 channels, no image_dim)", () => parse({ ...configs.i2v, image_dim: null, added_kv_proj_dim: null }),
      "config.json: not a text-to-video, image-to-video or text-image-to-video Wan DiT (found in_channels 36, out_channels 16): image-to-video channels without the CLIP image branch (Wan2.2 I2V-A14B style) are not supported"],
    ["first-last-frame (model_type)", () => parse(original(configs.i2v, { model_type: "flf2v" }), i2vShapes),
      "(found model_type \"flf2v\", in_dim 36, out_dim 16): first-last-frame-to-video is not supported"],
    ["first-last-frame (diffusers pos_embed_seq_len)", () => parse({ ...configs.i2v, pos_embed_seq_len: 514 }),
      "(found in_channels 36, out_channels 16): 'pos_embed_seq_len' = 514 marks first-last-frame-to-video, which is not supported"],
    ["first-last-frame (img_emb.emb_pos tensor)", () => parse(original(configs.i2v), new Map([...i2vShapes, ["img_emb.emb_pos", [1, 34, 48]]])),
      "'img_emb.emb_pos' is the first-last-frame-to-video position table, which is not supported"],
    ["VACE", () => parse(original(configs.t2v, { model_type: "vace" })), "(found model_type \"vace\", in_dim 16, out_dim 16): VACE (video editing / control) is not supported"],
    ["an unknown model_type", () => parse(original(configs.t2v, { model_type: "x2v" })), "(found model_type \"x2v\", in_dim 16, out_dim 16): unknown model_type (t2v, i2v and ti2v are served)"],
    ["ti2v on 16 channels", () => parse(original(configs.t2v, { model_type: "ti2v" })), "text-image-to-video works on the Wan2.2 VAE's 48 latent channels"],
    ["i2v with in_dim ≠ 2·out + 4", () => parse(original(configs.i2v, { in_dim: 32 }), i2vShapes), "in_dim must be 2·16 + 4 = 36"],
    ["img_emb tensors under a t2v config", () => parse(original(configs.i2v, { model_type: "t2v" }), i2vShapes), "img_emb.* (CLIP image embedding) tensors in a checkpoint whose config does not say image-to-video"],
    ["only one of image_dim / added_kv_proj_dim", () => parse({ ...configs.i2v, added_kv_proj_dim: null }), "'image_dim' and 'added_kv_proj_dim' must both be set for image-to-video"],
    ["image_dim that disagrees with img_emb", () => parse({ ...configs.i2v, image_dim: 64 }, i2vShapes), "'image_dim' = 64 but img_emb's first norm has 48 channels"],
    ["i2v text padded to 16 rows (the 512-row split)", () => parse(configs.i2v, i2vShapes, 16),
      "config.json: text_len 16: the image-to-video cross-attention takes the last 512 context rows as text, so the text must be padded to 512"],
  ];
  for (const [what, run, message] of refused) test(`refused: ${what}`, () => expect(run).toThrow(message));
});

describe("through a checkpoint folder", () => {
  const root = mkdtempSync(join(tmpdir(), "kino-kind-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** An original-layout release folder around the goldens' i2v DiT (Wan or diffusers tensor names). */
  async function i2vFolder(name: string, weights: string, edit?: (t: TensorToWrite[]) => TensorToWrite[]): Promise<string> {
    const dir = join(root, name);
    mkdirSync(join(dir, "google", "umt5-xxl"), { recursive: true });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ _class_name: "WanModel", ...configs.i2v.wan_original_config }));
    if (edit) {
      const tensors: TensorToWrite[] = [];
      for (const info of (await readSafetensorsHeader(goldenPath("dit_i2v", weights))).tensors.values()) tensors.push({ name: info.name, shape: info.shape, data: await readAsF32(info) });
      writeFileSync(join(dir, "diffusion_pytorch_model.safetensors"), encodeSafetensors(edit(tensors)));
    } else copyFileSync(goldenPath("dit_i2v", weights), join(dir, "diffusion_pytorch_model.safetensors"));
    copyFileSync(goldenPath("t5", "weights.safetensors"), join(dir, "models_t5_umt5-xxl-enc-bf16.safetensors"));
    copyFileSync(goldenPath("vae", "weights.safetensors"), join(dir, "Wan2.1_VAE.safetensors"));
    writeFileSync(join(dir, "google", "umt5-xxl", "tokenizer.json"), "{}");
    return dir;
  }

  /** A ViT-H-width (80 = one head of 80) two-block tower under Wan's open-clip names, 28×28 input. */
  function vitClip(): TensorToWrite[] {
    const d = 80, f = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01) });
    const list: TensorToWrite[] = [
      { name: "visual.patch_embedding.weight", ...f([d, 3, 14, 14]) }, { name: "visual.cls_embedding", ...f([1, 1, d]) },
      { name: "visual.pos_embedding", ...f([1, 5, d]) }, { name: "visual.pre_norm.weight", ...f([d]) }, { name: "visual.pre_norm.bias", ...f([d]) },
    ];
    for (let i = 0; i < 2; i++) {
      for (const [m, shape] of [["norm1", [d]], ["attn.to_qkv", [3 * d, d]], ["attn.proj", [d, d]], ["norm2", [d]], ["mlp.0", [4 * d, d]], ["mlp.2", [d, 4 * d]]] as const) {
        list.push({ name: `visual.transformer.${i}.${m}.weight`, ...f([...shape]) }, { name: `visual.transformer.${i}.${m}.bias`, ...f([shape[0]]) });
      }
    }
    return list;
  }

  test("resolveCheckpoint exposes kind 'i2v' and the CLIP tower beside it (Wan and diffusers tensor names)", async () => {
    for (const weights of ["weights.safetensors", "weights_diffusers.safetensors"]) {
      const dir = await i2vFolder(weights.replace(".safetensors", ""), weights);
      writeFileSync(join(dir, "models_clip_open-clip-xlm-roberta-large-vit-huge-14.safetensors"), encodeSafetensors(vitClip()));
      const ckpt = await resolveCheckpoint(dir);
      expect(ckpt.dit.config).toMatchObject({ kind: "i2v", imageDim: 48, inDim: 36 });
      expect(ckpt.imageEncoder!.config).toMatchObject({ imageSize: 28, patchSize: 14, dim: 80, numHeads: 1, numLayers: 2, usedLayers: 1 });
      expect(ckpt.kino).toMatchObject({ steps: 40, shift: 3, width: 832, height: 480 }); // WanI2V's defaults at 480p
    }
  });

  test("an i2v folder without its CLIP tower, with only the .pth, or with a tower whose heads cannot be inferred, says so", async () => {
    const dir = await i2vFolder("clip-missing", "weights.safetensors");
    await expect(resolveCheckpoint(dir)).rejects.toThrow(`${dir}: an image-to-video (i2v) checkpoint needs the CLIP image encoder: no models_clip_*.safetensors or image_encoder/ found`);
    writeFileSync(join(dir, "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"), "pickle");
    await expect(resolveCheckpoint(dir)).rejects.toThrow("models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth: PyTorch pickles are not read; convert the CLIP image encoder to safetensors (same file stem)");
    copyFileSync(goldenPath("i2v_clip", "weights.safetensors"), join(dir, "models_clip_open-clip-xlm-roberta-large-vit-huge-14.safetensors"));
    await expect(resolveCheckpoint(dir)).rejects.toThrow("width 48 is not a multiple of ViT-H's head size 80; give the tower a config.json with its head count");
  });

  test("a folder whose i2v DiT lacks the CLIP branch is refused at resolve, naming what was found", async () => {
    const dir = await i2vFolder("no-clip", "weights.safetensors", (t) => t.filter((x) => !x.name.startsWith("img_emb.") && !x.name.includes("_img.")));
    await expect(resolveCheckpoint(dir)).rejects.toThrow(`${join(dir, "config.json")}: not a text-to-video, image-to-video or text-image-to-video Wan DiT (found model_type "i2v", in_dim 36, out_dim 16): no img_emb.* tensors`);
  });

  test("the loader checks the CLIP tower's width against the DiT's image embedding", async () => {
    const dir = await i2vFolder("served", "weights.safetensors");
    writeFileSync(join(dir, "models_clip_open-clip-xlm-roberta-large-vit-huge-14.safetensors"), encodeSafetensors(vitClip()));
    await expect(loadPipeline({ modelPath: dir, device: "cpu", numGpus: 1, lora: null })).rejects.toThrow(`${dir}: the CLIP image encoder's width 80 ≠ the transformer's image_dim 48`);
  });
});
