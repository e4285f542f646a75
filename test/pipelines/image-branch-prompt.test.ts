// kino-tiny's image branch reads a given first frame only for prompts that do not name its object
// (first-frame.ts, imageBranchFor): a stream from an image whose prompt names the object is, byte for
// byte, the stream of the same DiT with no branch at all; one whose prompt says only the motion (prompt
// extension off, so nothing names it) is not. The branchless DiT is the export with its branch's
// tensors and config keys taken out, written beside the other components in a temporary directory.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { openTensorTable, readTensorBytes } from "../../src/models/safetensors.ts";
import { type StoredDtype, writeSafetensorsStreaming } from "../../src/models/safetensors-write.ts";
import { loadWanModel, type WanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest, RgbImage } from "../../src/pipelines/pipeline.ts";
import { WanStreamingPipeline } from "../../src/pipelines/wan-streaming.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { renderFrame } from "../models/helpers/frame-colors.ts";

await buildCpuWasm();

const EXPORT = resolve(import.meta.dir, "../../models/kino-tiny");
const BRANCH_TENSOR = /(^condition_embedder\.image_embedder\.|\.attn2\.(add_k_proj|add_v_proj|norm_added_k)\.)/;
const dir = mkdtempSync(join(tmpdir(), "kino-branchless-"));
let backend: Backend, withBranch: WanModel, branchless: WanModel;

/** The export with its DiT's image branch taken out: the same weights otherwise, byte for byte. */
async function writeBranchless(to: string): Promise<void> {
  for (const part of ["model_index.json", "prompt_extender", "scheduler", "text_encoder", "tokenizer", "vae"]) symlinkSync(join(EXPORT, part), join(to, part));
  mkdirSync(join(to, "transformer"));
  const config = JSON.parse(readFileSync(join(EXPORT, "transformer/config.json"), "utf8"));
  config.image_dim = null;
  config.added_kv_proj_dim = null;
  delete config.kino.image_features;
  delete config.kino.image_branch;
  writeFileSync(join(to, "transformer/config.json"), JSON.stringify(config));
  const table = await openTensorTable(join(EXPORT, "transformer/diffusion_pytorch_model.safetensors"));
  const kept = [...table.tensors.values()].filter((t) => !BRANCH_TENSOR.test(t.name));
  expect(table.tensors.size - kept.length).toBe(8 + 5 * config.num_layers); // img_emb's 8, 5 in each block
  const bytes = await Promise.all(kept.map((t) => readTensorBytes(t)));
  writeSafetensorsStreaming(join(to, "transformer/diffusion_pytorch_model.safetensors"), kept.map((t, i) => ({
    name: t.name, shape: t.shape, dtype: t.dtype as StoredDtype, produce: (write) => write(bytes[i]!),
  })));
}

beforeAll(async () => {
  await writeBranchless(dir);
  backend = await openBackend("cpu");
  withBranch = await loadWanModel(backend, await resolveCheckpoint(EXPORT));
  branchless = await loadWanModel(backend, await resolveCheckpoint(dir));
});
afterAll(() => {
  withBranch?.free();
  branchless?.free();
  backend?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const image: RgbImage = { rgb: renderFrame("black", "purple", "square", 24, 32, 11), width: 64, height: 64 };

function request(prompt: string, extra: Record<string, unknown> = {}): GenerationRequest {
  return {
    request_id: "video_branch", output: "video", task: "i2v", prompt, negative_prompt: "", width: 64, height: 64, num_frames: 9, fps: 16,
    num_inference_steps: 8, guidance_scale: 2, seed: 3, references: [], extra_params: extra,
  };
}

async function frames(model: WanModel, req: GenerationRequest): Promise<Buffer> {
  const result = await new WanStreamingPipeline(model).generate(req, { signal: new AbortController().signal, onProgress: () => {}, referenceImages: [image] });
  return Buffer.concat(result.frames);
}

describe("kino-tiny's image branch and the prompt", () => {
  test("the export loads without its branch", () => {
    expect(withBranch.dit.config.imageFeatures).toBe("latent_patches");
    expect(branchless.dit.config.imageFeatures).toBeNull();
  });

  test("a prompt naming the object streams as the DiT without the branch", async () => {
    const req = request("a purple square moving right on a black background");
    expect((await frames(withBranch, req)).equals(await frames(branchless, req))).toBe(true);
  }, 120_000);

  test("a prompt extended from the image names it too", async () => {
    const req = request("moving right");
    expect((await frames(withBranch, req)).equals(await frames(branchless, req))).toBe(true);
  }, 120_000);

  test("a prompt of the motion alone, not extended, takes the branch", async () => {
    const req = request("moving right", { prompt_extend: false });
    expect((await frames(withBranch, req)).equals(await frames(branchless, req))).toBe(false);
  }, 120_000);
});
