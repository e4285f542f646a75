// The worker's stream task with the encoder on its own thread (KINO_STREAM_OVERLAP=1), against the
// sequential path (the default): the procedural renderer through the real StreamTask and encoder, recording
// when each chunk's generation starts and when each chunk is sent. Overlap means chunk i + 1 is being
// generated before chunk i ≥ 1 is sent; the bound means chunk i + 2 never starts before chunk i is sent.
import { afterEach, describe, expect, test } from "bun:test";
import type { GenerationChunk, GenerationRequest, Pipeline, StreamContext } from "../../src/pipelines/pipeline.ts";
import type { FromWorker, TaskResult } from "../../src/worker/ipc.ts";
import { StreamTask } from "../../src/worker/stream-task.ts";
import { ProceduralPipeline } from "../fixtures/procedural.ts";
import { decodeFrames } from "../helpers/decode.ts";

/** The renderer, logging `generate i` at each chunk boundary; `badFrameAt` cuts that chunk's first frame short. */
class RecordingPipeline implements Pipeline {
  readonly renderer = new ProceduralPipeline();
  readonly card = this.renderer.card;
  readonly log: string[] = [];

  constructor(private readonly options: { badFrameAt?: number; onChunk?: (index: number) => void } = {}) {}

  encodePrompt(prompt: string) {
    return this.renderer.encodePrompt(prompt);
  }

  async generate(): Promise<never> {
    throw new Error("streams only");
  }

  async *stream(req: GenerationRequest, ctx: StreamContext): AsyncIterable<GenerationChunk> {
    const conditioningFor = (i: number) => (this.log.push(`generate ${i}`), ctx.conditioningFor(i));
    for await (const chunk of this.renderer.stream(req, { ...ctx, conditioningFor })) {
      if (chunk.generation_chunk_index === this.options.badFrameAt) chunk.frames[0] = chunk.frames[0]!.subarray(0, 100);
      this.options.onChunk?.(chunk.generation_chunk_index);
      yield chunk;
    }
  }
}

const REQUEST: GenerationRequest = {
  request_id: "video_stream-test",
  output: "video",
  task: "t2v",
  prompt: "a yellow square moving right on a blue background",
  negative_prompt: "",
  width: 320,
  height: 192,
  num_frames: 29, // 8 chunks of 4 frames, the last one 1
  fps: 16,
  num_inference_steps: 2,
  guidance_scale: 1,
  seed: 11,
  references: [],
  extra_params: {},
};

interface Run {
  log: string[];
  bytes: Uint8Array[];
  result: TaskResult;
}

async function runTask(pipeline: RecordingPipeline, overlap: boolean, signal = new AbortController().signal): Promise<Run> {
  const bytes: Uint8Array[] = [];
  const send = (m: FromWorker) => {
    if (m.type !== "chunk") return;
    pipeline.log.push(`sent ${m.chunk.generation_chunk_index}`);
    bytes.push(m.chunk.bytes);
  };
  if (overlap) process.env.KINO_STREAM_OVERLAP = "1";
  else delete process.env.KINO_STREAM_OVERLAP;
  const result = await new StreamTask(pipeline, "task-1", REQUEST, null, send).run(signal, () => {});
  return { log: pipeline.log, bytes, result };
}

const position = (log: string[], entry: string) => {
  const i = log.indexOf(entry);
  if (i < 0) throw new Error(`"${entry}" never happened: ${log.join(", ")}`);
  return i;
};

afterEach(() => {
  delete process.env.KINO_STREAM_OVERLAP;
});

