// Image-to-video checkpoints served end to end (tiny random weights, diffusers layout, written by
// tools/make-tiny-checkpoint.ts): a Wan2.1 I2V model (CLIP tower under image_encoder/) takes exactly
// one image — a video from it comes back at the requested size and length, a request without one or
// with a text-only task is refused naming the field, /v1/images needs the edits route — and a Wan2.2
// TI2V model makes video with or without an image and edits images, with its two native aspects.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeImage } from "../../src/media/images.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";
import { probeMp4 } from "../helpers/ffprobe.ts";
import { expectEnvelope, startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

const root = mkdtempSync(join(tmpdir(), "kino-i2v-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dataUrl: string;
beforeAll(async () => {
  // an orange-and-blue picture of another aspect ratio than the requests (it is cropped to theirs)
  const png = await encodeImage(new Uint8Array(80 * 50 * 3).map((_, i) => (Math.floor(i / 3) % 80 < 40 ? [230, 120, 20] : [20, 60, 200])[i % 3]!), 80, 50, "png");
  dataUrl = `data:image/png;base64,${Buffer.from(png).toString("base64")}`;
});

const post = (server: TestServer, path: string, body: object) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function videoOf(server: TestServer, body: object): Promise<{ job: any; mp4: Uint8Array }> {
  const res = await post(server, "/v1/videos", body);
  expect(res.status).toBe(200);
  const job = await waitForJob(server.url, (await res.json()).id, {}, 60_000);
  expect(job.status).toBe("completed");
  return { job, mp4: new Uint8Array(await (await fetch(`${server.url}/v1/videos/${job.id}/content`)).arrayBuffer()) };
}

describe("Wan2.1 I2V", () => {
  let server: TestServer;
  beforeAll(async () => {
    await makeTinyCheckpoint(join(root, "i2v"), { kind: "i2v", seed: 5 });
    server = await startTestServer({ "generator.model_path": join(root, "i2v"), "server.served_model_name": "tiny-i2v" });
  }, 60_000);
  afterAll(() => server.close());

  test("the card: task i2v only, exactly one image", async () => {
    const { card } = await (await fetch(`${server.url}/v1/models/tiny-i2v`)).json();
    expect(card.tasks).toEqual(["i2v"]);
    expect(card.max_references).toEqual({ image: 1, video: 0, audio: 0 });
  });

  test("a video from an image reference: 200, the requested size and frame count, timed stages", async () => {
    const { job, mp4 } = await videoOf(server, { prompt: "a red circle moving right", image_reference: { image_url: dataUrl }, size: "64x48", num_frames: 9, seed: 2 });
    expect(await probeMp4(mp4)).toMatchObject({ codec: "h264", width: 64, height: 48, frames: 9 });
    expect(Object.keys(job.stage_durations)).toEqual(expect.arrayContaining(["image_encode", "text_encode", "denoise", "decode", "encode"]));
  });

  test("refusals name the field and the rule: no image, a text-only task, two images", async () => {
    const none = await expectEnvelope(await post(server, "/v1/videos", { prompt: "a red circle", size: "64x48" }), 400);
    expect(none.param).toBe("image_reference");
    expect(none.message).toContain("makes video from an image (task 'i2v' only): send exactly one image");
    const t2v = await expectEnvelope(await post(server, "/v1/videos", { prompt: "a red circle", task: "t2v", image_reference: { image_url: dataUrl } }), 400);
    expect(t2v.param).toBe("task");
    expect(t2v.message).toContain("supported: i2v");
    const two = await expectEnvelope(await post(server, "/v1/videos", { prompt: "x", image_reference: [{ image_url: dataUrl }, { image_url: dataUrl }] }), 400);
    expect(two.param).toBe("image_reference[1].image_url");
    expect(two.message).toContain("at most 1 image reference");
  });

  test("images: /v1/images is refused pointing to the edits route; an edit renders the given frame", async () => {
    const text = await expectEnvelope(await post(server, "/v1/images", { prompt: "a red circle", size: "64x48" }), 400);
    expect(text.message).toContain("use POST /v1/images/edits with one image");
    const res = await post(server, "/v1/images/edits", { prompt: "a red circle", image: dataUrl, size: "64x48", output_format: "png" });
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data).toHaveLength(1);
    const png = Buffer.from(data[0].b64_json, "base64");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([64, 48]);
  });
});

describe("Wan2.2 TI2V", () => {
  let server: TestServer;
  beforeAll(async () => {
    await makeTinyCheckpoint(join(root, "ti2v"), { kind: "ti2v", seed: 6 });
    server = await startTestServer({ "generator.model_path": join(root, "ti2v"), "server.served_model_name": "tiny-ti2v" });
  }, 60_000);
  afterAll(() => server.close());

  test("the card: text or image, at most one image, its two native aspects at 24 fps", async () => {
    const { card } = await (await fetch(`${server.url}/v1/models/tiny-ti2v`)).json();
    expect(card.tasks).toEqual(["t2v", "i2v"]);
    expect(card.max_references.image).toBe(1);
    expect(card.native_sizes).toEqual(["64x32", "32x64"]);
    expect(card.defaults).toMatchObject({ width: 64, height: 32, fps: 24 });
  });

  test("a video from an image and one from text alone, at the requested size and length", async () => {
    const fromImage = await videoOf(server, { prompt: "a red circle", image_reference: { image_url: dataUrl }, size: "64x32", num_frames: 9, seed: 1 });
    expect(await probeMp4(fromImage.mp4)).toMatchObject({ width: 64, height: 32, frames: 9 });
    expect(fromImage.job.stage_durations.image_encode).toBeGreaterThan(0);
    const fromText = await videoOf(server, { prompt: "a red circle", size: "32x64", num_frames: 5, seed: 1 });
    expect(await probeMp4(fromText.mp4)).toMatchObject({ width: 32, height: 64, frames: 5 });
    expect(fromText.job.stage_durations.image_encode).toBeUndefined();
  });

  test("an image edit and a text-to-image both answer one image", async () => {
    for (const [path, body] of [["/v1/images/edits", { image: dataUrl }], ["/v1/images", {}]] as const) {
      const res = await post(server, path, { prompt: "a blue square", size: "64x32", ...body });
      expect(res.status).toBe(200);
      expect((await res.json()).data).toHaveLength(1);
    }
  });
});
