// kino-tiny starting from a client's image, as a user sees it through the server: the image's latent
// is the video's first chunk, so frame 0 is the image through the VAE; the prompt is extended with what
// the image shows, and where it still does not name the object the image branch reads the image in
// every chunk, so the stream carries its object on; /v1/images/edits starts an image from it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { decodeFrames } from "../helpers/decode.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";
import { background, objectColor, renderFrame } from "./helpers/frame-colors.ts";

const EXPORT = join(import.meta.dir, "../../models/kino-tiny");
const exported = existsSync(join(EXPORT, "model_index.json"));
// Over the 8 scenes below, from the motion alone: with the prompt extended from the image the export
// keeps 8 of 8 colors (seed 1); with extension off, 10 of 24 over 3 seeds (18 of 40 over 5), where the
// same DiT without its image branch keeps 3 (docs/MODEL.md has the held-out scores).
const MIN_KEPT_EXTENDED = 7;
const MOTION_ONLY_SEEDS = [1, 2, 3];
const MIN_KEPT_MOTION_ONLY = 8;
let server: TestServer;

beforeAll(async () => {
  if (exported) server = await startTestServer({ "generator.model_path": EXPORT });
});
afterAll(async () => {
  await server?.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** A frame the model itself drew from text: the kind of picture its training frames are. */
async function drawnFrame(prompt: string, seed: number): Promise<Uint8Array> {
  const res = await post("/v1/images", { prompt, size: "64x64", response_format: "b64_json", seed });
  expect(res.status).toBe(200);
  return Buffer.from(((await res.json()) as { data: { b64_json: string }[] }).data[0]!.b64_json, "base64");
}

async function pngOf(rgb: Uint8Array, width = 64, height = 64): Promise<Uint8Array> {
  // (imported here: the module loads the image codecs)
  const { encodeImage } = await import("../../src/media/images.ts");
  return encodeImage(rgb, width, height, "png");
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
  test("the card says it takes one image, for i2v, and that prompt extension can be turned off", async () => {
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    const model = await (await fetch(`${server.url}/v1/models/${models.data[0].id}`)).json();
    expect(model.card).toMatchObject({ tasks: ["t2v", "i2v"], max_references: { image: 1 }, extra_params: { prompt_extend: "boolean" } });
  });

  /** The finished job of an asynchronous video request. */
  async function finishedJob(body: unknown): Promise<Record<string, unknown>> {
    const res = await post("/v1/videos", body);
    expect(res.status).toBe(200);
    const { id } = await res.json();
    for (;;) {
      const job = await (await fetch(`${server.url}/v1/videos/${id}`)).json();
      if (job.status === "completed" || job.status === "failed") return job;
      await Bun.sleep(100);
    }
  }

  test("the image's object and background are added to a prompt that only says how it moves, and the job says so", async () => {
    const png = await pngOf(renderFrame("black", "red", "circle", 22, 30, 13));
    const job = await finishedJob({ prompt: "moving right", size: "64x64", num_frames: 9, seed: 1, image_reference: { image_url: dataUrl(png) } });
    expect(job).toMatchObject({ status: "completed", prompt: "moving right", revised_prompt: "a red circle moving right on a black background" });
    // what the prompt says stays: a color of its own, and its own background
    const own = await finishedJob({ prompt: "a blue circle moving right in the snow", size: "64x64", num_frames: 5, seed: 1, image_reference: { image_url: dataUrl(png) } });
    expect(own.status).toBe("completed");
    expect(own.revised_prompt).toBeUndefined();
    const off = await finishedJob({ prompt: "moving right", size: "64x64", num_frames: 5, seed: 1, image_reference: { image_url: dataUrl(png) }, extra_params: { prompt_extend: false } });
    expect(off.status).toBe("completed");
    expect(off.revised_prompt).toBeUndefined();
    const bad = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", extra_params: { prompt_extend: "no" } }), 400);
    expect(bad).toMatchObject({ param: "extra_params.prompt_extend" });
  }, 60000);

  test("a video from an image and 'moving right' starts on the image", async () => {
    const reference = await drawnFrame("a red circle on a blue background", 5);
    const res = await post("/v1/videos/sync", { prompt: "moving right", size: "64x64", num_frames: 17, seed: 1, image_reference: { image_url: dataUrl(reference) } });
    expect(res.status).toBe(200);
    const frames = await decodeFrames(new Uint8Array(await res.arrayBuffer()), 64, 64);
    // Frame 0 is the image through the VAE (and the H.264 encoder).
    expect(psnr(frames[0]!, await rgbOf(reference))).toBeGreaterThan(25);
  }, 60000);

  /** The object's color in the last frame of a stream (29 frames) from `frame` and `prompt`. */
  async function colorFrom(frame: Uint8Array, prompt: string, seed: number, extra: Record<string, unknown> = {}): Promise<string | null> {
    const png = await pngOf(frame);
    const res = await post("/v1/videos/sync", { prompt, size: "64x64", num_frames: 29, seed, image_reference: { image_url: dataUrl(png) }, ...extra });
    expect(res.status).toBe(200);
    return objectColor((await decodeFrames(new Uint8Array(await res.arrayBuffer()), 64, 64)).at(-1)!);
  }

  // First frames as the training data draws them (an object of radius 13 on a solid background), and
  // what a user would say beside them: only the motion.
  const SCENES: { color: string; shape: "circle" | "square"; bg: string; at: [number, number]; motion: string }[] = [
    { color: "red", shape: "circle", bg: "black", at: [22, 30], motion: "moving right" },
    { color: "yellow", shape: "square", bg: "blue", at: [42, 30], motion: "moving left" },
    { color: "green", shape: "circle", bg: "white", at: [32, 42], motion: "moving up" },
    { color: "blue", shape: "circle", bg: "yellow", at: [32, 22], motion: "moving down" },
    { color: "pink", shape: "square", bg: "gray", at: [22, 32], motion: "moving right" },
    { color: "cyan", shape: "circle", bg: "purple", at: [32, 32], motion: "standing still" },
    { color: "orange", shape: "square", bg: "green", at: [42, 32], motion: "moving left" },
    { color: "white", shape: "square", bg: "black", at: [22, 32], motion: "moving right" },
  ];
  const frameOf = (s: (typeof SCENES)[number]) => renderFrame(s.bg, s.color, s.shape, s.at[0], s.at[1], 13);

  test("from a prompt that only says how it moves, the object keeps its color: the prompt is extended from the image", async () => {
    const found: string[] = [];
    let kept = 0;
    for (const scene of SCENES) {
      const got = await colorFrom(frameOf(scene), scene.motion, 1);
      found.push(`${scene.color}:${got}`);
      if (got === scene.color) kept++;
    }
    console.log(`motion only, extended: ${kept} of ${SCENES.length} kept (${found.join(", ")})`);
    expect(kept, `object colors in the last frame: ${found.join(", ")}`).toBeGreaterThanOrEqual(MIN_KEPT_EXTENDED);
  }, 180000);

  test("without prompt extension the image branch alone carries the color into some of the streams", async () => {
    const found: string[] = [];
    let kept = 0;
    for (const seed of MOTION_ONLY_SEEDS) {
      for (const scene of SCENES) {
        const got = await colorFrom(frameOf(scene), scene.motion, seed, { extra_params: { prompt_extend: false } });
        found.push(`${seed}:${scene.color}:${got}`);
        if (got === scene.color) kept++;
      }
    }
    console.log(`motion only, not extended: ${kept} of ${found.length} kept (${found.join(", ")})`);
    expect(kept, `object colors in the last frame: ${found.join(", ")}`).toBeGreaterThanOrEqual(MIN_KEPT_MOTION_ONLY);
  }, 240000);

  test("the image is cropped to the requested aspect, not stretched: a wide image at a square size", async () => {
    const square = await rgbOf(await drawnFrame("a green square on a white background", 2));
    // The square frame in the middle of a 128x64 picture, black bars either side: the crop keeps the middle.
    const wide = new Uint8Array(128 * 64 * 3);
    for (let y = 0; y < 64; y++) wide.set(square.subarray(y * 64 * 3, (y + 1) * 64 * 3), (y * 128 + 32) * 3);
    const png = await pngOf(wide, 128, 64);
    const res = await post("/v1/videos/sync", { prompt: "standing still", size: "64x64", num_frames: 5, seed: 1, image_reference: { image_url: dataUrl(png) } });
    expect(res.status).toBe(200);
    const [first] = await decodeFrames(new Uint8Array(await res.arrayBuffer()), 64, 64);
    expect(psnr(first!, square)).toBeGreaterThan(25);
  }, 60000);

  test("at 16:9 an object near one edge stays one object: no copy grows on the far edge", async () => {
    // a red circle near the right edge of a 112×64 picture (the wide native size), standing still
    const W = 112, H = 64;
    const png = await pngOf(renderFrame("green", "red", "circle", 96, 32, 10, W, H), W, H);
    const res = await post("/v1/videos/sync", { prompt: "standing still", size: `${W}x${H}`, num_frames: 29, seed: 3, image_reference: { image_url: dataUrl(png) } });
    expect(res.status).toBe(200);
    const frames = await decodeFrames(new Uint8Array(await res.arrayBuffer()), W, H);
    // in the left third of every frame, the pixels that are not the green background
    const green = [0, 0, 0].map((_, c) => frames[0]![(2 * W + 2) * 3 + c]!);
    const strayPixels = frames.map((f) => {
      let n = 0;
      for (let y = 0; y < H; y++)
        for (let x = 0; x < W / 3; x++) if ([0, 1, 2].reduce((sum, c) => sum + Math.abs(f[(y * W + x) * 3 + c]! - green[c]!), 0) > 90) n++;
      return n;
    });
    console.log(`16:9, object at the right edge: stray pixels in the left third per frame ${strayPixels.join(" ")}`);
    expect(Math.max(...strayPixels)).toBeLessThan(20);
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
    const { data } = await res.json();
    // the prompt the image was made from: the request's, with the background the image shows
    expect(data[0].revised_prompt).toBe("a yellow star on a black background");
    const image = await rgbOf(Buffer.from(data[0].b64_json, "base64"));
    expect(background(image).every((v) => v < 60)).toBe(true);
  }, 60000);

  test("task i2v without an image, t2v with one, two images and an undecodable one are refused naming the field", async () => {
    const noImage = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", task: "i2v" }), 400);
    expect(noImage).toMatchObject({ param: "task" });
    expect(noImage.message).toContain("needs an image reference");
    const png = dataUrl(await drawnFrame("a red circle", 1));
    const t2v = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", task: "t2v", image_reference: { image_url: png } }), 400);
    expect(t2v).toMatchObject({ param: "task" });
    const two = await expectEnvelope(await post("/v1/videos", { prompt: "x", image_reference: [{ image_url: png }, { image_url: png }] }), 400);
    expect(two.message).toContain("at most 1 image reference");
    const broken = await expectEnvelope(await post("/v1/videos", { prompt: "moving right", image_reference: { image_url: "data:image/png;base64,iVBORw0KGgo=" } }), 400);
    expect(broken.param).toContain("image_reference");
  }, 60000);
});
