// `npm start -- --server.port N --server.output_dir DIR` serves the default model; `kino generate`
// checks its options like a request and takes an image for image-to-video.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeImage } from "../../src/media/images.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";

const root = join(import.meta.dir, "../..");

async function waitForHealth(url: string, timeoutMs: number): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      return await fetch(`${url}/health`);
    } catch {
      await Bun.sleep(100);
    }
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms`);
}

test("npm start with dotted overrides serves the default model and writes under output_dir", async () => {
  const outputDir = mkdtempSync(join(tmpdir(), "kino-start-"));
  const port = 18000 + Math.floor(Math.random() * 2000);
  // setsid: npm does not pass SIGTERM on to the server, so the test stops the whole process group.
  const proc = Bun.spawn(["setsid", "npm", "start", "--silent", "--", "--server.port", String(port), "--server.output_dir", outputDir], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    expect((await waitForHealth(url, 30000)).status).toBe(200);
    const models = await (await fetch(`${url}/v1/models`)).json();
    expect(models.data[0].id).toBe("builtin:kino-tiny");
    expect((await (await fetch(`${url}/v1/models/builtin:kino-tiny`)).json()).card.name).toBe("kino-tiny");
    const res = await fetch(`${url}/v1/videos/sync`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a red circle", size: "64x64", num_frames: 5 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("video/mp4");
  } finally {
    process.kill(-proc.pid, "SIGTERM");
    await proc.exited;
    rmSync(outputDir, { recursive: true, force: true });
  }
});

test("unknown config keys fail at start naming their dotted path", () => {
  const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "serve", "--server.prot", "1"]);
  expect(proc.exitCode).toBe(2);
  expect(proc.stderr.toString()).toContain("server.prot: unknown field");
});

test("a config file with a wrong type names the path", () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-cfg-"));
  const file = join(dir, "serve.yaml");
  writeFileSync(file, "server:\n  port: abc\n");
  const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "serve", "--config", file]);
  rmSync(dir, { recursive: true, force: true });
  expect(proc.exitCode).toBe(2);
  expect(proc.stderr.toString()).toContain("server.port: expected integer");
});

test("a second server on a port in use refuses to start, naming the port", () => {
  // The first one shares its port as Elysia's Bun adapter asks by default: a second kino must still refuse.
  const first = Bun.serve({ hostname: "0.0.0.0", port: 0, reusePort: true, fetch: () => new Response("first") });
  try {
    const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "serve", "--server.port", String(first.port)]);
    expect(proc.exitCode).toBe(1);
    expect(proc.stderr.toString()).toContain(`port ${first.port} is in use`);
  } finally {
    first.stop(true);
  }
});

test("server.public_url must be an http(s) URL", () => {
  for (const value of ["ftp://kino.example.com", "kino.example.com", "https://"]) {
    const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "serve", "--server.public_url", value]);
    expect(proc.exitCode).toBe(2);
    expect(proc.stderr.toString()).toContain("server.public_url: Expected string to match");
  }
});

test("kino generate checks its options as a request is checked, before the model loads", () => {
  for (const [flag, value] of [["--seconds", "2.5"], ["--seed", "abc"]]) {
    const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "generate", "--prompt", "x", flag!, value!, "-o", join(tmpdir(), "never.mp4")]);
    expect(proc.exitCode).toBe(2);
    expect(proc.stderr.toString()).toContain(flag!.slice(2) === "seconds" ? "'seconds'" : "'seed'");
  }
});

test("kino generate --image runs an image-to-video checkpoint; without the image it says what the model needs", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-gen-i2v-"));
  try {
    await makeTinyCheckpoint(join(dir, "i2v"), { kind: "i2v" });
    await Bun.write(join(dir, "first.png"), await encodeImage(new Uint8Array(32 * 32 * 3).fill(128), 32, 32, "png"));
    const run = (...extra: string[]) => Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "generate", "--prompt", "a red circle", "--size", "32x32",
      "--num-frames", "5", "--generator.model_path", join(dir, "i2v"), "--generator.engine.device", "cpu", "-o", join(dir, "out.mp4"), ...extra]);
    const ok = run("--image", join(dir, "first.png"));
    expect(ok.stderr.toString()).toContain("(32x32, 5 frames");
    expect(ok.exitCode).toBe(0);
    const missing = run();
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr.toString()).toContain("makes video from an image (task 'i2v' only)");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
