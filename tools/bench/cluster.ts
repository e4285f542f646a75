// npm run bench:cluster — what the cluster's queue costs and what more nodes buy, side by side in one
// run, on a real redis-server and s3rver on this machine (the tests' infrastructure, test/cluster/infra.ts)
// and `kino serve` processes running the tests' pipeline with a fixed sleep per step (a fixed-cost
// job whose cost is not CPU, so nodes can scale on a small machine):
//  1. throughput: `--jobs` jobs (default 60) submitted at once, round-robin over the nodes, to one
//     plain node (the in-process engine), then to a cluster of 1, 2 and 3 nodes (one worker each);
//     jobs per minute from the first request to the last completion (read from /metrics' kino_jobs);
//  2. added latency: `--latency-jobs` jobs (default 100) one at a time, each 4 steps of
//     `--latency-step-ms` (default 25), on the plain node and on one cluster node; from the client
//     sending POST /v1/videos to the job seen in_progress and seen completed (GET polled every
//     millisecond), p50 and p99.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpus } from "node:os";
import { spawnServer, type ServerProcess } from "../../test/helpers/server-process.ts";
import { missingRedis, S3_CREDENTIALS, startInfra } from "../../test/cluster/infra.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const JOBS = arg("jobs", 60);
const LATENCY_JOBS = arg("latency-jobs", 100);
const STEP_MS = arg("step-ms", 100);
const LATENCY_STEP_MS = arg("latency-step-ms", 25);
const STEPS = arg("steps", 4);
if (missingRedis) {
  console.error(`bench:cluster needs ${missingRedis}`);
  process.exit(1);
}

const job = (stepMs: number, seed: number) => ({ prompt: "a red circle", size: "64x64", num_frames: 5, num_inference_steps: STEPS, seed, extra_params: { step_delay_ms: stepMs } });

async function post(url: string, seed: number, stepMs = STEP_MS): Promise<string> {
  const res = await fetch(`${url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(job(stepMs, seed)) });
  if (res.status !== 200) throw new Error(`POST /v1/videos answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Jobs by status as the node's /metrics reports them (in a cluster, the whole cluster's). */
async function jobsWithStatus(url: string, status: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const match = new RegExp(`^kino_jobs\\{status="${status}"\\} (\\d+)$`, "m").exec(text);
  if (!match) throw new Error(`/metrics of ${url} has no kino_jobs{status="${status}"}`);
  return Number(match[1]);
}

/** Submits JOBS at once, round-robin over the nodes; jobs per minute until the last one completed. */
async function throughput(nodes: ServerProcess[]): Promise<number> {
  const before = await jobsWithStatus(nodes[0]!.url, "completed");
  const failedBefore = await jobsWithStatus(nodes[0]!.url, "failed");
  const started = performance.now();
  await Promise.all(Array.from({ length: JOBS }, (_, i) => post(nodes[i % nodes.length]!.url, i)));
  for (;;) {
    const done = (await jobsWithStatus(nodes[0]!.url, "completed")) - before;
    if ((await jobsWithStatus(nodes[0]!.url, "failed")) > failedBefore) throw new Error("a benchmark job failed");
    if (done >= JOBS) break;
    await Bun.sleep(20);
  }
  return (JOBS / (performance.now() - started)) * 60000;
}

/** One job at a time: ms from sending POST to the answer, to in_progress seen, to completed seen. */
async function latency(url: string, count = LATENCY_JOBS): Promise<{ answered: number[]; started: number[]; completed: number[] }> {
  const out = { answered: [] as number[], started: [] as number[], completed: [] as number[] };
  for (let i = 0; i < count; i++) {
    const sent = performance.now();
    const id = await post(url, i, LATENCY_STEP_MS);
    out.answered.push(performance.now() - sent);
    let seenStarted = 0;
    for (;;) {
      const { status } = (await (await fetch(`${url}/v1/videos/${id}`)).json()) as { status: string };
      const now = performance.now();
      if (!seenStarted && status !== "queued") seenStarted = now;
      if (status === "failed") throw new Error(`benchmark job ${id} failed`);
      if (status === "completed") {
        out.started.push(seenStarted - sent);
        out.completed.push(now - sent);
        break;
      }
      await Bun.sleep(1);
    }
  }
  return out;
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const ms = (values: number[]) => `${quantile(values, 0.5).toFixed(0)} / ${quantile(values, 0.99).toFixed(0)}`;

const infra = await startInfra();
const plainDir = mkdtempSync(join(tmpdir(), "kino-bench-cluster-"));
const started: ServerProcess[] = [];
try {
  const wall = performance.now();
  const plain = await spawnServer(plainDir);
  started.push(plain);
  await latency(plain.url, 10); // warm-up: the worker's first jobs and the server's first requests
  const plainRate = await throughput([plain]);
  const plainLatency = await latency(plain.url);
  await plain.kill();

  const nodes: ServerProcess[] = [];
  const rates: number[] = [];
  let clusterLatency: Awaited<ReturnType<typeof latency>> | null = null;
  for (let n = 1; n <= 3; n++) {
    const node = await spawnServer(join(infra.dir, `bench-node-${n}`), { args: infra.nodeArgs({ "cluster.node_id": `bench-${n}` }), env: S3_CREDENTIALS });
    nodes.push(node);
    started.push(node);
    if (n === 1) {
      await latency(node.url, 10);
      clusterLatency = await latency(node.url);
    }
    rates.push(await throughput(nodes));
  }

  console.log(`\nbench:cluster — 64x64, 5 frames, ${STEPS} steps; ${JOBS} jobs of ${STEP_MS} ms sleep per step per throughput run, ${LATENCY_JOBS} one-at-a-time jobs of ${LATENCY_STEP_MS} ms per step per latency run`);
  console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), Bun ${Bun.version}; whole run ${((performance.now() - wall) / 1000).toFixed(0)} s\n`);
  console.log("| setup | jobs / min | vs 1 cluster node | POST answered (ms, p50 / p99) | created → started (ms, p50 / p99) | created → completed (ms, p50 / p99) |");
  console.log("|---|---|---|---|---|---|");
  const lat = (l: typeof plainLatency | null) => (l ? `${ms(l.answered)} | ${ms(l.started)} | ${ms(l.completed)}` : "— | — | —");
  console.log(`| one node, in-process engine | ${plainRate.toFixed(0)} | ${(plainRate / rates[0]!).toFixed(2)}× | ${lat(plainLatency)} |`);
  for (const [i, rate] of rates.entries()) {
    console.log(`| cluster, ${i + 1} node${i ? "s" : ""} | ${rate.toFixed(0)} | ${(rate / rates[0]!).toFixed(2)}× | ${lat(i === 0 ? clusterLatency : null)} |`);
  }
  const added = (a: number[], b: number[]) => `${(quantile(a, 0.5) - quantile(b, 0.5)).toFixed(1)} ms at p50, ${(quantile(a, 0.99) - quantile(b, 0.99)).toFixed(1)} ms at p99`;
  console.log(`\nthe queue's added latency, created → completed: ${added(clusterLatency!.completed, plainLatency.completed)}`);
} finally {
  await Promise.all(started.map((n) => n.kill()));
  await infra.stop();
  rmSync(plainDir, { recursive: true, force: true });
}
