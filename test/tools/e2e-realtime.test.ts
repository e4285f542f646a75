// tools/bench/e2e-realtime.ts as tools/gpu-check.sh runs it, on the CPU with the tiny preset: it writes
// the checkpoint, starts `kino serve` as a process of its own, streams a one-chunk session and then the
// measured one at a size the model was not made at, and stops the server. What it reports is checked against what the client
// actually got: the media decodes as H.264 of the requested size with as many frames as it counted,
// and the server and its worker are gone when the bench has finished.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { decodeFrames } from "../helpers/decode.ts";
import { probeMp4 } from "../helpers/ffprobe.ts";
import { isRunning } from "../../tools/bench/kino-process.ts";

const root = resolve(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "kino-e2e-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bench(args: string[]) {
  const r = Bun.spawnSync([process.execPath, "tools/bench/e2e-realtime.ts", "--kino", "source", "--device", "cpu", ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });
  return { rc: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

test("a tiny model on the CPU: first-chunk latency and fps reported, H.264 of the requested size received, the server gone afterwards", async () => {
  const save = join(dir, "session.mp4");
  const started = performance.now();
  const { rc, out, err } = bench(["--preset", "tiny", "--size", "96x64", "--chunks", "3", "--json", "--save", save]);
  expect(rc, err).toBe(0);
  const r = JSON.parse(out);
  expect(r.kino).toBe("bun src/cli/main.ts");
  expect(r.backend).toContain("WebAssembly");
  expect([r.width, r.height, r.fps]).toEqual([96, 64, 16]);
  // the tiny preset: chunks of 2 latent frames in a window of 6, so 3 chunks fill it before 3 are measured
  expect([r.warmupChunks, r.measuredChunks, r.framesPerChunk]).toEqual([3, 3, 8]);
  expect(r.checkpointWriteS).toBeGreaterThan(0);
  expect(r.serverReadyS).toBeGreaterThan(0);
  expect(r.coldFirstChunkS).toBeGreaterThan(0);
  expect(r.firstChunkS).toBeGreaterThan(0);
  expect(r.videoStartToFirstChunkS).toBeGreaterThan(0);
  expect(r.videoStartToFirstChunkS).toBeLessThanOrEqual(r.firstChunkS);
  expect(r.steadyFps).toBeGreaterThan(0);
  expect(r.realTimeFactor).toBeCloseTo(r.steadyFps / 16, 6);
  expect(r.chunkIntervalMaxS).toBeGreaterThanOrEqual(r.chunkIntervalMedianS);
  expect(r.mediaChunks).toBeGreaterThanOrEqual(6);

  // what the client received is one playable stream of the size it asked for, every counted frame in it
  const bytes = new Uint8Array(readFileSync(save));
  const probe = await probeMp4(bytes);
  expect(probe).toMatchObject({ codec: "h264", width: 96, height: 64, frames: r.framesReceived });
  const frames = await decodeFrames(bytes, 96, 64);
  expect(frames.length).toBe(r.framesReceived);
  // random weights still draw something: not every decoded frame is one flat color
  expect(frames.some((f) => f.some((v) => v !== f[0]))).toBe(true);

  // SIGTERM stopped the server cleanly, and neither it nor its worker outlived the bench
  expect(r.server.exitCode).toBe(0);
  expect(r.server.workerPids.length).toBe(1);
  expect(r.server.workersLeft).toEqual([]);
  for (const pid of [r.server.pid, ...r.server.workerPids]) expect(isRunning(pid), `pid ${pid}`).toBe(false);
  expect((performance.now() - started) / 1000).toBeLessThan(60);
}, 90_000);

test("the table names the targets it was given and whether they were met; bad flags are refused by name", () => {
  const { rc, out, err } = bench(["--preset", "tiny", "--chunks", "1", "--target-fps", "1000000", "--target-first-chunk", "60"]);
  expect(rc, err).toBe(0);
  expect(out).toContain("| measure | value | target |");
  expect(out).toMatch(/\| steady video fps \(chunks 3–3, frames per wall s\) \| [\d.]+ \| ≥ 1000000 fps: NOT met \|/);
  expect(out).toMatch(/\| session\.start → first media chunk, the next session \(a new prompt\) \| [\d.]+ s \| ≤ 60 s: met \|/);
  expect(out).toMatch(/SIGTERM → server exit \| exit 0 in [\d.]+ s, its 1 worker\(s\) gone/);

  const bad = bench(["--preset", "huge"]);
  expect(bad.rc).toBe(2);
  expect(bad.err).toContain("--preset must be tiny, kino-tiny, wan-1.3b, got huge");
  const badChunks = bench(["--preset", "tiny", "--chunks", "0"]);
  expect(badChunks.rc).toBe(2);
  expect(badChunks.err).toContain("--chunks must be a whole number ≥ 1, got 0");
}, 90_000);
