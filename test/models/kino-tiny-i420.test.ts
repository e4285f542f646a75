// The default model's frames leave the backend as I420 (rgbToYuv420 on the backend, 1.5 bytes a pixel
// read back) instead of as f32 RGB made into RGB24 in the worker and into I420 again by the encoder.
// What a user receives must not change: a realtime session's bytes (the worker's StreamTask: every
// fMP4 fragment and the trailer), sequential and on the encoder thread, and a REST job's MP4 file are
// byte for byte those of the RGB24 path — the same model and request through a pipeline made to hand
// on RGB24 — at kino-tiny's native 64x64 and resampled to 480x272. Images stay RGB24.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadWanModel, type WanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest } from "../../src/pipelines/pipeline.ts";
import { WanStreamingPipeline } from "../../src/pipelines/wan-streaming.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import type { FromWorker } from "../../src/worker/ipc.ts";
import { StreamTask } from "../../src/worker/stream-task.ts";
import { writeOutputs } from "../../src/worker/write-outputs.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();

let backend: Backend, model: WanModel, i420: WanStreamingPipeline, rgb24: WanStreamingPipeline;
const dir = mkdtempSync(join(tmpdir(), "kino-i420-"));

beforeAll(async () => {
  backend = await openBackend("cpu");
  model = await loadWanModel(backend, await resolveCheckpoint(resolve(import.meta.dir, "../../models/kino-tiny")));
  i420 = new WanStreamingPipeline(model);
  rgb24 = new WanStreamingPipeline(model, { videoFormat: "rgb24" });
});
afterAll(() => {
  model?.free();
  backend?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

function request(width: number, height: number, over: Partial<GenerationRequest> = {}): GenerationRequest {
  const { defaults } = i420.card;
  return {
    request_id: "video_i420", output: "video", task: "t2v", prompt: "a red circle moving right on a blue background", negative_prompt: "",
    width, height, num_frames: 13, fps: 16, num_inference_steps: defaults.num_inference_steps, guidance_scale: defaults.guidance_scale,
    seed: 7, references: [], extra_params: {}, ...over,
  };
}

/** A session's bytes as the server relays them: each chunk's fragment, then the trailer. */
async function session(pipeline: WanStreamingPipeline, req: GenerationRequest, overlap: boolean): Promise<Buffer[]> {
  const bytes: Buffer[] = [];
  const send = (m: FromWorker) => void (m.type === "chunk" && bytes.push(Buffer.from(m.chunk.bytes)));
  if (overlap) process.env.KINO_STREAM_OVERLAP = "1";
  try {
    const result = await new StreamTask(pipeline, "task", req, null, send).run(new AbortController().signal, () => {});
    return [...bytes, Buffer.from(result.stream!.trailer)];
  } finally {
    delete process.env.KINO_STREAM_OVERLAP;
  }
}

describe("kino-tiny with frames converted on the backend", () => {
  for (const [width, height] of [[64, 64], [480, 272]] as const) {
    test(`${width}x${height}: a realtime session sends the RGB24 path's bytes, sequential and on the encoder thread`, async () => {
      const req = request(width, height);
      const before = await session(rgb24, req, false);
      expect(before).toHaveLength(4 + 1); // chunks of 1, 4, 4, 4 frames, and the trailer
      expect(before[0]!.subarray(4, 8).toString()).toBe("ftyp");
      const after = await session(i420, req, false);
      expect(after.map((b) => b.length)).toEqual(before.map((b) => b.length));
      after.forEach((b, i) => expect({ part: i, same: b.equals(before[i]!) }).toEqual({ part: i, same: true }));
      // the thread gets the chunk's frames as views on one readback buffer
      const threaded = await session(i420, req, true);
      threaded.forEach((b, i) => expect({ part: i, same: b.equals(before[i]!) }).toEqual({ part: i, same: true }));
    }, 120_000);
  }

  test("a REST job's MP4 is the RGB24 path's file; images stay RGB24", async () => {
    const req = request(480, 272, { num_frames: 9 });
    const ctx = { signal: new AbortController().signal, onProgress: () => {} };
    const [a, b] = [await i420.generate(req, ctx), await rgb24.generate(req, ctx)];
    expect([a.format, b.format]).toEqual(["i420", "rgb24"]);
    expect(a.frames[0]!.length).toBe((480 * 272 * 3) / 2);
    await writeOutputs(a, { kind: "mp4", path: join(dir, "i420.mp4") });
    await writeOutputs(b, { kind: "mp4", path: join(dir, "rgb24.mp4") });
    expect(readFileSync(join(dir, "i420.mp4")).equals(readFileSync(join(dir, "rgb24.mp4")))).toBe(true);

    const image = await i420.generate({ ...req, output: "image", num_frames: 1 }, ctx);
    expect(image.format).toBe("rgb24");
    expect(image.frames[0]!.length).toBe(480 * 272 * 3);
    await expect(writeOutputs(a, { kind: "images", paths: [join(dir, "x.png")], format: "png", quality: 100 })).rejects.toThrow("Images are written from rgb24 frames");
  }, 120_000);
});
