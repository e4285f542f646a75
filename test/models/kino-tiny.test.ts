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
import { background, hue, objectColor, objectRgb } from "./helpers/frame-colors.ts";

const exported = existsSync(join(import.meta.dir, "../../models/kino-tiny/model_index.json"));
let server: TestServer;

beforeAll(async () => {
  if (exported) server = await startTestServer({ "generator.model_path": "builtin:kino-tiny" });
});
afterAll(async () => {
  await server?.close();
});

/** The color test's seeds and how many of its 8 prompts x 3 seeds must come out right. One seed
 *  measures luck more than the model: models level over seeds 1-8 fall to 6 of 8 at some seeds, and
 *  "a pink ring growing on a black background" reads gray at almost every seed (a thin ring whose
 *  dark smear carries the median). The export gets 21 of 24 at seeds 1-3, the pink ring the three
 *  misses; 20 keeps one clip of margin, where chance gives ~2. */
const COLOR_SEEDS = [1, 2, 3];
const MIN_RIGHT_COLORS = 20;
/** The transition test's session seeds: every one must pass (see the test). */
const TRANSITION_SEEDS = [7, 8, 9, 10, 11, 12, 13, 14];
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
 *  from media chunk firstAffected on: the last frame of every media chunk (chunk 0 is 1 frame, then
 *  4 each) and the index of the first chunk the update affects. */
async function promptSwitch(from: string, to: string, seed: number, transitionChunks = 0, firstAffected = 2): Promise<{ lastFrames: Uint8Array[]; first: number }> {
  const client = await RealtimeClient.connect(server.url);
  // paced to media time with one chunk of lead: the worker waits before each chunk, so the update,
  // sent on chunk firstAffected-1's metadata, is in before chunk firstAffected starts however fast the
  // machine generates (unpaced the first affected chunk depended on the machine's speed)
  client.send({ type: "session.start", prompt: from, size: "64x64", num_frames: 29, seed, extra_params: { pace_to_media_time: true, pace_lead_chunks: 1 } });
  for (let k = 0; k < firstAffected; k++) await client.nextOfType("video.chunk_metadata");
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

  // Object colors are what kino-tiny learns last in training (tools/train/NOTES.md): a handful of prompts, one per color family, must mostly come out in the color they name.
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
    let right = 0;
    for (const seed of COLOR_SEEDS) {
      for (const [color, prompt] of prompts) {
        const got = String(objectColor((await decodeFrames(await generate(prompt, seed), 64, 64)).at(-1)!));
        found.push(`${seed}:${got}`);
        if (got === color) right++;
      }
    }
    expect(right, `object colors found: ${found.join(", ")}`).toBeGreaterThanOrEqual(MIN_RIGHT_COLORS);
  }, 120000);

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

  // The red -> blue switch, the update after chunk 2 (the first affected chunk is 3, as in
  // tools/eval/server-eval.ts): blue in the first affected chunk, read on its last frame, and after, in
  // each of 8 sessions. The margin is thin: the export passes 32 of 32 sessions in server-eval, the
  // first affected chunk at 205–220° where cyan/blue meet near 204°, and an update a chunk earlier
  // still lands cyan in 2 of these 8 sessions.
  test("a realtime prompt update with transition_chunks 0 turns a red object blue in the first affected chunk", async () => {
    const misses: string[] = [];
    for (const seed of TRANSITION_SEEDS) {
      const { lastFrames, first } = await promptSwitch("a red circle moving right on a black background", "a blue circle moving right on a black background", seed, 0, 3);
      const colors = lastFrames.slice(first - 1).map((frame) => objectColor(frame));
      if (colors[0] !== "red" || colors.length < 4 || colors.slice(1).some((c) => c !== "blue")) misses.push(`seed ${seed}: ${colors.join(", ")}`);
    }
    expect(misses, "sessions whose last red chunk or affected chunks are off").toEqual([]);
  }, 180000);

  // The transition: over 3 chunks the hue moves monotonically from red towards blue (red at
  // 360°, purple ~300°, blue ~230°) and is blue from the 3rd affected chunk on, read on each chunk's
  // last frame, in each of 8 sessions (seeds 7–14). The failure it guards against: the chunk at 2/3
  // jumps past blue into cyan and comes back, as it does for a DiT trained on latents of a VAE that
  // never saw a cross-fade (tools/train/NOTES.md). The export passes all 8, and 32 of 32 sessions in
  // tools/eval/server-eval.ts.
  test("a realtime prompt update with transition_chunks 3 moves the hue from red to blue chunk by chunk", async () => {
    const verdicts: string[] = [];
    let passed = 0;
    for (const seed of TRANSITION_SEEDS) {
      const { lastFrames, first } = await promptSwitch("a red circle moving right on a black background", "a blue circle moving right on a black background", seed, 3);
      const hues = lastFrames.slice(first - 1, first + 3).map((frame) => {
        const rgb = objectRgb(frame);
        const h = rgb ? hue(rgb) : Number.NaN;
        return h < 120 ? h + 360 : h; // red -> purple -> blue as a falling angle
      });
      const redBefore = objectColor(lastFrames[first - 1]!) === "red";
      const monotonic = hues.every((h, k) => k === 0 || h <= hues[k - 1]! + 5);
      const blueAfter = lastFrames.slice(first + 2).every((frame) => objectColor(frame) === "blue");
      const ok = redBefore && monotonic && blueAfter;
      if (ok) passed++;
      verdicts.push(`seed ${seed} ${ok ? "pass" : "FAIL"}: ${hues.map(Math.round).join(" ")}`);
    }
    expect(passed, `hues from the last red chunk on, per session: ${verdicts.join("; ")}`).toBe(TRANSITION_SEEDS.length);
  }, 120000);
});

