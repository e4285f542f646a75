// References that are accepted: a local path under an allowed root, a data URL, and a remote URL on
// an allowed host (a loopback server), each materialized at admission and visible in the output.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeImage } from "../../src/media/images.ts";
import { decodeFrames, pixel } from "../helpers/decode.ts";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let root: string;
let png: Uint8Array;
let remote: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "kino-refs-"));
  // A green picture: the first frame of an i2v job shows it outside the object.
  png = await encodeImage(new Uint8Array(64 * 64 * 3).map((_, i) => (i % 3 === 1 ? 220 : 20)), 64, 64, "png");
  await Bun.write(join(root, "green.png"), png);
  remote = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(png, { headers: { "content-type": "image/png" } }) });
  server = await startTestServer({
    "server.references.allowed_local_roots": `[${root}]`,
    "server.references.remote.enabled": "true",
    "server.references.remote.allow_hosts": `["127.0.0.1:${remote.port}"]`,
  });
});
afterAll(async () => {
  remote.stop(true);
  await server.close();
});

async function firstFrameCorner(reference: object): Promise<[number, number, number]> {
  const res = await fetch(`${server.url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "a white circle still", size: "64x64", num_frames: 5, ...reference }),
  });
  expect(res.status).toBe(200);
  const job = await waitForJob(server.url, (await res.json()).id);
  expect(job.status).toBe("completed");
  const mp4 = new Uint8Array(await (await fetch(`${server.url}/v1/videos/${job.id}/content`)).arrayBuffer());
  return pixel((await decodeFrames(mp4, 64, 64))[0]!, 64, 2, 2);
}

test("a local path under an allowed root", async () => {
  const [r, g] = await firstFrameCorner({ input_reference: join(root, "green.png") });
  expect(g).toBeGreaterThan(160);
  expect(r).toBeLessThan(70);
});

test("a data URL in image_reference", async () => {
  const [, g] = await firstFrameCorner({ image_reference: [{ image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` }] });
  expect(g).toBeGreaterThan(160);
});

test("a remote URL on an allowed host; materialized copies are removed after the job", async () => {
  const [, g] = await firstFrameCorner({ reference_url: `http://127.0.0.1:${remote.port}/green.png` });
  expect(g).toBeGreaterThan(160);
  const refs = join(server.outputDir, "references");
  expect(existsSync(refs) ? readdirSync(refs) : []).toEqual([]);
});
