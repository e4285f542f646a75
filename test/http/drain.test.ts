// SIGTERM on one node (no cluster): the server drains — new jobs, syncs and realtime upgrades get 503
// with Retry-After, a running session ends with session.done (reason "draining"), the running job
// finishes within server.drain_timeout_s — and exits 0. A job longer than the timeout is failed with
// the shut-down message (kept across the restart); a second SIGTERM exits at once.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer, type ServerProcess } from "../helpers/server-process.ts";
import { expectEnvelope } from "../helpers/server.ts";
import { RealtimeClient, upgradeHeaders } from "../helpers/realtime-client.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

async function serve(extra: Record<string, string>, dir = mkdtempSync(join(tmpdir(), "kino-drain-"))): Promise<ServerProcess & { dir: string }> {
  dirs.push(dir);
  const args = Object.entries(extra).flatMap(([key, value]) => [`--${key}`, value]);
  return { ...(await spawnServer(dir, { args })), dir };
}

const post = (url: string, path: string, body: Record<string, unknown>) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "a red circle", size: "64x64", num_frames: 5, ...body }) });

async function waitUntilRunning(url: string, id: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const job = await (await fetch(`${url}/v1/videos/${id}`)).json();
    if (job.status === "in_progress" && job.progress > 0) return;
    await Bun.sleep(30);
  }
  throw new Error(`job ${id} never ran`);
}

describe("SIGTERM on one node", () => {
  test("drains: a session ends with session.done reason draining, new work gets 503, the running job completes, exit 0", async () => {
    const server = await serve({ "server.drain_timeout_s": "20" });
    const session = await RealtimeClient.connect(server.url);
    session.send({ type: "session.start", prompt: "a blue square", size: "64x48", num_frames: 201, fps: 8, extra_params: { chunk_delay_ms: 150 } });
    const start = await session.nextOfType("video.start");
    await session.nextOfType("video.chunk_metadata");
    // The one worker streams: the job waits behind the session, and runs once the drain has stopped it.
    const job = await (await post(server.url, "/v1/videos", { num_inference_steps: 30, extra_params: { step_delay_ms: 100 } })).json();
    expect(job.status).toBe("queued");

    const exited = server.proc.exited;
    server.proc.kill("SIGTERM");
    const done = await session.nextOfType("session.done");
    expect(done).toEqual({ type: "session.done", request_id: start.request_id, chunks: done.chunks, stopped: true, reason: "draining" });
    const metas = session.jsonMessages().filter((m) => m.type === "video.chunk_metadata");
    expect(metas.at(-1).kind).toBe("trailer");
    expect(done.chunks).toBe(metas.length);
    expect((await session.closed).code).toBe(1000);

    // While the job runs out its time: no new work, 503 with Retry-After and the envelope; reads go on.
    const refused = await post(server.url, "/v1/videos", {});
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await expectEnvelope(refused, 503)).message).toBe("The server is shutting down and takes no new work; try again once it is back");
    expect((await expectEnvelope(await post(server.url, "/v1/videos/sync", {}), 503)).message).toContain("shutting down");
    const upgrade = await fetch(`${server.url}/v1/realtime/video`, { headers: upgradeHeaders });
    expect(upgrade.headers.get("retry-after")).toBe("5");
    expect((await expectEnvelope(upgrade, 503)).message).toBe("The server is shutting down and takes no new realtime sessions");
    const polled = await (await fetch(`${server.url}/v1/videos/${job.id}`)).json();
    expect(["queued", "in_progress"]).toContain(polled.status);

    expect(await exited).toBe(0);
    expect(server.output()).toContain("kino: drained: 1 realtime session(s) ended, 1 job(s) were running\n");
    // It finished before the exit: completed and downloadable after a restart.
    const again = await serve({}, server.dir);
    try {
      expect(await (await fetch(`${again.url}/v1/videos/${job.id}`)).json()).toMatchObject({ status: "completed", progress: 100 });
      expect((await fetch(`${again.url}/v1/videos/${job.id}/content`)).status).toBe(200);
    } finally {
      await again.kill();
    }
  });

  test("a job still running at server.drain_timeout_s fails with the shut-down message, kept after a restart", async () => {
    const server = await serve({ "server.drain_timeout_s": "0.5" });
    const job = await (await post(server.url, "/v1/videos", { num_inference_steps: 100, extra_params: { step_delay_ms: 100 } })).json();
    await waitUntilRunning(server.url, job.id);
    const started = Date.now();
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(0);
    // Half a second to wait, then the job stops at its next step (100 ms).
    expect(Date.now() - started).toBeLessThan(5000);
    expect(server.output()).toContain("1 still running at the deadline were failed");

    const again = await serve({}, server.dir);
    try {
      const failed = await (await fetch(`${again.url}/v1/videos/${job.id}`)).json();
      expect(failed).toMatchObject({ status: "failed", error: { code: "generation_failed", message: "The server shut down before this job finished" } });
    } finally {
      await again.kill();
    }
  });

  test("a second SIGTERM exits at once", async () => {
    const server = await serve({ "server.drain_timeout_s": "60" });
    const job = await (await post(server.url, "/v1/videos", { num_inference_steps: 100, extra_params: { step_delay_ms: 100 } })).json();
    await waitUntilRunning(server.url, job.id);
    server.proc.kill("SIGTERM");
    await Bun.sleep(300);
    expect(server.proc.exitCode).toBeNull();
    const started = Date.now();
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(143);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(server.output()).toContain("kino: SIGTERM again: exiting now, without waiting for the drain");
  });
});
