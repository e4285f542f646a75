// Checkpoint layouts and load-time failures through loadPipeline: the original Wan layout assembled
// from the goldens (WanModel config, Wan key names, models_t5*.safetensors, Wan2.1_VAE.safetensors,
// google/umt5-xxl/tokenizer.json) generates frames; a diffusers checkpoint with a missing, extra or
// mis-shaped tensor, a truncated file or a bad header fails at load naming the file and tensor; a
// diffusers release folder (release configs, the VAE in AutoencoderKLWan names) generates frames.
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readSafetensorsHeader } from "../../src/models/safetensors.ts";
import { type TensorToWrite, encodeSafetensors } from "../../src/models/safetensors-write.ts";
import { readAsF32 } from "../../src/models/weights.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";

await buildCpuWasm(); // loadPipeline opens the WebAssembly backend
import { goldenJson, goldenPath } from "./helpers/goldens.ts";

const root = mkdtempSync(join(tmpdir(), "kino-ckpt-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const init = (modelPath: string) => ({ type: "init" as const, modelPath, device: "cpu" as const, numGpus: 1, lora: null });

describe("original Wan layout", () => {
  test("the goldens' DiT, umT5 and VAE as a Wan2.1 release folder generate frames", async () => {
    const dir = join(root, "wan");
    mkdirSync(join(dir, "google", "umt5-xxl"), { recursive: true });
    const dit = await goldenJson("dit_a", "config.json");
    writeFileSync(join(dir, "config.json"), JSON.stringify({ _class_name: "WanModel", ...dit.wan_original_config }));
    copyFileSync(goldenPath("dit_a", "weights.safetensors"), join(dir, "diffusion_pytorch_model.safetensors"));
    copyFileSync(goldenPath("t5", "weights.safetensors"), join(dir, "models_t5_umt5-xxl-enc-bf16.safetensors"));
    copyFileSync(goldenPath("vae", "weights.safetensors"), join(dir, "Wan2.1_VAE.safetensors"));
    const vocab = Object.fromEntries(["<pad>", "</s>", "<unk>", "a", "cat"].map((w, i) => [w, i]));
    writeFileSync(join(dir, "google", "umt5-xxl", "tokenizer.json"), JSON.stringify({
      version: "1.0", normalizer: null, pre_tokenizer: { type: "Whitespace" }, decoder: null,
      added_tokens: [{ id: 1, content: "</s>", special: true, single_word: false, lstrip: false, rstrip: false, normalized: false }],
      post_processor: { type: "TemplateProcessing", single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }], pair: [], special_tokens: { "</s>": { id: "</s>", ids: [1], tokens: ["</s>"] } } },
      model: { type: "WordLevel", vocab, unk_token: "<unk>" },
    }));
    const { pipeline } = await loadPipeline(init(dir));
    expect(pipeline.card.supports_streaming).toBe(false);
    expect(pipeline.card.spatial_factor).toBe(16);
    const r = await pipeline.generate({
      request_id: "r", output: "video", task: "t2v", prompt: "a cat", negative_prompt: "", width: 32, height: 16, num_frames: 5, fps: 16,
      num_inference_steps: 2, guidance_scale: 1, seed: 1, references: [], extra_params: {},
    }, { signal: new AbortController().signal, onProgress: () => {} });
    expect(r.frames.length).toBe(5);
    expect(r.frames[0]!.length).toBe((32 * 16 * 3) / 2); // I420
  });

  test("a .pth release without safetensors says to convert it", async () => {
    const dir = join(root, "pth");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ _class_name: "WanModel", ...(await goldenJson("dit_a", "config.json")).wan_original_config }));
    copyFileSync(goldenPath("dit_a", "weights.safetensors"), join(dir, "diffusion_pytorch_model.safetensors"));
    writeFileSync(join(dir, "models_t5_umt5-xxl-enc-bf16.pth"), "pickle");
    await expect(loadPipeline(init(dir))).rejects.toThrow("models_t5_umt5-xxl-enc-bf16.pth: PyTorch pickles are not read; convert the umT5 text encoder to safetensors");
  });
});

