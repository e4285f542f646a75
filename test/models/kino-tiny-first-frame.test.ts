// kino-tiny starting from a client's image, as a user sees it through the server: the image's latent
// is the video's first chunk, so frame 0 is the image through the VAE, and the stream carries its
// object on; /v1/images/edits starts an image from it. The model directory is the export with
// kino.first_frame_conditioning set (the export declares it once trained for it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeFrames } from "../helpers/decode.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";
import { background } from "./helpers/frame-colors.ts";

const EXPORT = join(import.meta.dir, "../../models/kino-tiny");
const exported = existsSync(join(EXPORT, "model_index.json"));
let server: TestServer;
let dir: string;

beforeAll(async () => {
  if (!exported) return;
  dir = mkdtempSync(join(tmpdir(), "kino-first-frame-"));
  cpSync(EXPORT, dir, { recursive: true });
  const configPath = join(dir, "transformer/config.json");
  const config = JSON.parse(readFileSync(configPath, "utf8"));
  config.kino.first_frame_conditioning = true;
  writeFileSync(configPath, JSON.stringify(config));
  server = await startTestServer({ "generator.model_path": dir });
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** A frame the model itself drew from text: the kind of picture its training frames are. */
async function drawnFrame(prompt: string, seed: number): Promise<Uint8Array> {
  const res = await post("/v1/images", { prompt, size: "64x64", response_format: "b64_json", seed });
  expect(res.status).toBe(200);
  return Buffer.from(((await res.json()) as { data: { b64_json: string }[] }).data[0]!.b64_json, "base64");
}

const dataUrl = (png: Uint8Array) => `data:image/png;base64,${Buffer.from(png).toString("base64")}`;

async function rgbOf(png: Uint8Array): Promise<Uint8Array> {
  const { decodeImage } = await import("../../src/media/images.ts");
  const { data } = await decodeImage(png, { maxPixels: 1 << 20, param: "image" });
  return new Uint8Array(data.length / 4 * 3).map((_, i) => data[Math.floor(i / 3) * 4 + (i % 3)]!);
}

function psnr(a: Uint8Array, b: Uint8Array): number {
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i]! - b[i]!) ** 2;
  return 10 * Math.log10(255 ** 2 / (se / a.length));
}

describe.skipIf(!exported)("kino-tiny from an image", () => {
  test("the card says it takes one image, for i2v", async () => {
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    const model = await (await fetch(`${server.url}/v1/models/${models.data[0].id}`)).json();
    expect(model.card).toMatchObject({ tasks: ["t2v", "i2v"], max_references: { image: 1 } });
  });

  test("a video from an image and 'moving right' starts on the image", async () => {
    const reference = await drawnFrame("a red circle on a blue background", 5);
    const res = await post("/v1/videos/sync", { prompt: "moving right", size: "64x64", num_frames: 17, seed: 1, image_reference: { image_url: dataUrl(reference) } });
    expect(res.status).toBe(200);
    const frames = await decodeFrames(new Uint8Array(await res.arrayBuffer()), 64, 64);
    // Frame 0 is the image through the VAE (and the H.264 encoder).
    expect(psnr(frames[0]!, await rgbOf(reference))).toBeGreaterThan(25);
  }, 60000);

  test("the image is cropped to the requested aspect, not stretched: a wide image at a square size", async () => {
    const square = await rgbOf(await drawnFrame("a green square on a white background", 2));
    // The square frame in the middle of a 128x64 picture, black bars either side: the crop keeps the middle.
    const wide = new Uint8Array(128 * 64 * 3);
    for (let y = 0; y < 64; y++) wide.set(square.subarray(y * 64 * 3, (y + 1) * 64 * 3), (y * 128 + 32) * 3);
    const { encodeImage } = await import("../../src/media/images.ts");
    const png = await encodeImage(wide, 128, 64, "png");
    const res = await post("/v1/videos/sync", { prompt: "standing still", size: "64x64", num_frames: 5, seed: 1, image_reference: { image_url: dataUrl(png) } });
    expect(res.status).toBe(200);
    const [first] = await decodeFrames(new Uint8Array(await res.arrayBuffer()), 64, 64);
    expect(psnr(first!, square)).toBeGreaterThan(25);
  }, 60000);

  test("images.edit starts an image from the reference: its background, which the prompt does not name, stays", async () => {
    const reference = await drawnFrame("a yellow star on a black background", 4);
    const form = new FormData();
    form.set("prompt", "a yellow star");
    form.set("size", "64x64");
    form.set("response_format", "b64_json");
    form.set("image", new File([reference], "frame.png", { type: "image/png" }));
    const res = await fetch(`${server.url}/v1/images/edits`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    const image = await rgbOf(Buffer.from((await res.json()).data[0].b64_json, "base64"));
    expect(background(image).every((v) => v < 60)).toBe(true);
  }, 60000);

  test("task i2v without an image, t2v with one, and two images are refused naming the field", async () => {
    const noImage = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", task: "i2v" }), 400);
    expect(noImage).toMatchObject({ param: "task" });
    expect(noImage.message).toContain("needs an image reference");
    const png = dataUrl(await drawnFrame("a red circle", 1));
    const t2v = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", task: "t2v", image_reference: { image_url: png } }), 400);
    expect(t2v).toMatchObject({ param: "task" });
    const two = await expectEnvelope(await post("/v1/videos", { prompt: "x", image_reference: [{ image_url: png }, { image_url: png }] }), 400);
    expect(two.message).toContain("at most 1 image reference");
  }, 60000);
});
