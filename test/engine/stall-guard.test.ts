// A worker stuck in a task (a deadlocked kernel; here its process is stopped with SIGSTOP) is killed
// once its task has reported no progress for generator.engine.stall_timeout_s: that task fails naming
// the timeout, the worker restarts, and the queue runs on it. A slow task that keeps reporting steps,
// and a stream waiting for its viewer's playback, are not stalls.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { StallGuard } from "../../src/engine/stall-guard.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { createVideo, startTestServer, type TestServer, waitForJob } from "../helpers/server.ts";

describe("StallGuard", () => {
  test("fires once a clock runs out; progress restarts it, stop ends it, 0 never fires", async () => {
    const stalled: string[] = [];
    const guard = new StallGuard<string>(200, (w) => stalled.push(w));
    const off = new StallGuard<string>(0, (w) => stalled.push(`off ${w}`));
    guard.progressed("a");
    guard.progressed("b");
    guard.progressed("c");
    off.progressed("a");
    await Bun.sleep(50);
    guard.stop("c");
    // b reports progress every 50 ms for longer than its timeout; a, started with it, runs out
    for (let i = 0; i < 6; i++) {
      guard.progressed("b");
      await Bun.sleep(50);
    }
    expect(stalled).toEqual(["a"]);
    await Bun.sleep(300);
    expect(stalled).toEqual(["a", "b"]);
  });
});

describe("a server with generator.engine.stall_timeout_s 2", () => {
  let server: TestServer;
  const logs: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ "generator.engine.stall_timeout_s": "2" }, (line) => logs.push(line));
  });
  afterAll(() => server.close());

  const create = (body: object) => createVideo(server.url, "stall test", body);
  const health = async () => ({ status: (await fetch(`${server.url}/health`)).status, body: await (await fetch(`${server.url}/health`)).json() });

  test("a job whose worker stops fails after the timeout naming it; the worker restarts and the queue goes on", async () => {
    const { body } = await health();
    const pid: number = body.workers[0].pid;
    const running = await create({ num_inference_steps: 50, extra_params: { step_delay_ms: 100 } });
    const queued = await create({});
    for (let i = 0; i < 200; i++) {
      const job = await (await fetch(`${server.url}/v1/videos/${running.id}`)).json();
      if (job.progress > 0) break;
      await Bun.sleep(20);
    }
    process.kill(pid, "SIGSTOP");
    const stoppedAt = performance.now();
    const failed = await waitForJob(server.url, running.id);
    const waitedS = (performance.now() - stoppedAt) / 1000;
    expect(failed.status).toBe("failed");
    expect(failed.error).toEqual({
      code: "generation_failed",
      message: "No progress on this job for 2 s (generator.engine.stall_timeout_s): its worker is killed and restarted",
    });
    expect(waitedS).toBeGreaterThan(1.5);
    expect(waitedS).toBeLessThan(6);
    expect(logs.some((l) => l.includes(`task ${running.id} made no progress for 2 s (generator.engine.stall_timeout_s); killing the worker to restart it`))).toBe(true);

    // the job queued behind it runs on the restarted worker, and so does the next
    expect((await waitForJob(server.url, queued.id)).status).toBe("completed");
    const after = await health();
    expect(after.status).toBe(200);
    expect(after.body.workers[0].pid).not.toBe(pid);
    expect((await waitForJob(server.url, (await create({})).id)).status).toBe("completed");
  }, 30000);

  test("a job longer than the timeout that reports every step is not a stall", async () => {
    const pid = (await health()).body.workers[0].pid;
    const slow = await create({ num_inference_steps: 25, extra_params: { step_delay_ms: 100 } });
    expect((await waitForJob(server.url, slow.id)).status).toBe("completed");
    expect((await health()).body.workers[0].pid).toBe(pid);
  }, 30000);

  test("a paced stream waiting longer than the timeout for its viewer is not a stall", async () => {
    const pid = (await health()).body.workers[0].pid;
    const client = await RealtimeClient.connect(server.url);
    // at 1.6 fps a 4-frame chunk is 2.5 s of media: with no lead the second chunk waits ≈ 2.5 s for playback
    client.send({ type: "session.start", prompt: "a red circle", size: "32x32", fps: 1.6, num_frames: 5, extra_params: { pace_to_media_time: true, pace_lead_chunks: 0 } });
    await client.nextOfType("video.start");
    const startedAt = performance.now();
    const done = await client.nextOfType("session.done", 20000);
    expect((performance.now() - startedAt) / 1000).toBeGreaterThan(2.2);
    expect(done).toMatchObject({ chunks: 3, stopped: false });
    expect(client.jsonMessages().filter((m) => m.type === "error")).toEqual([]);
    expect((await health()).body.workers[0].pid).toBe(pid);
  }, 30000);
});
