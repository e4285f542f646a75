// A generated tiny diffusers-layout checkpoint (tools/make-tiny-checkpoint.ts) through loadPipeline on
// the WebAssembly backend: the card from its configs, whole clips and images with per-step progress
// and stage durations, the same clip streamed chunk by chunk (a first chunk of 5 frames, then 8),
// prompt changes between chunks, determinism per seed, cancellation — and the bidirectional variant.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadPipeline } from "../../src/pipelines/load.ts";
import type { GenerationRequest, Pipeline, Progress } from "../../src/pipelines/pipeline.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";

await buildCpuWasm(); // loadPipeline opens the WebAssembly backend

const root = mkdtempSync(join(tmpdir(), "kino-tiny-"));
const causalDir = join(root, "causal"), bidiDir = join(root, "bidirectional"), continuingDir = join(root, "continuing");
let causal: Pipeline, bidi: Pipeline, continuing: Pipeline;

beforeAll(async () => {
  await makeTinyCheckpoint(causalDir, { causal: true, bf16: true });
  await makeTinyCheckpoint(bidiDir, { causal: false });
  await makeTinyCheckpoint(continuingDir, { causal: true, bf16: true, continuationStrength: 0.5 }); // causal's weights
  causal = (await loadPipeline({ type: "init", modelPath: causalDir, device: "cpu", numGpus: 1, lora: null })).pipeline;
  bidi = (await loadPipeline({ type: "init", modelPath: bidiDir, device: "cpu", numGpus: 1, lora: null })).pipeline;
  continuing = (await loadPipeline({ type: "init", modelPath: continuingDir, device: "cpu", numGpus: 1, lora: null })).pipeline;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function request(over: Partial<GenerationRequest> = {}): GenerationRequest {
  return {
    request_id: "r", output: "video", task: "t2v", prompt: "a red circle moving left on blue background", negative_prompt: "",
    width: 64, height: 64, num_frames: 9, fps: 16, num_inference_steps: 4, guidance_scale: 1, seed: 42, references: [], extra_params: {}, ...over,
  };
}

const never = new AbortController().signal;

describe("causal tiny checkpoint", () => {
  test("the card comes from the configs", () => {
    const c = causal.card;
    expect(c.name).toBe("kino-tiny-random");
    expect(c.supports_streaming).toBe(true);
    expect(c.supports_prompt_updates).toBe(true);
    expect(c.frames_per_chunk).toBe(8);
    expect(c.default_transition_chunks).toBe(2);
    expect([c.frame_multiple, c.frame_offset, c.spatial_factor]).toEqual([4, 1, 16]);
    expect(c.defaults).toEqual({ width: 64, height: 64, fps: 16, num_frames: 21, num_inference_steps: 4, guidance_scale: 1 });
  });

  test("generate: frames, progress per step, stage durations, seeded", async () => {
    const progress: Progress[] = [];
    const r = await causal.generate(request(), { signal: never, onProgress: (p) => progress.push(p) });
    expect(r.frames.length).toBe(9);
    // video leaves the backend as the encoder's I420: Y, then Cb and Cr at half width and height
    expect(r.format).toBe("i420");
    for (const f of r.frames) expect(f.length).toBe((64 * 64 * 3) / 2);
    expect(Object.keys(r.stage_durations).sort()).toEqual(["decode", "denoise", "text_encode"]);
    // 9 frames = chunk 0 (5 frames) + chunk 1 (4 of its 8) → 2 chunks × 4 steps
    expect(progress.length).toBe(8);
    expect(progress.map((p) => p.fraction)).toEqual([...progress.map((p) => p.fraction)].sort((a, b) => a - b));
    expect(progress.at(-1)!.fraction).toBe(1);
    const frames = new Set(r.frames.map((f) => Buffer.from(f).toString("base64")));
    expect(frames.size).toBeGreaterThan(1); // frames differ (not one image repeated)
    const again = await causal.generate(request(), { signal: never, onProgress: () => {} });
    expect(again.frames).toEqual(r.frames);
    const other = await causal.generate(request({ seed: 43 }), { signal: never, onProgress: () => {} });
    expect(other.frames).not.toEqual(r.frames);
  });

  test("stream: chunks of 5 then 8 frames, identical to generate for a fixed prompt", async () => {
    const cond = await causal.encodePrompt!("a red circle moving left on blue background", "");
    const asked: number[] = [];
    const chunks: { i: number; frames: Uint8Array[] }[] = [];
    for await (const c of causal.stream!(request({ num_frames: 21 }), { signal: never, onProgress: () => {}, conditioningFor: (i) => (asked.push(i), cond) })) {
      chunks.push({ i: c.generation_chunk_index, frames: c.frames });
    }
    expect(chunks.map((c) => [c.i, c.frames.length])).toEqual([[0, 5], [1, 8], [2, 8]]);
    expect(causal.streamFormat).toBe("i420");
    expect(asked).toEqual([0, 1, 2]);
    const whole = await causal.generate(request({ num_frames: 21 }), { signal: never, onProgress: () => {} });
    expect(chunks.flatMap((c) => c.frames)).toEqual(whole.frames);
  });

  test("a conditioning change between chunks changes what follows, not what came before", async () => {
    const red = await causal.encodePrompt!("a red circle", "");
    const blue = await causal.encodePrompt!("a blue square", "");
    expect(red.length).toBe(16 * 16); // text_len × umT5 width
    const run = async (second: Float32Array) => {
      const out: Uint8Array[][] = [];
      for await (const c of causal.stream!(request({ num_frames: 13 }), { signal: never, onProgress: () => {}, conditioningFor: (i) => (i === 0 ? red : second) })) out.push(c.frames);
      return out;
    };
    const same = await run(red), switched = await run(blue);
    expect(switched[0]).toEqual(same[0]);
    expect(switched[1]).not.toEqual(same[1]);
  });

  test("images: one frame per output, each its own seed", async () => {
    const r = await causal.generate(request({ output: "image", num_frames: 2 }), { signal: never, onProgress: () => {} });
    expect(r.frames.length).toBe(2);
    // images stay RGB24 for the image codecs
    expect(r.format).toBe("rgb24");
    for (const f of r.frames) expect(f.length).toBe(64 * 64 * 3);
    expect(r.frames[0]).not.toEqual(r.frames[1]);
  });

  test("an abort stops generation at the next step", async () => {
    const ctl = new AbortController();
    let steps = 0;
    const run = causal.generate(request({ num_frames: 21 }), { signal: ctl.signal, onProgress: () => ++steps === 2 && ctl.abort() });
    await expect(run).rejects.toThrow();
    expect(steps).toBe(2);
  });
});

// kino.continuation_strength 0.5: a chunk after the first enters the 4-step schedule at step 2 from
// the previous chunk's latent, unless it cuts to a new prompt.
describe("causal checkpoint whose chunks continue the previous one", () => {
  const streamOf = async (p: Pipeline, promptCut?: (index: number) => boolean, onProgress: (p: Progress) => void = () => {}) => {
    const cond = await p.encodePrompt!("a red circle moving left on blue background", "");
    const out: Uint8Array[][] = [];
    for await (const c of p.stream!(request({ num_frames: 21 }), { signal: never, onProgress, conditioningFor: () => cond, promptCut })) out.push(c.frames);
    return out;
  };

  test("the first chunk is made from noise as before, the later ones run half the steps from their predecessor", async () => {
    const progress: Progress[] = [];
    const [fromNoise, continued] = [await streamOf(causal), await streamOf(continuing, undefined, (p) => progress.push(p))];
    expect(continued.map((c) => c.length)).toEqual([5, 8, 8]);
    expect(continued[0]).toEqual(fromNoise[0]);
    expect(continued[1]).not.toEqual(fromNoise[1]);
    expect(continued[2]).not.toEqual(fromNoise[2]);
    expect(progress.length).toBe(4 + 2 + 2);
    expect(progress.map((p) => p.fraction)).toEqual([...progress.map((p) => p.fraction)].sort((a, b) => a - b));
    expect(progress.at(-1)!.fraction).toBe(1);
    expect(await streamOf(continuing)).toEqual(continued); // deterministic per seed
  });

  test("a chunk that cuts to a new prompt starts from noise: cut at every chunk, the stream is the from-noise one", async () => {
    expect(await streamOf(continuing, () => true)).toEqual(await streamOf(causal));
    const cutAtTwo = await streamOf(continuing, (i) => i === 2);
    const continued = await streamOf(continuing);
    expect(cutAtTwo.slice(0, 2)).toEqual(continued.slice(0, 2));
    expect(cutAtTwo[2]).not.toEqual(continued[2]);
  });
});

describe("bidirectional tiny checkpoint", () => {
  test("whole-clip text-to-video with CFG", async () => {
    expect(bidi.card.supports_streaming).toBe(false);
    expect(bidi.stream).toBeUndefined();
    const progress: Progress[] = [];
    const r = await bidi.generate(request({ guidance_scale: 3, negative_prompt: "gray" }), { signal: never, onProgress: (p) => progress.push(p) });
    expect(r.frames.length).toBe(9);
    expect(progress.filter((p) => p.stage === "denoise").length).toBe(4);
    expect(progress.at(-1)).toEqual({ fraction: 1, stage: "decode" });
    const unguided = await bidi.generate(request(), { signal: never, onProgress: () => {} });
    expect(unguided.frames).not.toEqual(r.frames);
  });
});
