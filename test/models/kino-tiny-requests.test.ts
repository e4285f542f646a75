// What kino-tiny answers to requests beyond its native one: sizes other than 64x64 show one coherent
// scene at the requested aspect, not the grid of copies a DiT draws when its token grid is stretched
// past its training size; input images (images.edit, input_reference) are refused naming the field,
// as the README says, until the model takes images.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { decodeFrames } from "../helpers/decode.ts";
import { expectEnvelope, startTestServer, type TestServer } from "../helpers/server.ts";

const exported = existsSync(join(import.meta.dir, "../../models/kino-tiny/model_index.json"));
let server: TestServer;
beforeAll(async () => {
  if (exported) server = await startTestServer({ "generator.model_path": "builtin:kino-tiny" });
});
afterAll(async () => {
  await server?.close();
});

/** Connected regions (4-neighbour) of pixels that differ from the frame's border colour by more than
 *  60 (summed over channels), with their sizes, largest first. */
function objectRegions(rgb: Uint8Array, width: number, height: number): number[] {
  const border: number[][] = [];
  for (let x = 0; x < width; x++) for (const y of [0, height - 1]) border.push([...rgb.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)]);
  const bg = [0, 1, 2].map((c) => border.map((p) => p[c]!).sort((a, b) => a - b)[border.length >> 1]!);
  const isObject = (i: number) => Math.abs(rgb[i * 3]! - bg[0]!) + Math.abs(rgb[i * 3 + 1]! - bg[1]!) + Math.abs(rgb[i * 3 + 2]! - bg[2]!) > 60;
  const seen = new Uint8Array(width * height);
  const sizes: number[] = [];
  for (let start = 0; start < width * height; start++) {
    if (seen[start] || !isObject(start)) continue;
    let size = 0;
    const stack = [start];
    seen[start] = 1;
    while (stack.length) {
      const i = stack.pop()!;
      size++;
      const x = i % width, y = (i / width) | 0;
      for (const [nx, ny] of [[x - 1, y], [x + 1, y], [x, y - 1], [x, y + 1]] as const) {
        const n = ny * width + nx;
        if (nx >= 0 && ny >= 0 && nx < width && ny < height && !seen[n] && isObject(n)) (seen[n] = 1), stack.push(n);
      }
    }
    sizes.push(size);
  }
  return sizes.sort((a, b) => b - a);
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
      const [largest = 0, ...rest] = objectRegions(frame, width, height);
      // One object covering a real share of the frame; anything else is a speck of at most 2 % of it.
      expect(largest).toBeGreaterThan(0.02 * width * height);
      expect(rest.filter((size) => size > 0.02 * largest)).toEqual([]);
    }, 60000);
  }
});

describe.skipIf(!exported)("kino-tiny and input images", () => {
  test("images.edit and input_reference are refused with 400 naming the field", async () => {
    // Refused by the model card before the image is read, so a PNG signature is all the bytes it takes.
    const form = new FormData();
    form.set("prompt", "a red circle");
    form.set("image", new File([new Uint8Array([137, 80, 78, 71])], "frame.png", { type: "image/png" }));
    const edit = await fetch(`${server.url}/v1/images/edits`, { method: "POST", body: form });
    const editError = await expectEnvelope(edit, 400);
    expect(editError.param).toBe("image");
    expect(editError.message).toContain("input image");
    const video = await fetch(`${server.url}/v1/videos`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a red circle", input_reference: { image_url: "data:image/png;base64,iVBORw0KGgo=" } }),
    });
    const videoError = await expectEnvelope(video, 400);
    expect(videoError.param).toBe("input_reference.image_url");
    expect(videoError.message).toContain("does not accept image references");
  });
});
