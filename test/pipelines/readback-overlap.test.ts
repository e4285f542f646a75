// A chunk's readback overlapped with the next chunk's DiT (src/pipelines/readback-overlap.ts), on the
// CPU: the default model on the wasm backend with a readbackRaw of the test's own (downloadRaw's
// bytes, handed over only after a timer, as a copy in flight would be), since the CPU backend has none.
// With KINO_READBACK_OVERLAP=1 a realtime session sends exactly the bytes of the synchronous path;
// every chunk after the first is handed on only after ops of the chunk after it were enqueued (the
// overlap itself); a run stopped with a copy in flight waits for it and frees its tensor; a copy that
// fails fails the stream with its error; without the switch, or on a backend without readbackRaw,
// nothing changes. Whether the device copy really overlaps, and what it saves, is tools/gpu-check.sh's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { loadWanModel, type WanModel } from "../../src/models/wan-model.ts";
import type { GenerationRequest } from "../../src/pipelines/pipeline.ts";
import { readbackOverlapWanted } from "../../src/pipelines/readback-overlap.ts";
import { WanStreamingPipeline } from "../../src/pipelines/wan-streaming.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import type { FromWorker } from "../../src/worker/ipc.ts";
import { StreamTask } from "../../src/worker/stream-task.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();

/** What the overlapping backend saw: GEMMs enqueued so far, and each readback's tensor and moments. */
interface Trace {
  gemms: number;
  readbacks: { t: Tensor; startedAt: number; landed: boolean; freedAfterLanding: boolean | null }[];
  fail: boolean;
  onStart?: () => void;
}

