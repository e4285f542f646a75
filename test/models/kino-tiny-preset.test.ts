// tools/make-tiny-checkpoint.ts --preset kino-tiny: a random checkpoint with kino-tiny's geometry and
// the "kino" block tools/train/export.py writes (sampler as an object, the window in chunks, the native
// size) — the loader must read it as the real export will be read, and it must stream with guidance
// (cond and uncond streams, each with its own KV cache) in chunks of 4 frames after a first of 1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import type { Pipeline } from "../../src/pipelines/pipeline.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";

await buildCpuWasm();

const dir = mkdtempSync(join(tmpdir(), "kino-tiny-preset-"));
let pipeline: Pipeline;

beforeAll(async () => {
  await makeTinyCheckpoint(dir, { preset: "kino-tiny" });
  pipeline = (await loadPipeline({ type: "init", modelPath: dir, device: "cpu", numGpus: 1, lora: null })).pipeline;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the kino-tiny preset checkpoint", () => {
  test("configs: DiT, VAE and the export's kino block as the loader reads them", async () => {
    const c = await resolveCheckpoint(dir);
    const d = c.dit.config;
    expect([d.dim, d.numLayers, d.numHeads, d.ffnDim, d.freqDim, d.textLen, d.textDim, d.inDim]).toEqual([192, 6, 3, 576, 256, 32, 128, 16]);
    expect(d.patch).toEqual([1, 4, 4]);
    expect(c.vae.config).toMatchObject({ dim: 12, zDim: 16, dimMult: [1, 2, 4], numResBlocks: 1, temporalDownsample: [true, true] });
    expect(c.kino).toMatchObject({
      causal: true, chunkFrames: 1, windowFrames: 5, sinkFrames: 1, sinkReanchorOnCut: true, sampler: "euler", prediction: "sample", steps: 8, shift: 3, guidance: 2, continuationStrength: 0.5,
      width: 64, height: 64, fps: 16, framesPerChunk: 4, firstChunkFrames: 1, defaultTransitionChunks: 4,
    });
    expect(c.dit.table.tensors.get("blocks.0.attn1.to_q.weight")?.dtype).toBe("BF16");
  });

  test("streams with guidance: a first chunk of 1 frame, then 4 per chunk, deterministic per seed", async () => {
    expect(pipeline.card.frames_per_chunk).toBe(4);
    expect(pipeline.card.defaults.guidance_scale).toBe(2);
    const req = {
      request_id: "r", output: "video" as const, task: "t2v" as const, prompt: "a red circle moving left", negative_prompt: "",
      width: 64, height: 64, num_frames: 9, fps: 16, num_inference_steps: 4, guidance_scale: 3, seed: 5, references: [], extra_params: {},
    };
    const run = async () => {
      const cond = await pipeline.encodePrompt!(req.prompt, "");
      const chunks: Uint8Array[][] = [];
      for await (const c of pipeline.stream!(req, { signal: new AbortController().signal, onProgress: () => {}, conditioningFor: () => cond })) chunks.push(c.frames);
      return chunks;
    };
    const a = await run();
    expect(a.map((c) => c.length)).toEqual([1, 4, 4]);
    for (const f of a.flat()) expect(f.length).toBe((64 * 64 * 3) / 2); // I420
    const b = await run();
    expect(b.flat().map((f) => Buffer.from(f).toString("base64"))).toEqual(a.flat().map((f) => Buffer.from(f).toString("base64")));
  });
});
