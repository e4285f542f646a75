// The default model as a user sees it through the server: the trained kino-tiny weights in
// models/kino-tiny/ follow the prompt's background, mostly draw the object in the prompt's color, are
// deterministic per seed, make images, and move to a new prompt in a realtime session.
// tools/eval/server-eval.ts measures colors, shapes and motion on the 40 held-out prompts
// (docs/MODEL.md); these are a quick handful.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { decodeFrames } from "../helpers/decode.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const exported = existsSync(join(import.meta.dir, "../../models/kino-tiny/model_index.json"));
let server: TestServer;

beforeAll(async () => {
  if (exported) server = await startTestServer({ "generator.model_path": "builtin:kino-tiny" });
});
afterAll(async () => {
  await server?.close();
});

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;

/** The background color: the per-channel median of the frame's 2-pixel border. */
function background(frame: Uint8Array, size = 64): number[] {
  const border: number[][] = [];
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      if (x < 2 || y < 2 || x >= size - 2 || y >= size - 2) border.push([...frame.subarray((y * size + x) * 3, (y * size + x) * 3 + 3)]);
    }
  }
  return [0, 1, 2].map((c) => median(border.map((p) => p[c]!)));
}

/** The palette of tools/data/render.py (object colors). */
const PALETTE: Record<string, number[]> = {
  red: [220, 40, 40], orange: [245, 140, 30], yellow: [240, 220, 40], green: [40, 180, 60], cyan: [40, 210, 220],
  blue: [40, 70, 220], purple: [140, 50, 200], pink: [245, 130, 190], white: [245, 245, 245], gray: [128, 128, 128],
};

/** The object's RGB, much as tools/eval/metrics.py measures it (which keeps only the largest blob):
 *  the per-channel median of the pixels that differ from the border's background by more than 60
 *  (summed over channels); null when fewer than 10 pixels differ. */
function objectRgb(frame: Uint8Array, size = 64): number[] | null {
  const bg = background(frame, size);
  const px: number[][] = [];
  for (let i = 0; i < size * size; i++) {
    const rgb = [...frame.subarray(i * 3, i * 3 + 3)];
    if (rgb.reduce((sum, v, c) => sum + Math.abs(v - bg[c]!), 0) > 60) px.push(rgb);
  }
  return px.length < 10 ? null : [0, 1, 2].map((c) => median(px.map((p) => p[c]!)));
}

/** The object's color: its RGB's nearest in the palette. */
function objectColor(frame: Uint8Array, size = 64): string | null {
  const color = objectRgb(frame, size);
  if (!color) return null;
  const distance = (p: number[]) => p.reduce((sum, v, c) => sum + (v - color[c]!) ** 2, 0);
  return Object.keys(PALETTE).reduce((best, name) => (distance(PALETTE[name]!) < distance(PALETTE[best]!) ? name : best));
}

/** Hue in degrees of an RGB triple. */
function hue([r, g, b]: number[]): number {
  const max = Math.max(r!, g!, b!);
  const d = max - Math.min(r!, g!, b!);
  if (d === 0) return 0;
  const h = max === r ? ((g! - b!) / d) % 6 : max === g ? (b! - r!) / d + 2 : (r! - g!) / d + 4;
  return (h * 60 + 360) % 360;
}
/** How many of the 8 prompts of the color test must come out right: the step-19000 export gets all 8
 *  (as does step 24500; step 12000 got 4); one prompt of margin. By chance ~1 would. */
const MIN_RIGHT_COLORS = 7;
const isBlue = (rgb: number[]) => hue(rgb) > 200 && hue(rgb) < 260 && rgb[2]! > 120;

async function generate(prompt: string, seed: number, numFrames = 9): Promise<Uint8Array> {
  const res = await fetch(`${server.url}/v1/videos/sync`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, size: "64x64", num_frames: numFrames, seed }),
  });
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

/** A 29-frame realtime session that switches from one prompt to another (over transitionChunks)
 *  after its second media chunk: the last frame of every media chunk (chunk 0 is 1 frame, then 4
 *  each) and the index of the first chunk the update affects. */
async function promptSwitch(from: string, to: string, seed: number, transitionChunks = 0): Promise<{ lastFrames: Uint8Array[]; first: number }> {
  const client = await RealtimeClient.connect(server.url);
  // paced to media time with one chunk of lead: the worker waits before each chunk, so the update,
  // sent on chunk 1's metadata, is in before chunk 2 starts however fast the machine generates (the
  // first affected chunk is 2 every time, where unpaced it depended on the machine's speed)
  client.send({ type: "session.start", prompt: from, size: "64x64", num_frames: 29, seed, extra_params: { pace_to_media_time: true, pace_lead_chunks: 1 } });
  await client.nextOfType("video.chunk_metadata");
  await client.nextOfType("video.chunk_metadata");
  client.send({ type: "session.interaction", interaction: { event_id: "switch", event: { prompt: to }, transition_chunks: transitionChunks } });
  await client.untilDone(60000);
  const metas = client.jsonMessages().filter((m) => m.type === "video.chunk_metadata" && m.kind === "media");
  const bytes = Buffer.concat(client.received.filter((r) => r.kind === "binary").map((r) => (r as { bytes: Uint8Array }).bytes));
  const frames = await decodeFrames(bytes, 64, 64);
  const first = metas.find((m) => m.started_event_ids.includes("switch"));
  expect(first).toBeDefined();
  return { lastFrames: metas.map((_, k) => frames[k * 4]!), first: first.generation_chunk_index };
}

