// The CLIP visual tower against goldens/i2v_clip (Wan2.1 clip.py, `use_31_block=True`): every stage of
// both images (27×41 upscaled, 75×97 downscaled — the bicubic's aliasing and overshoot) from the
// [−1, 1] image to the hidden states Wan takes; the same weights under transformers CLIPVisionModel
// names give the same output; a tower without a usable config is refused by name.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClipVisionEncoder } from "../../src/models/clip-vision.ts";
import { type ClipVisionConfig, clipNameToWan, inferClipVisionConfig, isTransformersClip, parseClipVisionConfig } from "../../src/models/clip-vision-config.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { type TensorToWrite, writeSafetensors } from "../../src/models/safetensors-write.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { type HostTensor, closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const golden = await goldenJson("i2v_clip", "config.json");
const cfg = parseClipVisionConfig(golden.visual_args, "i2v_clip/config.json");
const io = await loadGolden("i2v_clip", "io.safetensors");
const weights = await loadGolden("i2v_clip", "weights.safetensors");
const wanTable = await openTensorTable(goldenPath("i2v_clip", "weights.safetensors"));
const dir = mkdtempSync(join(tmpdir(), "kino-clip-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** golden patch_conv_out [1, D, g, g] as tokens [g², D] (the conv output flattened and transposed). */
function patchTokens(t: HostTensor): Float32Array {
  const [, D, g] = t.shape as [number, number, number];
  const out = new Float32Array(g * g * D);
  for (let c = 0; c < D; c++) for (let i = 0; i < g * g; i++) out[i * D + c] = t.data[c * g * g + i]!;
  return out;
}

/** Runs the tower on one golden image; returns the max abs error of each stage. */
async function runCase(be: Backend, enc: ClipVisionEncoder, c: "up" | "down", atol: number, rtol: number): Promise<Record<string, number>> {
  const img = get(io, `${c}.image`);
  const [, , H, W] = img.shape as number[];
  const t = be.upload(img.data, [3, H!, W!]);
  const errs: Record<string, number> = {};
  const out = await enc.encode(t, async (name, x) => {
    const want = name === "patch_tokens" ? patchTokens(get(io, `${c}.patch_conv_out`)) : get(io, `${c}.${name}`).data;
    const r = closeTo(await be.download(x), want, atol, rtol);
    errs[name] = r.maxAbs;
    expect(r.ok, `${c}.${name}: max abs ${r.maxAbs}`).toBe(true);
  });
  expect(out.shape).toEqual([1, 17, 48]);
  const r = closeTo(await be.download(out), get(io, `${c}.out`).data, atol, rtol);
  errs.out = r.maxAbs;
  expect(r.ok).toBe(true);
  be.free(t, out);
  return errs;
}

const fmt = (e: Record<string, number>) => Object.entries(e).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(", ");

describe("CLIP visual tower config", () => {
  test("the golden's Wan arguments: 3 heads of 16, all blocks but the last used", () => {
    expect(cfg).toMatchObject({ imageSize: 56, patchSize: 14, dim: 48, numHeads: 3, numLayers: 3, ffnDim: 192, eps: 1e-5, usedLayers: 2 });
  });

  test("QuickGELU, no class token and a width the heads do not divide are refused by name", () => {
    expect(() => parseClipVisionConfig({ ...golden.visual_args, activation: "quick_gelu" }, "c.json")).toThrow(/'activation' = "quick_gelu": only exact GELU/);
    expect(() => parseClipVisionConfig({ ...golden.visual_args, pool_type: "attn_pool" }, "c.json")).toThrow(/'pool_type'/);
    expect(() => parseClipVisionConfig({ hidden_size: 1280, num_attention_heads: 12, num_hidden_layers: 32, intermediate_size: 5120, hidden_act: "gelu" }, "c.json")).toThrow(/not divisible by 12 heads/);
    expect(() => parseClipVisionConfig({ hidden_size: 1280, num_attention_heads: 16, num_hidden_layers: 32, intermediate_size: 5120, hidden_act: "quick_gelu" }, "c.json")).toThrow(/'hidden_act'/);
  });

  test("without a config: the golden's width is no multiple of ViT-H's head size, a VAE is no tower", async () => {
    expect(() => inferClipVisionConfig(wanTable)).toThrow(/width 48 is not a multiple of ViT-H's head size 80; give the tower a config.json/);
    const vae = await openTensorTable(goldenPath("vae", "weights.safetensors"));
    expect(() => inferClipVisionConfig(vae)).toThrow(/not a CLIP visual tower/);
  });
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`CLIP visual tower on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("every stage of both images, to the hidden states of the second-to-last block", async () => {
      const be = tb.backend!;
      const reader = new WeightReader(be, wanTable, { component: "image_encoder" });
      const enc = await ClipVisionEncoder.load(reader, cfg);
      reader.finish();
      const { atol, rtol } = tolerance(tb.label);
      for (const c of ["up", "down"] as const) console.log(`CLIP ${c} on ${tb.label}: max abs err ${fmt(await runCase(be, enc, c, atol, rtol))}`);
      enc.free();
    });

    test("transformers CLIPVisionModel names (separate q/k/v, flat embeddings) give the same hidden states", async () => {
      const be = tb.backend!;
      const path = join(dir, `clip-hf-${tb.label}.safetensors`);
      await writeSafetensors(path, transformersTensors(cfg));
      const table = await openTensorTable(path);
      expect(isTransformersClip(table.tensors.keys())).toBe(true);
      const reader = new WeightReader(be, table, { component: "image_encoder", rename: clipNameToWan });
      const enc = await ClipVisionEncoder.load(reader, cfg);
      reader.finish();
      const img = get(io, "up.image");
      const t = be.upload(img.data, [3, 27, 41]);
      const out = await enc.encode(t);
      const r = closeTo(await be.download(out), get(io, "up.out").data, tolerance(tb.label).atol, tolerance(tb.label).rtol);
      expect(r.ok).toBe(true);
      be.free(t, out);
      enc.free();
    });
  });
}

/**
 * The golden's weights under transformers names (modeling_clip.py's module tree: embeddings,
 * pre_layrnorm, encoder.layers.N.{self_attn.{q,k,v,out}_proj, layer_norm1/2, mlp.fc1/fc2},
 * post_layernorm), to_qkv split in its [q | k | v] thirds, the embeddings without leading ones.
 */
function transformersTensors(c: ClipVisionConfig): TensorToWrite[] {
  const d = c.dim, out: TensorToWrite[] = [];
  const add = (name: string, shape: number[], data: Float32Array) => out.push({ name, shape, data });
  const w = (n: string) => get(weights, n);
  add("vision_model.embeddings.class_embedding", [d], w("visual.cls_embedding").data);
  add("vision_model.embeddings.patch_embedding.weight", w("visual.patch_embedding.weight").shape, w("visual.patch_embedding.weight").data);
  add("vision_model.embeddings.position_embedding.weight", [17, d], w("visual.pos_embedding").data);
  for (const s of ["weight", "bias"]) add(`vision_model.pre_layrnorm.${s}`, [d], w(`visual.pre_norm.${s}`).data);
  for (let i = 0; i < c.numLayers; i++) {
    const wan = `visual.transformer.${i}`, hf = `vision_model.encoder.layers.${i}`;
    const qkv = w(`${wan}.attn.to_qkv.weight`).data, qkvB = w(`${wan}.attn.to_qkv.bias`).data;
    ["q", "k", "v"].forEach((x, j) => {
      add(`${hf}.self_attn.${x}_proj.weight`, [d, d], qkv.slice(j * d * d, (j + 1) * d * d));
      add(`${hf}.self_attn.${x}_proj.bias`, [d], qkvB.slice(j * d, (j + 1) * d));
    });
    const pairs = [["attn.proj", "self_attn.out_proj"], ["norm1", "layer_norm1"], ["norm2", "layer_norm2"], ["mlp.0", "mlp.fc1"], ["mlp.2", "mlp.fc2"]];
    for (const [a, b] of pairs) for (const s of ["weight", "bias"]) add(`${hf}.${b}.${s}`, w(`${wan}.${a}.${s}`).shape, w(`${wan}.${a}.${s}`).data);
  }
  for (const s of ["weight", "bias"]) add(`vision_model.post_layernorm.${s}`, [d], w(`visual.post_norm.${s}`).data);
  return out;
}
