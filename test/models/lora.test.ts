// LoRA adapters merged at load into the tiny checkpoint's DiT: PEFT pairs with an alpha tensor,
// kohya-style down/up pairs, additive bias diffs and a dense replacement, in diffusers or Wan naming
// with the usual prefixes — checked against the merge computed on the host; bf16 weights merge in
// f32 and round back; a wrong adapter fails at start naming the tensor.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { readSafetensorsHeader } from "../../src/models/safetensors.ts";
import { type TensorToWrite, writeSafetensors } from "../../src/models/safetensors-write.ts";
import { loadWanModel } from "../../src/models/wan-model.ts";
import { readAsF32 } from "../../src/models/weights.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import { roundThroughHalf } from "../../src/runtime/dtype.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";
import { testBackends } from "./helpers/backends.ts";
import { maxAbsDiff } from "./helpers/goldens.ts";

const root = mkdtempSync(join(tmpdir(), "kino-lora-"));
const f32Dir = join(root, "f32"), bf16Dir = join(root, "bf16");
const rng = new SeededRandom(5);
const A = rng.normal(2 * 32), B = rng.normal(32 * 2), down = rng.normal(2 * 64), up = rng.normal(32 * 2), diffB = rng.normal(32), table = rng.normal(64);
const adapter: TensorToWrite[] = [
  { name: "transformer.blocks.0.attn1.to_q.lora_A.weight", shape: [2, 32], data: A },
  { name: "transformer.blocks.0.attn1.to_q.lora_B.weight", shape: [32, 2], data: B },
  { name: "transformer.blocks.0.attn1.to_q.alpha", shape: [], data: new Float32Array([4]) },
  { name: "diffusion_model.blocks.1.ffn.2.lora_down.weight", shape: [2, 64], data: down },
  { name: "diffusion_model.blocks.1.ffn.2.lora_up.weight", shape: [32, 2], data: up },
  { name: "diffusion_model.blocks.0.cross_attn.o.diff_b", shape: [32], data: diffB },
  { name: "scale_shift_table", shape: [1, 2, 32], data: table },
];

beforeAll(async () => {
  await makeTinyCheckpoint(f32Dir);
  await makeTinyCheckpoint(bf16Dir, { bf16: true });
  await writeSafetensors(join(root, "good.safetensors"), adapter);
  await writeSafetensors(join(root, "unknown.safetensors"), [...adapter, { name: "transformer.blocks.9.attn1.to_q.lora_A.weight", shape: [2, 32], data: A }, { name: "transformer.blocks.9.attn1.to_q.lora_B.weight", shape: [32, 2], data: B }]);
  await writeSafetensors(join(root, "shape.safetensors"), [{ name: "blocks.0.attn1.to_k.lora_A.weight", shape: [2, 16], data: A.subarray(0, 32) }, { name: "blocks.0.attn1.to_k.lora_B.weight", shape: [32, 2], data: B }]);
  await writeSafetensors(join(root, "half.safetensors"), [{ name: "blocks.0.attn1.to_k.lora_A.weight", shape: [2, 32], data: A }]);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** B·A on the host: [rows, r] × [r, cols]. */
function product(b: Float32Array, a: Float32Array, rows: number, r: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) {
    let s = 0;
    for (let k = 0; k < r; k++) s += b[i * r + k]! * a[k * cols + j]!;
    out[i * cols + j] = s;
  }
  return out;
}

async function baseTensor(dir: string, name: string): Promise<Float32Array> {
  return readAsF32((await readSafetensorsHeader(join(dir, "transformer/diffusion_pytorch_model.safetensors"))).tensors.get(name)!);
}

const wasm = (await testBackends())[0]!.backend!;

describe("LoRA merge at load", () => {
  for (const [label, dir] of [["f32", f32Dir], ["bf16", bf16Dir]] as const) {
    test(`${label} weights: pairs, alpha, diffs and dense tensors land where they should`, async () => {
      const model = await loadWanModel(wasm, await resolveCheckpoint(dir), { lora: { path: join(root, "good.safetensors"), strength: 0.5 } });
      const w = model.dit.weights;
      const round = (v: Float32Array) => (label === "bf16" ? roundThroughHalf(v, "bf16") : v);
      const expectMerge = async (got: Float32Array, base: Float32Array, delta: Float32Array, scale: number) => {
        const want = round(base.map((v, i) => v + scale * delta[i]!));
        expect(maxAbsDiff(got, want)).toBeLessThan(label === "bf16" ? 2e-2 : 1e-5);
      };
      // PEFT pair, alpha 4 / rank 2, strength 0.5
      await expectMerge(await wasm.download(w.blocks[0]!.selfAttn.q.w), await baseTensor(dir, "blocks.0.attn1.to_q.weight"), product(B, A, 32, 2, 32), 0.5 * 2);
      // kohya pair without alpha → scale 1
      await expectMerge(await wasm.download(w.blocks[1]!.ffn2.w), await baseTensor(dir, "blocks.1.ffn.net.2.weight"), product(up, down, 32, 2, 64), 0.5);
      // bias diff, Wan naming
      const bias = await baseTensor(dir, "blocks.0.attn2.to_out.0.bias");
      expect(maxAbsDiff(await wasm.download(w.blocks[0]!.crossAttn.o.b!), bias.map((v, i) => v + 0.5 * diffB[i]!))).toBeLessThan(1e-6);
      // dense replacement of the head table
      expect(maxAbsDiff(await wasm.download(w.headModulation), table)).toBe(0);
      // untouched weights stay as they were
      expect(maxAbsDiff(await wasm.download(w.blocks[0]!.selfAttn.k.w), round(await baseTensor(dir, "blocks.0.attn1.to_k.weight")))).toBe(0);
      model.free();
    });
  }

  test("a LoRA changes what the pipeline generates", async () => {
    const req = {
      request_id: "r", output: "video" as const, task: "t2v", prompt: "a red circle", negative_prompt: "", width: 64, height: 64, num_frames: 5,
      fps: 16, num_inference_steps: 2, guidance_scale: 1, seed: 3, references: [], extra_params: {},
    };
    const ctx = { signal: new AbortController().signal, onProgress: () => {} };
    const plain = await (await loadPipeline({ type: "init", modelPath: f32Dir, device: "cpu", numGpus: 1, lora: null })).pipeline.generate(req, ctx);
    const adapted = await (await loadPipeline({ type: "init", modelPath: f32Dir, device: "cpu", numGpus: 1, lora: { path: join(root, "good.safetensors"), strength: 1 } })).pipeline.generate(req, ctx);
    expect(adapted.frames.length).toBe(5);
    expect(adapted.frames).not.toEqual(plain.frames);
  });

  test("a wrong adapter fails at start with the tensor's name", async () => {
    const load = (file: string) => loadPipeline({ type: "init", modelPath: f32Dir, device: "cpu", numGpus: 1, lora: { path: join(root, file), strength: 1 } });
    await expect(load("unknown.safetensors")).rejects.toThrow("adapter tensor 'transformer.blocks.9.attn1.to_q.lora_A.weight' matches no tensor of the model");
    await expect(load("shape.safetensors")).rejects.toThrow("LoRA 'blocks.0.attn1.to_k.lora_B.weight' [32,2] × 'blocks.0.attn1.to_k.lora_A.weight' [2,16] does not fit 'blocks.0.self_attn.k.weight' [32,32]");
    await expect(load("half.safetensors")).rejects.toThrow("LoRA for 'blocks.0.self_attn.k.weight' has no up (lora_B) matrix");
    await expect(load("absent.safetensors")).rejects.toThrow("absent.safetensors: file not found");
  });
});