describe("StreamTask", () => {
  test("overlapped: chunk i+1 generates while chunk i ≥ 1 encodes, never two ahead, and the bytes are the sequential path's", async () => {
    const overlapped = await runTask(new RecordingPipeline(), true);
    const sequential = await runTask(new RecordingPipeline(), false);
    const chunks = 8;
    for (const run of [overlapped, sequential]) {
      expect(run.result.stream!.chunks).toBe(chunks);
      expect(run.log.filter((e) => e.startsWith("sent"))).toEqual(Array.from({ length: chunks }, (_, i) => `sent ${i}`));
    }
    // the first chunk, which a session's start waits on, is sent before the second is begun
    expect(position(overlapped.log, "sent 0")).toBeLessThan(position(overlapped.log, "generate 1"));
    for (let i = 1; i < chunks; i++) {
      expect(position(sequential.log, `sent ${i - 1}`)).toBeLessThan(position(sequential.log, `generate ${i}`));
      if (i < 2) continue;
      expect(position(overlapped.log, `generate ${i}`)).toBeLessThan(position(overlapped.log, `sent ${i - 1}`));
      expect(position(overlapped.log, `sent ${i - 2}`)).toBeLessThan(position(overlapped.log, `generate ${i}`));
    }
    expect(overlapped.bytes.length).toBe(sequential.bytes.length);
    overlapped.bytes.forEach((b, i) => expect(Buffer.from(b).equals(Buffer.from(sequential.bytes[i]!))).toBe(true));
    expect(Buffer.from(overlapped.result.stream!.trailer).equals(Buffer.from(sequential.result.stream!.trailer))).toBe(true);
    const frames = await decodeFrames(new Uint8Array(Buffer.concat([...overlapped.bytes, overlapped.result.stream!.trailer])), REQUEST.width, REQUEST.height);
    expect(frames).toHaveLength(REQUEST.num_frames);
  });

  test("a stop sends every chunk generated before it, then the trailer", async () => {
    const controller = new AbortController();
    // stop while chunk 3 is generated: chunks 0-2 (and 3, if it finishes its step) are out
    const pipeline = new RecordingPipeline({ onChunk: (i) => i === 2 && setImmediate(() => controller.abort()) });
    const run = await runTask(pipeline, true, controller.signal);
    const yielded = run.log.filter((e) => e.startsWith("generate")).length - 1;
    expect(run.result.stream!.stopped).toBe(true);
    expect(run.result.stream!.chunks).toBeGreaterThanOrEqual(3);
    expect(run.result.stream!.chunks).toBeLessThan(8);
    expect(run.result.stream!.chunks).toBeGreaterThanOrEqual(yielded);
    const trailer = run.result.stream!.trailer;
    expect(new TextDecoder().decode(trailer.subarray(4, 8))).toBe("mfra");
    const frames = await decodeFrames(new Uint8Array(Buffer.concat([...run.bytes, trailer])), REQUEST.width, REQUEST.height);
    expect(frames).toHaveLength(run.result.stream!.chunks * 4);
  });

  for (const overlap of [true, false]) {
    test(`an encoder failure ends the task with the encoder's message after the chunks before it (${overlap ? "overlapped" : "sequential"})`, async () => {
      const pipeline = new RecordingPipeline({ badFrameAt: 3 });
      const bytes: Uint8Array[] = [];
      const send = (m: FromWorker) => m.type === "chunk" && bytes.push(m.chunk.bytes);
      process.env.KINO_STREAM_OVERLAP = overlap ? "1" : "0";
      const failure = await new StreamTask(pipeline, "task-1", REQUEST, null, send).run(new AbortController().signal, () => {}).then(
        () => null,
        (err: Error) => err,
      );
      expect(failure?.message).toBe("H264Encoder: frame has 100 bytes, expected 184320 for 320x192");
      expect(bytes).toHaveLength(3);
      // generation stopped at the failure: at most the chunk after the bad one was begun
      expect(pipeline.log.filter((e) => e.startsWith("generate")).length).toBeLessThanOrEqual(5);
      // what was sent is a well-formed stream the client can still play
      const frames = await decodeFrames(new Uint8Array(Buffer.concat(bytes)), REQUEST.width, REQUEST.height);
      expect(frames).toHaveLength(12);
    });
  }
});
