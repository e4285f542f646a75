// Every class of bad input gets the right status and the OpenAI envelope naming the field, and
// nothing is created: the job list is unchanged after each rejected request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let allowedRoot: string;
let outsideFile: string;
beforeAll(async () => {
  allowedRoot = mkdtempSync(join(tmpdir(), "kino-allowed-"));
  const outside = mkdtempSync(join(tmpdir(), "kino-outside-"));
  outsideFile = join(outside, "secret.png");
  writeFileSync(outsideFile, "not really a png");
  mkdirSync(join(allowedRoot, "sub"));
  symlinkSync(outsideFile, join(allowedRoot, "sub", "link.png"));
  writeFileSync(join(allowedRoot, "garbage.png"), "garbage bytes");
  server = await startTestServer({
    "server.served_model_name": "kino-test-model",
    "server.max_body_bytes": "65536",
    "server.references.allowed_local_roots": `[${allowedRoot}]`,
  });
});
afterAll(() => server.close());

const jobCount = async () => (await (await fetch(`${server.url}/v1/videos?limit=100`)).json()).data.length;

async function rejects(body: string | object, status: number, param: string | null, contentType = "application/json") {
  const before = await jobCount();
  const res = await fetch(`${server.url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const error = await expectEnvelope(res, status);
  expect(error.param).toBe(param);
  expect(await jobCount()).toBe(before);
  return error;
}

describe("parse and schema errors", () => {
  test("malformed JSON", async () => {
    expect((await rejects("{ prompt: ", 400, null)).message).toContain("Malformed JSON");
  });
  test("a body that is not an object", async () => {
    await rejects("[1,2]", 400, null);
    await rejects('"text"', 400, null);
  });
  test("empty body", async () => {
    await rejects("", 400, null);
  });
  test("missing prompt, empty prompt", async () => {
    await rejects({ size: "64x64" }, 400, "prompt");
    await rejects({ prompt: "" }, 400, "prompt");
  });
  test("wrong types name the field", async () => {
    await rejects({ prompt: "p", seed: "seven" }, 400, "seed");
    await rejects({ prompt: "p", num_frames: 2.5 }, 400, "num_frames");
    await rejects({ prompt: "p", video_params: { fps: "fast" } }, 400, "video_params.fps");
    await rejects({ prompt: "p", size: "big" }, 400, "size");
    await rejects({ prompt: "p", seconds: "-3" }, 400, "seconds");
  });
  test("seconds: one rule for JSON and forms — a whole number of seconds, as a string or a number", async () => {
    const form = (fields: Record<string, string>) => {
      const body = new FormData();
      for (const [k, v] of Object.entries(fields)) body.append(k, v);
      return fetch(`${server.url}/v1/videos`, { method: "POST", body });
    };
    const message = 'Invalid \'seconds\': must be a whole number of seconds such as "4" or 4; for other lengths send num_frames (got "2.5")';
    expect((await rejects({ prompt: "p", seconds: "2.5" }, 400, "seconds")).message).toBe(message);
    expect((await expectEnvelope(await form({ prompt: "p", seconds: "2.5" }), 400)).message).toBe(message);
    expect((await rejects({ prompt: "p", seconds: 2.5 }, 400, "seconds")).message).toContain("whole number of seconds");
    for (const seconds of ["0", "abc", "1e3", " 4"]) {
      await rejects({ prompt: "p", seconds }, 400, "seconds");
      expect((await expectEnvelope(await form({ prompt: "p", seconds }), 400)).param).toBe("seconds");
    }
    for (const res of [await form({ prompt: "p", size: "16x16", seconds: "1" }), await fetch(`${server.url}/v1/videos`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "p", size: "16x16", seconds: 1 }),
    })]) expect([res.status, (await res.json()).seconds]).toEqual([200, "1"]);
  });
  test("form numbers are read as JSON reads them: nothing is truncated", async () => {
    const form = new FormData();
    form.append("prompt", "p");
    form.append("num_frames", "2.5");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: form }), 400)).param).toBe("num_frames");
    const nested = new FormData();
    nested.append("prompt", "p");
    nested.append("video_params[fps]", "8.5");
    nested.append("video_params[num_frames]", "1e3");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: nested }), 400)).message).toBe(
      "video_params.num_frames 1000 is outside this model's range 1..481",
    );
  });
  test("unknown top-level and nested fields", async () => {
    expect((await rejects({ prompt: "p", colour: "red" }, 400, "colour")).message).toContain("Unknown field 'colour'");
    await rejects({ prompt: "p", video_params: { speed: 2 } }, 400, "video_params.speed");
  });
  test("null means not sent (pydantic clients)", async () => {
    const res = await fetch(`${server.url}/v1/videos`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "nulls", seed: null, size: "64x64", num_frames: 1, video_params: null }),
    });
    expect(res.status).toBe(200);
  });
  test("oversize body is a 413 with the envelope, declared or streamed", async () => {
    await rejects({ prompt: "x".repeat(70000) }, 413, null);
    const chunk = new TextEncoder().encode(" ".repeat(16384));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${server.url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: stream });
    await expectEnvelope(res, 413);
  });
});

describe("model-level admission", () => {
  test("another model name", async () => {
    expect((await rejects({ prompt: "p", model: "sora-2" }, 400, "model")).message).toContain("kino-test-model");
  });
  test("LoRA selector without a startup adapter", async () => {
    await rejects({ prompt: "p", lora: { name: "x" } }, 400, "lora");
  });
  test("extra_params keys the card does not declare, or of the wrong type", async () => {
    await rejects({ prompt: "p", extra_params: { vsa_mode: "exempt" } }, 400, "extra_params.vsa_mode");
    await rejects({ prompt: "p", extra_params: { step_delay_ms: "slow" } }, 400, "extra_params.step_delay_ms");
  });
  test("extra_params keys that name Object's own members are unknown keys like any other", async () => {
    for (const key of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const err = await rejects(`{"prompt": "p", "extra_params": {"${key}": "x"}}`, 400, `extra_params.${key}`);
      expect(err.message).toBe(`extra_params.${key} is not supported by this model (supported: step_delay_ms, fail_at_step, crash_at_step, chunk_delay_ms, fail_at_chunk, bad_frame_at_chunk, device_lost_at_step, device_lost_at_chunk, hang_on_exit)`);
    }
  });
  test("off-grid explicit frames name the nearest valid count", async () => {
    expect((await rejects({ prompt: "p", num_frames: 8 }, 400, "num_frames")).message).toContain("nearest valid value is 9");
    await rejects({ prompt: "p", video_params: { num_frames: 6 } }, 400, "video_params.num_frames");
    await rejects({ prompt: "p", num_frames: 100000 }, 400, "num_frames");
  });
  test("a length the model cannot make is refused with the limit, however it is asked for", async () => {
    expect((await rejects({ prompt: "p", num_frames: 485 }, 400, "num_frames")).message).toBe("num_frames 485 is outside this model's range 1..481");
    expect((await rejects({ prompt: "p", seconds: "9999" }, 400, "seconds")).message).toBe(
      "seconds 9999 at 16 fps is 159984 frames; this model makes at most 481 frames (30 s at 16 fps)",
    );
    expect((await rejects({ prompt: "p", seconds: 31 }, 400, "seconds")).message).toContain("at most 481 frames");
    expect((await rejects({ prompt: "p", seconds: "4", fps: 240 }, 400, "seconds")).message).toBe(
      "seconds 4 at 240 fps is 960 frames; this model makes at most 481 frames (2 s at 240 fps)",
    );
  });
  test("sizes off the spatial grid or over the limits", async () => {
    expect((await rejects({ prompt: "p", size: "100x64" }, 400, "size")).message).toContain("nearest valid value is 96");
    await rejects({ prompt: "p", width: 4096, height: 4096 }, 400, "width");
  });
  test("a size error names the field it is about", async () => {
    expect((await rejects({ prompt: "p", width: 240, height: 136 }, 400, "height")).message).toContain("height 136");
    expect((await rejects({ prompt: "p", width: 100, height: 64 }, 400, "width")).message).toContain("width 100");
    expect((await rejects({ prompt: "p", video_params: { width: 64, height: 50 } }, 400, "video_params.height")).message).toContain("height 50");
    expect((await rejects({ prompt: "p", width: 64, video_params: { height: 4000 } }, 400, "video_params.height")).message).toContain("height 4000");
    expect((await rejects({ prompt: "p", size: "64x50" }, 400, "size")).message).toContain("height 50");
  });
  test("unsupported task, too many steps", async () => {
    await rejects({ prompt: "p", task: "ref2va" }, 400, "task");
    await rejects({ prompt: "p", num_inference_steps: 1000 }, 400, "num_inference_steps");
  });
});

describe("form field names", () => {
  test("bracket names cannot reach Object.prototype", async () => {
    for (const name of ["__proto__[polluted]", "constructor[prototype][polluted]", "extra_params[__proto__][polluted]"]) {
      const form = new FormData();
      form.append("prompt", "p");
      form.append(name, "yes");
      const res = await fetch(`${server.url}/v1/videos`, { method: "POST", body: form });
      expect(res.status).toBe(400);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
  });
});

describe("references", () => {
  test("file_id references are refused (no Files store)", async () => {
    await rejects({ prompt: "p", image_reference: { file_id: "file-123" } }, 400, "image_reference.file_id");
    await rejects({ prompt: "p", input_reference: { file_id: "file-1" } }, 400, "input_reference.file_id");
  });
  test("media kinds the model cannot use", async () => {
    await rejects({ prompt: "p", video_reference: { video_url: "https://example.com/a.mp4" } }, 400, "video_reference.video_url");
    await rejects({ prompt: "p", audio_reference: [{ audio_url: "data:audio/wav;base64,AAAA" }] }, 400, "audio_reference[0].audio_url");
  });
  test("a data URL that does not decode", async () => {
    await rejects({ prompt: "p", image_reference: { image_url: "data:image/png;base64,aGVsbG8=" } }, 400, "image_reference.image_url");
  });
  test("local paths: outside the allowed roots, traversal, symlinks out, bad media", async () => {
    await rejects({ prompt: "p", input_reference: outsideFile }, 400, "input_reference");
    await rejects({ prompt: "p", input_reference: join(allowedRoot, "..", "etc", "passwd") }, 400, "input_reference");
    await rejects({ prompt: "p", reference_url: join(allowedRoot, "sub", "link.png") }, 400, "reference_url");
    await rejects({ prompt: "p", image_reference: { image_url: join(allowedRoot, "garbage.png") } }, 400, "image_reference.image_url");
  });
  test("remote URLs are off by default", async () => {
    await rejects({ prompt: "p", image_reference: { image_url: "http://127.0.0.1:9/x.png" } }, 400, "image_reference.image_url");
  });
  test("an upload that is not an image", async () => {
    const form = new FormData();
    form.append("prompt", "p");
    form.append("input_reference", new File(["plain text"], "ref.png", { type: "image/png" }));
    const before = await jobCount();
    const err = await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: form }), 400);
    expect(err.param).toBe("input_reference");
    expect(await jobCount()).toBe(before);
  });
});

describe("routes", () => {
  test("unknown routes are 404 envelopes", async () => {
    await expectEnvelope(await fetch(`${server.url}/v1/nothing`), 404);
  });
});