// Beyond the native request: other sizes show one coherent scene at the requested aspect (not the grid
// of copies a DiT draws when its token grid is stretched past its training size). Input images:
// kino-tiny-first-frame.test.ts.
/** Connected regions (4-neighbour) of pixels that differ from the frame's border colour by more than
 *  60 (summed over channels): their sizes and whether they touch the frame's edge, largest first. */
function objectRegions(rgb: Uint8Array, width: number, height: number): { size: number; onEdge: boolean }[] {
  const border: number[][] = [];
  for (let x = 0; x < width; x++) for (const y of [0, height - 1]) border.push([...rgb.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)]);
  const bg = [0, 1, 2].map((c) => border.map((p) => p[c]!).sort((a, b) => a - b)[border.length >> 1]!);
  const isObject = (i: number) => Math.abs(rgb[i * 3]! - bg[0]!) + Math.abs(rgb[i * 3 + 1]! - bg[1]!) + Math.abs(rgb[i * 3 + 2]! - bg[2]!) > 60;
  const seen = new Uint8Array(width * height);
  const regions: { size: number; onEdge: boolean }[] = [];
  for (let start = 0; start < width * height; start++) {
    if (seen[start] || !isObject(start)) continue;
    let size = 0, onEdge = false;
    const stack = [start];
    seen[start] = 1;
    while (stack.length) {
      const i = stack.pop()!;
      size++;
      const x = i % width, y = (i / width) | 0;
      onEdge ||= x === 0 || y === 0 || x === width - 1 || y === height - 1;
      for (const [nx, ny] of [[x - 1, y], [x + 1, y], [x, y - 1], [x, y + 1]] as const) {
        const n = ny * width + nx;
        if (nx >= 0 && ny >= 0 && nx < width && ny < height && !seen[n] && isObject(n)) (seen[n] = 1), stack.push(n);
      }
    }
    regions.push({ size, onEdge });
  }
  return regions.sort((a, b) => b.size - a.size);
}

describe.skipIf(!exported)("kino-tiny at other sizes", () => {
  for (const [width, height] of [[480, 272], [272, 480], [128, 128]] as const) {
    test(`${width}x${height}: one object, not a grid of copies`, async () => {
      const res = await fetch(`${server.url}/v1/videos/sync`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "a red circle moving right on a blue background", size: `${width}x${height}`, num_frames: 9, seed: 3 }),
      });
      expect(res.status).toBe(200);
      const frame = (await decodeFrames(new Uint8Array(await res.arrayBuffer()), width, height)).at(-1)!;
      const [largest, ...rest] = objectRegions(frame, width, height);
      // One object covering a real share of the frame. Anything else more than a speck (2 % of it) is
      // at most one piece on the frame's edge: objects leaving the frame re-enter on the other side,
      // and a piece of one that wrapped around can linger there (docs/MODEL.md, Limits). A grid of
      // copies has them inside the frame.
      expect(largest?.size ?? 0).toBeGreaterThan(0.02 * width * height);
      const others = rest.filter((region) => region.size > 0.02 * largest!.size);
      expect(others.filter((region) => !region.onEdge).map((region) => region.size)).toEqual([]);
      expect(others.length).toBeLessThanOrEqual(1);
    }, 60000);
  }
});
