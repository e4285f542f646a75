// GET /metrics on one node, read strictly as a Prometheus scraper would: the figures move as a user's
// actions move them — a job completes, a session opens, a worker dies — and the page needs no API key.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { sampleValue, scrape, type MetricFamily } from "../helpers/prometheus.ts";

const KEY = "sk-metrics";
const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ "server.api_key": KEY });
});
afterAll(() => server.close());

const create = async (body: Record<string, unknown> = {}) => {
  const res = await fetch(`${server.url}/v1/videos`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ prompt: "a red circle", size: "64x64", num_frames: 5, ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string };
};
const value = (m: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels);

/** Scrapes until `check` holds (tight: some states last only milliseconds), or fails with the last value. */
async function scrapeUntil(check: (m: Map<string, MetricFamily>) => boolean, what: string, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last: Map<string, MetricFamily> | undefined;
  while (Date.now() < deadline) {
    last = await scrape(server.url);
    if (check(last)) return last;
  }
  throw new Error(`/metrics never showed ${what}`);
}

describe("GET /metrics on a single node", () => {
  test("is open without the API key (like /health), while /v1 still needs it", async () => {
    const metrics = await scrape(server.url);
    expect(value(metrics, "kino_node_info", { node: "single", mode: "single" })).toBe(1);
    expect(metrics.get("kino_redis_up")!.samples).toEqual([]);
    expect((await fetch(`${server.url}/v1/videos`)).status).toBe(401);
  });

  test("a completed job: completed +1 in the store and in this node's runs, each latency histogram +1, its MP4's bytes counted", async () => {
    const before = await scrape(server.url);
    const { id } = await create({ num_inference_steps: 4, extra_params: { step_delay_ms: 30 } });
    expect((await waitForJob(server.url, id, auth)).status).toBe("completed");
    const mp4 = await (await fetch(`${server.url}/v1/videos/${id}/content`, { headers: auth })).arrayBuffer();
    const after = await scrape(server.url);
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels)! - (value(before, name, labels) ?? 0);
    expect(delta("kino_jobs", { status: "completed" })).toBe(1);
    expect(delta("kino_jobs_run_total", { status: "completed" })).toBe(1);
    for (const histogram of ["kino_job_wait_seconds", "kino_job_latency_seconds", "kino_job_run_seconds"]) {
      expect(delta(`${histogram}_count`)).toBe(1);
    }
    // Four 30 ms steps: the run took at least 0.12 s, and the latency includes the run.
    expect(delta("kino_job_run_seconds_sum")).toBeGreaterThanOrEqual(0.12);
    expect(delta("kino_job_latency_seconds_sum")).toBeGreaterThanOrEqual(delta("kino_job_run_seconds_sum"));
    expect(delta("kino_job_run_seconds_bucket", { le: "0.1" })).toBe(0);
    expect(delta("kino_job_run_seconds_bucket", { le: "+Inf" })).toBe(1);
    expect(delta("kino_artifact_bytes_written_total", { kind: "video" })).toBe(mp4.byteLength);
    // The requests that got here, by their route pattern and status.
    expect(delta("kino_http_requests_total", { method: "POST", route: "/v1/videos", status: "200" })).toBe(1);
    expect(delta("kino_http_requests_total", { method: "GET", route: "/v1/videos/:id/content", status: "200" })).toBe(1);
  });

  test("failed and deleted jobs are counted apart; unknown routes and refused keys are counted without their path", async () => {
    const before = await scrape(server.url);
    const failed = await create({ num_inference_steps: 2, extra_params: { fail_at_step: 0 } });
    expect((await waitForJob(server.url, failed.id, auth)).status).toBe("failed");
    const doomed = await create({ num_inference_steps: 100, extra_params: { step_delay_ms: 50 } });
    await scrapeUntil((m) => value(m, "kino_queue_depth", { state: "active" }) === 1, "the long job active");
    await fetch(`${server.url}/v1/videos/${doomed.id}`, { method: "DELETE", headers: auth });
    await scrapeUntil((m) => value(m, "kino_jobs_run_total", { status: "cancelled" })! > value(before, "kino_jobs_run_total", { status: "cancelled" })!, "the cancelled run");
    expect((await fetch(`${server.url}/no/such/route`)).status).toBe(404);
    expect((await fetch(`${server.url}/v1/models`)).status).toBe(401);
    const after = await scrape(server.url);
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels)! - (value(before, name, labels) ?? 0);
    expect(delta("kino_jobs", { status: "failed" })).toBe(1);
    expect(delta("kino_jobs_run_total", { status: "failed" })).toBe(1);
    expect(delta("kino_jobs_run_total", { status: "cancelled" })).toBe(1);
    expect(delta("kino_jobs_run_total", { status: "completed" })).toBe(0);
    expect(delta("kino_http_requests_total", { method: "GET", route: "unrouted", status: "404" })).toBe(1);
    expect(delta("kino_http_requests_total", { method: "GET", route: "unrouted", status: "401" })).toBe(1);
    expect(delta("kino_http_requests_total", { method: "DELETE", route: "/v1/videos/:id", status: "200" })).toBe(1);
    const routes = after.get("kino_http_requests_total")!.samples.map((s) => s.labels.route!);
    expect(routes.filter((r) => r.includes("video_gen") || r.includes("/no/such"))).toEqual([]);
  });

  test("queue depth: one job active, the ones behind it waiting, then none", async () => {
    const slow = { num_inference_steps: 10, extra_params: { step_delay_ms: 40 } };
    const ids = [(await create(slow)).id, (await create(slow)).id, (await create(slow)).id];
    const busy = await scrapeUntil((m) => value(m, "kino_queue_depth", { state: "active" }) === 1 && value(m, "kino_queue_depth", { state: "waiting" }) === 2, "1 active, 2 waiting");
    expect(value(busy, "kino_jobs", { status: "queued" })! + value(busy, "kino_jobs", { status: "in_progress" })!).toBe(3);
    expect(value(busy, "kino_engine_tasks", { state: "running" })).toBe(1);
    for (const id of ids) await waitForJob(server.url, id, auth);
    const idle = await scrape(server.url);
    expect(value(idle, "kino_queue_depth", { state: "active" })).toBe(0);
    expect(value(idle, "kino_queue_depth", { state: "waiting" })).toBe(0);
    expect(value(idle, "kino_jobs", { status: "in_progress" })).toBe(0);
  });

  test("a realtime session: active sessions 1 while it streams, 0 after; its chunks in the chunk histograms", async () => {
    const before = await scrape(server.url);
    expect(value(before, "kino_realtime_sessions_active")).toBe(0);
    const client = await RealtimeClient.connect(server.url, {}, `?api_key=${KEY}`);
    client.send({ type: "session.start", prompt: "a blue square", size: "64x64", num_frames: 13, extra_params: { chunk_delay_ms: 100 } });
    await client.nextOfType("video.start");
    expect(value(await scrape(server.url), "kino_realtime_sessions_active")).toBe(1);
    const received = await client.untilDone();
    const chunks = received.filter((r) => r.kind === "json" && r.message.type === "video.chunk_metadata" && r.message.kind === "media").length;
    expect(chunks).toBeGreaterThan(1);
    const after = await scrapeUntil((m) => value(m, "kino_realtime_sessions_active") === 0, "no active session");
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels)! - (value(before, name, labels) ?? 0);
    expect(delta("kino_realtime_first_chunk_seconds_count")).toBe(1);
    expect(delta("kino_http_requests_total", { method: "GET", route: "/v1/realtime/video", status: "101" })).toBe(1);
    expect(delta("kino_realtime_chunk_interval_seconds_count")).toBe(chunks - 1);
    // Every chunk after the first waited out the pipeline's 100 ms pause.
    expect(delta("kino_realtime_chunk_interval_seconds_bucket", { le: "0.05" })).toBe(0);
    client.close();
  });

  test("a killed worker reads 0 until the engine has restarted it, then 1", async () => {
    expect(value(await scrape(server.url), "kino_worker_up", { worker: "0" })).toBe(1);
    const [pid] = server.ctx.engine.workerPids();
    process.kill(pid!, "SIGKILL");
    await scrapeUntil((m) => value(m, "kino_worker_up", { worker: "0" }) === 0, "worker 0 down");
    await scrapeUntil((m) => value(m, "kino_worker_up", { worker: "0" }) === 1, "worker 0 up again");
    expect(server.ctx.engine.workerPids()[0]).not.toBe(pid);
  });
});
