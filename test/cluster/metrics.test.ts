// GET /metrics on cluster nodes (real redis-server and s3rver): the job counts and the queue are the
// cluster's (the same on every node, from Redis and BullMQ), the runs and latencies each node's own,
// a node's dead worker reads 0 there, and a scrape still answers when Redis is gone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ServerProcess } from "../helpers/server-process.ts";
import { waitForJob } from "../helpers/server.ts";
import { sampleValue, scrape, type MetricFamily } from "../helpers/prometheus.ts";
import { missingRedis, startInfra, type Infra } from "./infra.ts";

if (missingRedis) console.warn(`skipping the cluster metrics tests: ${missingRedis}`);

const create = async (url: string, body: Record<string, unknown> = {}) => {
  const res = await fetch(`${url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "a red circle", size: "64x64", num_frames: 5, ...body }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: string }).id;
};
const value = (m: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels);
const sum = (ms: Map<string, MetricFamily>[], name: string, labels: Record<string, string> = {}) => ms.reduce((n, m) => n + value(m, name, labels)!, 0);

async function scrapeUntil(url: string, check: (m: Map<string, MetricFamily>) => boolean, what: string, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = await scrape(url);
    if (check(m)) return m;
  }
  throw new Error(`/metrics of ${url} never showed ${what}`);
}

/** The node's worker processes: the children of its server process. */
function workerPids(node: ServerProcess): number[] {
  const out = Bun.spawnSync(["pgrep", "-P", String(node.proc.pid)]).stdout.toString();
  return out.split("\n").filter(Boolean).map(Number);
}

describe.skipIf(!!missingRedis)("GET /metrics on cluster nodes", () => {
  let infra: Infra;
  let a: ServerProcess, b: ServerProcess;
  beforeAll(async () => {
    infra = await startInfra();
    [a, b] = await Promise.all([infra.node({ "cluster.node_id": "node-a" }), infra.node({ "cluster.node_id": "node-b" })]);
  });
  afterAll(() => infra?.stop());

  test("each node names itself; the cluster's job counts are the same on every node; runs and latencies count where the job ran", async () => {
    const before = await Promise.all([scrape(a.url), scrape(b.url)]);
    expect(value(before[0]!, "kino_node_info", { node: "node-a", mode: "cluster" })).toBe(1);
    expect(value(before[1]!, "kino_node_info", { node: "node-b", mode: "cluster" })).toBe(1);
    expect(value(before[0]!, "kino_redis_up")).toBe(1);
    const ids = [await create(a.url), await create(b.url), await create(a.url)];
    for (const id of ids) expect((await waitForJob(b.url, id)).status).toBe("completed");
    const after = await Promise.all([scrape(a.url), scrape(b.url)]);
    for (const m of after) expect(value(m, "kino_jobs", { status: "completed" })! - value(before[0]!, "kino_jobs", { status: "completed" })!).toBe(3);
    // Each job ran once, on one of the two nodes: the nodes' own counters add up to the three jobs.
    expect(sum(after, "kino_jobs_run_total", { status: "completed" }) - sum(before, "kino_jobs_run_total", { status: "completed" })).toBe(3);
    expect(sum(after, "kino_job_latency_seconds_count") - sum(before, "kino_job_latency_seconds_count")).toBe(3);
    expect(sum(after, "kino_job_wait_seconds_count") - sum(before, "kino_job_wait_seconds_count")).toBe(3);
    let bytes = 0;
    for (const id of ids) bytes += (await (await fetch(`${a.url}/v1/videos/${id}/content`)).arrayBuffer()).byteLength;
    expect(sum(after, "kino_artifact_bytes_written_total", { kind: "video" }) - sum(before, "kino_artifact_bytes_written_total", { kind: "video" })).toBe(bytes);
    // Jobs stored before the counts existed (a store from an older kino) are counted once, from the jobs.
    expect(Bun.spawnSync(["redis-cli", "-u", infra.redisUrl, "del", "kino-jobs:kino:counts"]).stdout.toString().trim()).toBe("1");
    const recounted = await scrape(b.url);
    for (const status of ["queued", "in_progress", "completed", "failed"]) {
      expect(value(recounted, "kino_jobs", { status })).toBe(value(after[1]!, "kino_jobs", { status })!);
    }
  });

  test("queue depth is BullMQ's, seen alike from both nodes: two active (one per node), the rest waiting", async () => {
    const slow = { num_inference_steps: 10, extra_params: { step_delay_ms: 60 } };
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await create(i % 2 ? b.url : a.url, slow));
    const busy = await scrapeUntil(a.url, (m) => value(m, "kino_queue_depth", { state: "active" }) === 2 && value(m, "kino_queue_depth", { state: "waiting" }) === 2, "2 active, 2 waiting");
    expect(value(busy, "kino_queue_depth", { state: "delayed" })).toBe(0);
    const fromB = await scrape(b.url);
    expect(value(fromB, "kino_queue_depth", { state: "active" })! + value(fromB, "kino_queue_depth", { state: "waiting" })!).toBeGreaterThanOrEqual(3);
    for (const id of ids) expect((await waitForJob(a.url, id)).status).toBe("completed");
    const idle = await scrape(b.url);
    expect(value(idle, "kino_queue_depth", { state: "active" })).toBe(0);
    expect(value(idle, "kino_queue_depth", { state: "waiting" })).toBe(0);
  });

  test("a killed worker reads 0 on its own node only, then 1 once restarted", async () => {
    const [pid] = workerPids(b);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, "SIGKILL");
    await scrapeUntil(b.url, (m) => value(m, "kino_worker_up", { worker: "0" }) === 0, "worker 0 down");
    expect(value(await scrape(a.url), "kino_worker_up", { worker: "0" })).toBe(1);
    await scrapeUntil(b.url, (m) => value(m, "kino_worker_up", { worker: "0" }) === 1, "worker 0 up again");
    expect(workerPids(b)).not.toContain(pid);
  });

  test("with Redis gone a scrape still answers: kino_redis_up 0, the cluster's figures left out, the node's own kept", async () => {
    Bun.spawnSync(["redis-cli", "-u", infra.redisUrl, "shutdown", "nosave"]);
    const started = Date.now();
    const m = await scrapeUntil(a.url, (m) => value(m, "kino_redis_up") === 0, "redis down", 10000);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(m.get("kino_jobs")!.samples).toEqual([]);
    expect(m.get("kino_queue_depth")!.samples).toEqual([]);
    expect(value(m, "kino_worker_up", { worker: "0" })).toBe(1);
    expect(value(m, "kino_jobs_run_total", { status: "completed" })).toBeGreaterThan(0);
    expect(a.proc.exitCode).toBeNull();
  });
});
