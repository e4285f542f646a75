// A worker process that dies fails only the job it was running; /health reports 503 until the
// engine has restarted it, and the next job succeeds.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createVideo, expectEnvelope, startTestServer, type TestServer, waitForJob } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const create = (body: object) => createVideo(server.url, "crash test", body);

async function waitForHealth(status: number, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await fetch(`${server.url}/health`)).status === status) return;
    await Bun.sleep(20);
  }
  throw new Error(`/health never returned ${status}`);
}

test("killing the worker mid-job fails that job only, /health goes 503 then 200, next job succeeds", async () => {
  const [pid] = server.ctx.engine.workerPids();
  const running = await create({ num_inference_steps: 20, extra_params: { step_delay_ms: 100 } });
  const queued = await create({});
  for (let i = 0; i < 100; i++) {
    if ((await (await fetch(`${server.url}/v1/videos/${running.id}`)).json()).status === "in_progress") break;
    await Bun.sleep(20);
  }
  process.kill(pid!, "SIGKILL");
  const failed = await waitForJob(server.url, running.id);
  expect(failed.status).toBe("failed");
  expect(failed.error.code).toBe("generation_failed");
  expect(failed.error.message).toContain("SIGKILL");

  // The job queued behind it was not lost: it runs on the restarted worker.
  expect((await waitForJob(server.url, queued.id)).status).toBe("completed");
  await waitForHealth(200);
  expect(server.ctx.engine.workerPids()[0]).not.toBe(pid);
  expect((await waitForJob(server.url, (await create({})).id)).status).toBe("completed");
});

test("/health is 503 with the envelope while the worker is down", async () => {
  const job = await create({ extra_params: { crash_at_step: 0 } });
  // Poll without pausing until the crash is seen: a restart spawns a new process and loads the model
  // (tens of milliseconds at least), while the crash itself may come late on a loaded machine.
  let saw503 = false;
  for (const deadline = Date.now() + 15000; Date.now() < deadline && !saw503;) {
    const res = await fetch(`${server.url}/health`);
    if (res.status === 503) {
      await expectEnvelope(res, 503);
      saw503 = true;
    }
  }
  expect(saw503).toBe(true);
  expect((await waitForJob(server.url, job.id)).status).toBe("failed");
  await waitForHealth(200);
});

test("a worker that dies while the model loads fails the start with the reason instead of hanging", async () => {
  const started = startTestServer({ "generator.model_path": `pipeline:${import.meta.dir}/../fixtures/crashing-pipeline.ts` });
  await expect(started).rejects.toThrow(/SIGKILL while loading the model/);
});
