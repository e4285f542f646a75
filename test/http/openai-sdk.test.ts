// The official `openai` npm SDK against a live kino: the calls OpenAI-style clients make.
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import { probeMp4 } from "../helpers/ffprobe.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startTestServer({ "server.api_key": "sk-kino", "server.served_model_name": "kino-test" });
  client = new OpenAI({ apiKey: "sk-kino", baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(() => server.close());

/** The SDK's error for a call that must fail (its APIPromise is not a plain Promise for expect().rejects). */
const failure = (call: PromiseLike<unknown>) => Promise.resolve(call).then(() => null, (err) => err);

test("videos: create (multipart) → poll retrieve → downloadContent → list → delete", async () => {
  const created = await client.videos.create({ prompt: "a green star spinning", model: "kino-test" as never, seconds: "1" as never, size: "128x96" as never });
  expect(created.status).toBe("queued");
  let video = created;
  for (let i = 0; i < 300 && video.status !== "completed" && video.status !== "failed"; i++) {
    await Bun.sleep(50);
    video = await client.videos.retrieve(created.id);
  }
  expect(video.status).toBe("completed");
  expect(video.progress).toBe(100);

  const content = await client.videos.downloadContent(created.id);
  const probe = await probeMp4(new Uint8Array(await content.arrayBuffer()));
  expect(probe).toMatchObject({ codec: "h264", width: 128, height: 96 });

  const page = await client.videos.list({ limit: 10 });
  expect(page.data.map((v) => v.id)).toContain(created.id);

  const deleted = await client.videos.delete(created.id);
  expect(deleted).toMatchObject({ id: created.id, deleted: true });
  expect(await failure(client.videos.retrieve(created.id))).toMatchObject({ status: 404 });
});

test("videos: create with an input_reference upload", async () => {
  const { encodeImage } = await import("../../src/media/images.ts");
  const png = await encodeImage(new Uint8Array(64 * 64 * 3).fill(200), 64, 64, "png");
  const created = await client.videos.create({
    prompt: "from a picture",
    size: "64x64" as never,
    seconds: "1" as never,
    input_reference: new File([png], "first.png", { type: "image/png" }),
  });
  expect(created.status).toBe("queued");
});

test("SDK errors surface the envelope", async () => {
  expect(await failure(client.videos.create({ prompt: "x", model: "sora-2" as never }))).toMatchObject({
    status: 400,
    error: { type: "invalid_request_error", param: "model" },
  });
});

test("images.generate", async () => {
  const res = await client.images.generate({ prompt: "a yellow circle", model: "kino-test", size: "64x64" as never, n: 1 });
  expect(res.data).toHaveLength(1);
  expect(res.data![0]!.b64_json!.length).toBeGreaterThan(100);
});
