// The single executable: built by `npm run build`, copied ALONE into an empty folder, it serves (REST
// and realtime), generates with a progress bar on a terminal, and starts its own worker processes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { probeMp4 } from "../helpers/ffprobe.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { waitForJob } from "../helpers/server.ts";

const root = join(import.meta.dir, "../..");
let dir: string;
let kino: string;

beforeAll(() => {
  const build = Bun.spawnSync([process.execPath, "build.ts", "--compile"], { cwd: root, stderr: "pipe", stdout: "pipe" });
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`);
  dir = mkdtempSync(join(tmpdir(), "kino-binary-"));
  kino = join(dir, "kino");
  copyFileSync(join(root, "dist/kino"), kino);
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("--version and --help", () => {
  expect(Bun.spawnSync([kino, "--version"], { cwd: dir }).stdout.toString()).toMatch(/^kino \d+\.\d+\.\d+/);
  const help = Bun.spawnSync([kino, "serve", "--help"], { cwd: dir }).stdout.toString();
  expect(help).toContain("--server.port");
  expect(help).toContain("8000");
});

test("generate writes a playable MP4 and draws a progress bar on a terminal", () => {
  // `script` gives the command a pseudo-terminal, as a person running it would have.
  const run = Bun.spawnSync(["script", "-qec", `${kino} generate --prompt "a green circle moving up" --size 96x64 --seconds 1 -o clip.mp4`, "/dev/null"], { cwd: dir });
  const out = run.stdout.toString();
  expect(run.exitCode).toBe(0);
  expect(out).toContain("100%");
  expect(out).toMatch(/\[#+\.*\]/);
  expect(existsSync(join(dir, "clip.mp4"))).toBe(true);
});

describe("kino serve from an empty folder", () => {
  let proc: ReturnType<typeof Bun.spawn>;
  const port = 19000 + Math.floor(Math.random() * 1000);
  const url = `http://127.0.0.1:${port}`;
  beforeAll(async () => {
    // a temp folder of its own, to count what the binary writes there
    mkdirSync(join(dir, "tmp"));
    const env = { ...process.env, TMPDIR: join(dir, "tmp") };
    proc = Bun.spawn([kino, "serve", "--server.port", String(port), "--server.host", "127.0.0.1"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    for (let i = 0; i < 150; i++) {
      if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return;
      await Bun.sleep(100);
    }
    throw new Error("the binary did not become healthy");
  });
  afterAll(async () => {
    proc.kill();
    await proc.exited;
  });

  test("REST smoke: models, a job through to its MP4, sync, images, a video from an image, errors", async () => {
    const models = await (await fetch(`${url}/v1/models`)).json();
    expect(models.data[0].id).toBe("builtin:kino-tiny");
    // The embedded model unpacks to a temporary folder; its card still names it as the checkout does.
    const model = await (await fetch(`${url}/v1/models/builtin:kino-tiny`)).json();
    expect(model.card.name).toBe("kino-tiny");
    const job = await (await fetch(`${url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "a red square", size: "64x64", seconds: "1" }) })).json();
    expect((await waitForJob(url, job.id)).status).toBe("completed");
    const mp4 = new Uint8Array(await (await fetch(`${url}/v1/videos/${job.id}/content`)).arrayBuffer());
    expect((await probeMp4(mp4)).codec).toBe("h264");
    const sync = await fetch(`${url}/v1/videos/sync`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "a red square", size: "64x64", num_frames: 5 }) });
    expect((await probeMp4(new Uint8Array(await sync.arrayBuffer()))).frames).toBe(5);
    const images = await (await fetch(`${url}/v1/images`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "x", size: "64x64", output_format: "jpeg" }) })).json();
    expect(images.data[0].b64_json.length).toBeGreaterThan(100);
    // A video from that image: the reference is prepared on the image thread, embedded in the binary.
    const reference = { image_url: `data:image/jpeg;base64,${images.data[0].b64_json}` };
    const fromImage = await fetch(`${url}/v1/videos/sync`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "moving right", size: "64x64", num_frames: 5, image_reference: [reference] }) });
    expect(fromImage.status).toBe(200);
    expect((await probeMp4(new Uint8Array(await fromImage.arrayBuffer()))).frames).toBe(5);
    const bad = await fetch(`${url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(bad.status).toBe(400);
    // Its outputs land beside it, in ./outputs.
    expect(readdirSync(join(dir, "outputs", "videos"))).toContain(`${job.id}.mp4`);
  });

  test("realtime sessions stream from the binary, their encoder threads sharing one copy of the native encoder", async () => {
    for (let i = 0; i < 3; i++) {
      const client = await RealtimeClient.connect(url);
      client.send({ type: "session.start", prompt: "a blue ring", size: "64x64", num_frames: 9 });
      await client.untilDone();
      expect(client.jsonMessages().filter((m) => m.type === "video.chunk_metadata" && m.kind === "media")).toHaveLength(3);
      expect(client.jsonMessages().at(-1)).toMatchObject({ type: "session.done", stopped: false });
    }
    // the embedded libkino_h264.so is written out once by the worker process, not once per session's thread
    expect(readdirSync(join(dir, "tmp")).filter((f) => f.startsWith("kino-h264-"))).toHaveLength(1);
  });
});