/** The wasm backend with a readbackRaw: downloadRaw's bytes, delivered after `delayMs`. */
function overlapping(inner: Backend, trace: Trace, delayMs = 5): Backend {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "readbackRaw") {
        return (t: Tensor) => {
          const entry = { t, startedAt: trace.gemms, landed: false, freedAfterLanding: null as boolean | null };
          trace.readbacks.push(entry);
          trace.onStart?.();
          const bytes = target.downloadRaw(t);
          return new Promise<Uint8Array>((res, rej) => setTimeout(() => {
            entry.landed = true;
            if (trace.fail) rej(new Error("readback failed: the copy engine fell over"));
            else res(bytes);
          }, delayMs));
        };
      }
      if (prop === "gemm") return (...args: Parameters<Backend["gemm"]>) => (trace.gemms++, target.gemm(...args));
      if (prop === "free") {
        return (...ts: Tensor[]) => {
          for (const t of ts) for (const r of trace.readbacks) if (r.t === t) r.freedAfterLanding = r.landed;
          target.free(...ts);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

let cpu: Backend, trace: Trace, overlapped: WanModel;
const newTrace = (): Trace => ({ gemms: 0, readbacks: [], fail: false, onStart: undefined });

beforeAll(async () => {
  cpu = await openBackend("cpu");
  trace = newTrace();
  overlapped = await loadWanModel(overlapping(cpu, trace), await resolveCheckpoint(resolve(import.meta.dir, "../../models/kino-tiny")));
});
afterAll(() => {
  overlapped?.free();
  cpu?.dispose();
});

const request = (over: Partial<GenerationRequest> = {}): GenerationRequest => ({
  request_id: "video_overlap", output: "video", task: "t2v", prompt: "a red circle moving right on a blue background", negative_prompt: "",
  width: 64, height: 64, num_frames: 13, fps: 16, num_inference_steps: 4, guidance_scale: 1, seed: 11, references: [], extra_params: {}, ...over,
});

async function withSwitch<T>(on: boolean, f: () => Promise<T>): Promise<T> {
  if (on) process.env.KINO_READBACK_OVERLAP = "1";
  try {
    return await f();
  } finally {
    delete process.env.KINO_READBACK_OVERLAP;
  }
}

/** A session's bytes as the server relays them: each chunk's fragment, then the trailer. */
async function session(model: WanModel, req: GenerationRequest, overlap: boolean): Promise<Buffer[]> {
  const bytes: Buffer[] = [];
  const send = (m: FromWorker) => void (m.type === "chunk" && bytes.push(Buffer.from(m.chunk.bytes)));
  const result = await withSwitch(overlap, () => new StreamTask(new WanStreamingPipeline(model), "task", req, null, send).run(new AbortController().signal, () => {}));
  return [...bytes, Buffer.from(result.stream!.trailer)];
}

describe("chunk readbacks overlapped with the next chunk", () => {
  test("the switch: off by default, on with KINO_READBACK_OVERLAP=1, never on a backend without readbackRaw", () => {
    const withRb = { readbackRaw: () => Promise.resolve(new Uint8Array()) } as unknown as Backend;
    expect(readbackOverlapWanted(withRb, {})).toBe(false);
    expect(readbackOverlapWanted(withRb, { KINO_READBACK_OVERLAP: "1" })).toBe(true);
    expect(readbackOverlapWanted(cpu, { KINO_READBACK_OVERLAP: "1" })).toBe(false);
  });

  test("a realtime session sends the synchronous path's bytes; each chunk after the first leaves once the next one's ops are enqueued", async () => {
    const req = request({ num_frames: 17 }); // chunks of 1, 4, 4, 4, 4 frames
    Object.assign(trace, newTrace());
    const before = await session(overlapped, req, false);
    expect(trace.readbacks).toHaveLength(0); // without the switch: synchronous
    Object.assign(trace, newTrace());
    const after = await session(overlapped, req, true);
    expect(after.map((b) => b.length)).toEqual(before.map((b) => b.length));
    after.forEach((b, i) => expect({ part: i, same: b.equals(before[i]!) }).toEqual({ part: i, same: true }));
    // chunks 1..4 were read back overlapped (chunk 0, which the session's start waits on, at once)
    expect(trace.readbacks).toHaveLength(4);
    expect(trace.readbacks.every((r) => r.landed && r.freedAfterLanding === true)).toBe(true);
  }, 120_000);

  test("chunk i is handed on after chunk i + 1's steps were enqueued, never before", async () => {
    Object.assign(trace, newTrace());
    const pipeline = new WanStreamingPipeline(overlapped);
    const handedAt: number[] = [];
    const ctx = { signal: new AbortController().signal, onProgress: () => {}, conditioningFor: () => cond, promptCut: () => false };
    const cond = await pipeline.encodePrompt("a red circle moving right on a blue background");
    await withSwitch(true, async () => {
      for await (const chunk of pipeline.stream(request({ num_frames: 17 }), ctx)) handedAt[chunk.generation_chunk_index] = trace.gemms;
    });
    const started = trace.readbacks.map((r) => r.startedAt);
    expect(handedAt).toHaveLength(5);
    // chunks 1, 2, 3: the next chunk's forwards ran GEMMs between the readback's start and the hand-over
    for (let i = 1; i <= 3; i++) expect(handedAt[i]!).toBeGreaterThan(started[i - 1]!);
    expect(handedAt[4]).toBe(started[3]); // the last chunk: nothing after it to overlap
  }, 120_000);

  test("a stream stopped with a copy in flight waits for it and frees its tensor; a failed copy fails the stream", async () => {
    const pipeline = new WanStreamingPipeline(overlapped);
    const cond = await pipeline.encodePrompt("a red circle moving right on a blue background");
    const abort = new AbortController();
    Object.assign(trace, newTrace(), { onStart: () => abort.abort() }); // stop as chunk 1's copy starts
    const inUse = cpu.memory().inUse;
    const ctx = { signal: abort.signal, onProgress: () => {}, conditioningFor: () => cond, promptCut: () => false };
    const got: number[] = [];
    const run = withSwitch(true, async () => {
      for await (const chunk of pipeline.stream(request(), ctx)) got.push(chunk.generation_chunk_index);
    });
    await expect(run).rejects.toThrow(/abort/i);
    expect(got).toEqual([0]);
    expect(trace.readbacks).toHaveLength(1);
    expect(trace.readbacks[0]).toMatchObject({ landed: true, freedAfterLanding: true });
    expect(cpu.memory().inUse).toBe(inUse);

    Object.assign(trace, newTrace(), { fail: true });
    const failing = withSwitch(true, async () => {
      for await (const _ of pipeline.stream(request(), { ...ctx, signal: new AbortController().signal })) void _;
    });
    await expect(failing).rejects.toThrow("readback failed: the copy engine fell over");
    expect(trace.readbacks[0]).toMatchObject({ landed: true, freedAfterLanding: true });
    expect(cpu.memory().inUse).toBe(inUse);
  }, 120_000);
});