describe.skipIf(!exported)("kino-tiny through the server", () => {
  test("the background follows the prompt: black, then blue", async () => {
    const black = background((await decodeFrames(await generate("a red circle standing still on a black background", 1), 64, 64)).at(-1)!);
    expect(Math.max(...black)).toBeLessThan(60);
    const blue = background((await decodeFrames(await generate("a white square standing still on a blue background", 1), 64, 64)).at(-1)!);
    expect(isBlue(blue)).toBe(true);
  }, 60000);

  // Object colors are what kino-tiny learned last (docs/MODEL.md: held-out accuracy per step): a
  // handful of prompts, one per color family, must mostly come out in the color they name.
  test("objects mostly take the prompt's color", async () => {
    const prompts: [string, string][] = [
      ["red", "a red circle standing still on a black background"],
      ["yellow", "a yellow square moving left on a blue background"],
      ["cyan", "a cyan star bouncing on a gray background"],
      ["green", "a green triangle moving right on a white background"],
      ["pink", "a pink ring growing on a black background"],
      ["blue", "a blue square moving up on a yellow background"],
      ["white", "a white circle moving down on a purple background"],
      ["orange", "an orange star spinning on a green background"],
    ];
    const found: string[] = [];
    for (const [, prompt] of prompts) found.push(String(objectColor((await decodeFrames(await generate(prompt, 1), 64, 64)).at(-1)!)));
    const right = prompts.filter(([color], i) => found[i] === color).length;
    expect(right, `object colors found: ${found.join(", ")}`).toBeGreaterThanOrEqual(MIN_RIGHT_COLORS);
  }, 90000);

  test("same prompt and seed: the same bytes; another seed: another video", async () => {
    const prompt = "a yellow star moving left on a purple background";
    const [a, b, c] = [await generate(prompt, 5, 5), await generate(prompt, 5, 5), await generate(prompt, 6, 5)];
    expect(Buffer.compare(a, b)).toBe(0);
    expect(Buffer.compare(a, c)).not.toBe(0);
  }, 60000);

  test("text to image with the same model: a black and a white background", async () => {
    const image = async (prompt: string) => {
      const res = await fetch(`${server.url}/v1/images/generations`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt, size: "64x64", response_format: "b64_json", seed: 3 }),
      });
      expect(res.status).toBe(200);
      const png = Buffer.from((await res.json()).data[0].b64_json, "base64");
      return background(new Uint8Array(Bun.spawnSync(["ffmpeg", "-v", "error", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], { stdin: png }).stdout));
    };
    expect(Math.max(...(await image("a red square on a black background")))).toBeLessThan(60);
    expect(Math.min(...(await image("a red square on a white background")))).toBeGreaterThan(180);
  }, 60000);

  // (kino-tiny does not yet tell blue from cyan right after a switch: the test asserts where the
  // change lands, black before it and a bright background from the first affected chunk on)
  test("a realtime prompt update with transition_chunks 0 changes the background in the first affected chunk", async () => {
    const { lastFrames, first } = await promptSwitch("a white circle moving right on a black background", "a white circle moving right on a blue background", 7);
    expect(Math.max(...background(lastFrames[first - 1]!))).toBeLessThan(60);
    expect(Math.max(...background(lastFrames[first]!))).toBeGreaterThan(150);
  }, 90000);

  // The red -> blue switch (docs/MODEL.md: through the server the first affected chunk is
  // blue for 4 of 4 seeds at step 32000, 200-212 degrees, near the edge of cyan): red up to the switch,
  // off red in the first affected chunk, and blue from the next one on for good.
  test("a realtime prompt update with transition_chunks 0 turns a red object blue and keeps it blue", async () => {
    const { lastFrames, first } = await promptSwitch("a red circle moving right on a black background", "a blue circle moving right on a black background", 8);
    expect(objectColor(lastFrames[first - 1]!)).toBe("red");
    expect(objectColor(lastFrames[first]!)).not.toBe("red");
    const after = lastFrames.slice(first + 1).map((frame) => objectColor(frame));
    expect(after.length).toBeGreaterThanOrEqual(3);
    expect(after.every((c) => c === "blue"), `object colors after the switch: ${after.join(", ")}`).toBe(true);
  }, 90000);

  // The transition: over 3 chunks the hue moves monotonically from red towards blue (red at
  // 360°, purple ~300°, blue ~230°) and is blue from the 3rd affected chunk on. Each continuing chunk
  // starts from its predecessor (kino.continuation_strength 0.5): from the last red chunk on, seed 7
  // gives 364°, 356°, 250°, 221°. With every chunk from noise the middle chunk overshot into cyan
  // (364°, 350°, 138°, 229°), and over session seeds 7–14 through the server 1 of 8 passed where
  // continuing chunks pass 7 (docs/MODEL.md, "Stop 22").
  test("a realtime prompt update with transition_chunks 3 moves the hue from red to blue chunk by chunk", async () => {
    const { lastFrames, first } = await promptSwitch("a red circle moving right on a black background", "a blue circle moving right on a black background", 7, 3);
    expect(objectColor(lastFrames[first - 1]!)).toBe("red");
    const hues = lastFrames.slice(first - 1, first + 3).map((frame) => {
      const h = hue(objectRgb(frame)!);
      return h < 120 ? h + 360 : h; // red -> purple -> blue as a falling angle
    });
    for (let k = 1; k < hues.length; k++) expect(hues[k]!, `hues from the last red chunk on: ${hues.map(Math.round).join(", ")}`).toBeLessThanOrEqual(hues[k - 1]! + 5);
    const after = lastFrames.slice(first + 2).map((frame) => objectColor(frame));
    expect(after.every((c) => c === "blue"), `object colors from the 3rd affected chunk: ${after.join(", ")}`).toBe(true);
  }, 90000);
});
