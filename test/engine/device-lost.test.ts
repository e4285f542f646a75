// A task that loses the device's context (a kernel fault: every later CUDA call of that process
// would fail) fails as any failed task does — a REST job with generation_failed, a realtime session
// with its error after the chunks already sent — and then its worker exits with EXIT_DEVICE_LOST and
// is restarted, so the jobs queued behind it and every later one run on a fresh worker. The fault is
// the CUDA backend's own DeviceLostError, raised over a stand-in library whose GPU faults on demand
// (test/fixtures/faulting-cuda.ts, through the test pipeline's device_lost_at_* hooks).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { createVideo, startTestServer, type TestServer, waitForJob } from "../helpers/server.ts";

const LOST = "The CUDA device context is lost (cudaErrorIllegalAddress, error 700): cuda fill: kc_fill: an illegal memory access was encountered (error 700)";

describe("a server whose worker loses its device", () => {
  let server: TestServer;
  const logs: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({}, (line) => logs.push(line));
  });
  afterAll(() => server.close());

  const create = (body: object) => createVideo(server.url, "device lost", body);
  const workerPid = () => server.ctx.engine.workerPids()[0];
  async function waitForHealthy(): Promise<void> {
    for (const deadline = Date.now() + 15000; Date.now() < deadline; await Bun.sleep(20)) {
      if ((await fetch(`${server.url}/health`)).status === 200) return;
    }
    throw new Error("/health never returned 200");
  }

  test("the job fails with the lost context's message; the worker restarts and the queued job runs on it", async () => {
    const pid = workerPid();
    const lost = await create({ num_inference_steps: 4, extra_params: { step_delay_ms: 50, device_lost_at_step: 1 } });
    const queued = await create({});
    const failed = await waitForJob(server.url, lost.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toEqual({ code: "generation_failed", message: LOST });
    expect((await waitForJob(server.url, queued.id)).status).toBe("completed");
    await waitForHealthy();
    expect(workerPid()).not.toBe(pid);
    expect(logs.filter((l) => l.startsWith("worker 0 (") && l.endsWith(`pid ${pid}) lost its device: ${LOST}; it exits and is restarted`))).toHaveLength(1);
    expect(logs).toContain(`worker process ${pid} exited with code 75 (its device context is lost); restarting it`);
    expect((await waitForJob(server.url, (await create({})).id)).status).toBe("completed");
  }, 30000);

  test("a realtime session gets the chunks made before the fault, then its error; the next session runs", async () => {
    const pid = workerPid();
    const client = await RealtimeClient.connect(server.url);
    client.send({ type: "session.start", prompt: "a red circle", size: "32x32", fps: 16, num_frames: 13, extra_params: { device_lost_at_chunk: 2 } });
    await client.nextOfType("video.start");
    const error = await client.nextOfType("error");
    expect(error).toMatchObject({ code: "generation_failed", message: `Generation failed: ${LOST}` });
    await client.closed;
    const media = client.jsonMessages().filter((m) => m.type === "video.chunk_metadata");
    expect(media.map((m) => [m.kind, m.generation_chunk_index])).toEqual([["media", 0], ["media", 1]]);

    await waitForHealthy();
    expect(workerPid()).not.toBe(pid);
    const next = await RealtimeClient.connect(server.url);
    next.send({ type: "session.start", prompt: "a red circle", size: "32x32", fps: 16, num_frames: 13 });
    expect(await next.nextOfType("session.done")).toMatchObject({ chunks: 5, stopped: false });
  }, 30000);

  test("a worker that does not manage to exit after losing its device is killed and restarted", async () => {
    const pid = workerPid();
    const lost = await create({ extra_params: { device_lost_at_step: 0, hang_on_exit: true } });
    const queued = await create({});
    expect((await waitForJob(server.url, lost.id)).error).toEqual({ code: "generation_failed", message: LOST });
    expect((await waitForJob(server.url, queued.id)).status).toBe("completed");
    expect(workerPid()).not.toBe(pid);
    expect(logs).toContain(`worker process ${pid} was killed by SIGKILL; restarting it`);
  }, 30000);
});
