// One loaded pipeline is never entered by two requests at once: image and video requests share the
// worker's queue, while HTTP stays responsive during generation.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

test("an image request waits for the running video; polling answers at once meanwhile", async () => {
  const video = await (await fetch(`${server.url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "slow", size: "64x64", num_frames: 1, num_inference_steps: 6, extra_params: { step_delay_ms: 100 } }),
  })).json();
  const image = fetch(`${server.url}/v1/images`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "fast", size: "64x64" }),
  }).then(async (res) => ({ status: res.status, videoAtReturn: (await (await fetch(`${server.url}/v1/videos/${video.id}`)).json()).status }));

  // While the worker is busy, HTTP answers quickly (generation is not on the event loop).
  const started = performance.now();
  const polled = await (await fetch(`${server.url}/v1/videos/${video.id}`)).json();
  expect(performance.now() - started).toBeLessThan(250);
  expect(["queued", "in_progress"]).toContain(polled.status);

  const result = await image;
  expect(result.status).toBe(200);
  expect(result.videoAtReturn).toBe("completed");
  expect((await waitForJob(server.url, video.id)).status).toBe("completed");
});