describe("a diffusers Wan2.1 release folder (AutoencoderKLWan names, release configs)", () => {
  const request = { request_id: "r", output: "video" as const, task: "t2v" as const, prompt: "a red circle", negative_prompt: "", width: 32, height: 32,
    num_frames: 5, fps: 16, num_inference_steps: 2, guidance_scale: 1, seed: 3, references: [], extra_params: {} };
  const never = { signal: new AbortController().signal, onProgress: () => {} };

  /** A tiny checkpoint whose configs are the release's: no kino object, the UniPC scheduler config. */
  async function releaseLike(name: string, vaeLayout: "wan" | "diffusers"): Promise<string> {
    const dir = join(root, name);
    await makeTinyCheckpoint(dir, { causal: false, seed: 5, vaeLayout });
    const { kino: _, ...transformer } = await Bun.file(join(dir, "transformer/config.json")).json();
    writeFileSync(join(dir, "transformer/config.json"), JSON.stringify(transformer));
    writeFileSync(join(dir, "model_index.json"), JSON.stringify({
      _class_name: "WanPipeline", _diffusers_version: "0.33.0.dev0", scheduler: ["diffusers", "UniPCMultistepScheduler"], text_encoder: ["transformers", "UMT5EncoderModel"],
      tokenizer: ["transformers", "T5TokenizerFast"], transformer: ["diffusers", "WanTransformer3DModel"], vae: ["diffusers", "AutoencoderKLWan"],
    }));
    writeFileSync(join(dir, "scheduler/scheduler_config.json"), JSON.stringify({
      _class_name: "UniPCMultistepScheduler", flow_shift: 3.0, prediction_type: "flow_prediction", use_flow_sigmas: true, solver_order: 2, solver_type: "bh2", num_train_timesteps: 1000,
    }));
    return dir;
  }

  test("loads through loadPipeline and generates the same frames as with Wan VAE names", async () => {
    const diffusers = await releaseLike("release-diffusers", "diffusers"), wan = await releaseLike("release-wan", "wan");
    const names = [...(await readSafetensorsHeader(join(diffusers, "vae/diffusion_pytorch_model.safetensors"))).tensors.keys()];
    expect(names).toContain("decoder.up_blocks.1.resnets.0.conv_shortcut.weight");
    expect(names).toContain("post_quant_conv.weight");
    expect(names.filter((n) => n.includes("upsamples.") || n.includes("residual."))).toEqual([]);
    const { pipeline } = await loadPipeline(init(diffusers));
    expect(pipeline.card.name).toBe("release-diffusers");
    expect(pipeline.card.defaults).toEqual({ width: 832, height: 480, fps: 16, num_frames: 81, num_inference_steps: 50, guidance_scale: 5 });
    const r = await pipeline.generate(request, never);
    expect(r.frames.length).toBe(5);
    expect(r.frames[0]!.length).toBe((32 * 32 * 3) / 2); // I420
    const reference = await (await loadPipeline(init(wan))).pipeline.generate(request, never);
    expect(r.frames).toEqual(reference.frames);
  });

  test("a missing VAE tensor is named as the file names it, with its Wan name", async () => {
    const dir = join(root, "release-missing");
    await makeTinyCheckpoint(dir, { causal: false, vaeLayout: "diffusers" });
    const file = join(dir, "vae/diffusion_pytorch_model.safetensors");
    const table = await readSafetensorsHeader(file);
    const kept: TensorToWrite[] = [];
    for (const info of table.tensors.values()) if (info.name !== "decoder.up_blocks.1.upsamplers.0.time_conv.bias") kept.push({ name: info.name, shape: info.shape, data: await readAsF32(info) });
    writeFileSync(file, encodeSafetensors(kept));
    await expect(loadPipeline(init(dir))).rejects.toThrow("vae: missing tensor 'decoder.up_blocks.1.upsamplers.0.time_conv.bias' (Wan name 'decoder.upsamples.7.time_conv.bias')");
  });
});

describe("broken diffusers checkpoints fail at load with the tensor's name", () => {
  const base = join(root, "base");
  const weights = "transformer/diffusion_pytorch_model.safetensors";

  async function variant(name: string, edit: (tensors: TensorToWrite[]) => TensorToWrite[]): Promise<string> {
    const dir = join(root, name);
    cpSync(base, dir, { recursive: true });
    const table = await readSafetensorsHeader(join(base, weights));
    const tensors: TensorToWrite[] = [];
    for (const info of table.tensors.values()) tensors.push({ name: info.name, shape: info.shape, data: await readAsF32(info) });
    writeFileSync(join(dir, weights), encodeSafetensors(edit(tensors)));
    return dir;
  }

  test("missing, extra, mis-shaped tensors; truncated file; bad header; missing tokenizer", async () => {
    await makeTinyCheckpoint(base);
    const missing = await variant("missing", (ts) => ts.filter((t) => t.name !== "blocks.1.attn2.to_k.weight"));
    await expect(loadPipeline(init(missing))).rejects.toThrow("transformer: missing tensor 'blocks.1.attn2.to_k.weight' (Wan name 'blocks.1.cross_attn.k.weight')");
    const extra = await variant("extra", (ts) => [...ts, { name: "blocks.0.attn2.add_k_proj.weight", shape: [2], data: new Float32Array(2) }]);
    await expect(loadPipeline(init(extra))).rejects.toThrow("transformer: unexpected tensor 'blocks.0.attn2.add_k_proj.weight' (not part of this model)");
    const shaped = await variant("shaped", (ts) => ts.map((t) => (t.name === "proj_out.weight" ? { ...t, shape: [t.shape[1]!, t.shape[0]!] } : t)));
    await expect(loadPipeline(init(shaped))).rejects.toThrow("transformer: tensor 'proj_out.weight' has shape [32, 16], expected [16, 32]");
    const truncated = join(root, "truncated");
    cpSync(base, truncated, { recursive: true });
    const bytes = new Uint8Array(await Bun.file(join(base, weights)).arrayBuffer());
    writeFileSync(join(truncated, weights), bytes.subarray(0, bytes.length - 100));
    await expect(loadPipeline(init(truncated))).rejects.toThrow(`${join(truncated, weights)}: truncated safetensors file (tensor 'proj_out.weight' ends at data byte`);
    const header = join(root, "header");
    cpSync(base, header, { recursive: true });
    writeFileSync(join(header, "vae/diffusion_pytorch_model.safetensors"), new Uint8Array([16, 0, 0, 0, 0, 0, 0, 0, ...new TextEncoder().encode("{ not json here ")]));
    await expect(loadPipeline(init(header))).rejects.toThrow("vae/diffusion_pytorch_model.safetensors: bad safetensors header (not JSON");
    const notok = join(root, "notok");
    cpSync(base, notok, { recursive: true });
    rmSync(join(notok, "tokenizer", "tokenizer.json"));
    await expect(loadPipeline(init(notok))).rejects.toThrow("tokenizer/tokenizer.json: missing");
    await expect(loadPipeline(init(join(root, "nowhere")))).rejects.toThrow("checkpoint directory not found");
  });
});
