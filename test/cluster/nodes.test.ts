// Nodes of one cluster: each publishes itself in the Redis registry (kino status reads it), realtime
// sessions go where there is a free slot — a full node refuses the upgrade with 503 + Retry-After, a
// start that lost the race for the last slot gets server_busy naming the nodes with room — and a node
// that gets SIGTERM drains: it stops taking jobs and sessions, and a job it cannot finish in
// server.drain_timeout_s goes back to the queue and completes on another node.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { ServerProcess } from "../helpers/server-process.ts";
import { expectEnvelope, waitForJob } from "../helpers/server.ts";
import { RealtimeClient, upgradeHeaders } from "../helpers/realtime-client.ts";
import { missingRedis, startInfra, type Infra } from "./infra.ts";

if (missingRedis) console.warn(`skipping the cluster node tests: ${missingRedis}`);

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

const post = (url: string, path: string, body: Record<string, unknown> = {}) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "a red circle", size: "64x64", num_frames: 5, ...body }) });
const create = async (url: string, body: Record<string, unknown> = {}) => {
  const res = await post(url, "/v1/videos", body);
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string };
};
const slow = (steps: number, stepMs = 100) => ({ num_inference_steps: steps, extra_params: { step_delay_ms: stepMs } });
const SLOW_SESSION = { type: "session.start", prompt: "a blue square", size: "64x48", num_frames: 201, fps: 8, extra_params: { chunk_delay_ms: 150 } };

function status(infra: Infra, ...flags: string[]) {
  const proc = Bun.spawnSync([process.execPath, MAIN, "status", "--redis", infra.redisUrl, ...flags]);
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}
const nodesOf = (infra: Infra) => JSON.parse(status(infra, "--json").stdout).nodes as any[];

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const runningOn = (nodes: ServerProcess[], id: string) => nodes.find((n) => n.output().includes(`job ${id} runs on`));

describe.skipIf(!!missingRedis)("the registry, kino status, placement of sessions", () => {
  let infra: Infra;
  let a: ServerProcess, b: ServerProcess;
  beforeAll(async () => {
    infra = await startInfra();
    [a, b] = await Promise.all([
      infra.node({ "cluster.node_id": "node-a", "server.realtime.max_sessions": "1" }),
      infra.node({ "cluster.node_id": "node-b", "server.realtime.max_sessions": "2" }),
    ]);
  });
  afterAll(() => infra?.stop());

  test("kino status lists every node (workers, free slots, state, last heartbeat) and the queue's depth", async () => {
    const nodes = nodesOf(infra);
    expect(nodes.map((n) => [n.node_id, n.url, n.workers, n.sessions, n.draining])).toEqual([
      ["node-a", a.url, [{ index: 0, up: true }], { total: 1, free: 1 }, false],
      ["node-b", b.url, [{ index: 0, up: true }], { total: 2, free: 2 }, false],
    ]);
    for (const node of nodes) expect(Date.now() - node.last_seen).toBeLessThan(2000);

    // Two nodes with one worker each: of three slow jobs two run, one waits.
    const jobs = [await create(a.url, slow(100)), await create(b.url, slow(100)), await create(a.url, slow(100))];
    const depth = await until("two jobs active", () => {
      const queue = JSON.parse(status(infra, "--json").stdout).queue;
      return queue.active === 2 ? queue : undefined;
    });
    expect(depth).toEqual({ name: "kino", waiting: 1, active: 2, delayed: 0 });
    const text = status(infra);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines[0]).toBe(`cluster queue 'kino' on ${infra.redisUrl}`);
    expect(lines[1]).toMatch(/^NODE +URL +WORKERS UP +SESSIONS FREE +STATE +LAST SEEN$/);
    expect(lines[2]).toMatch(new RegExp(`^node-a +${a.url} +1/1 +1/1 +serving +\\d+\\.\\d s ago$`));
    expect(lines[3]).toMatch(new RegExp(`^node-b +${b.url} +1/1 +2/2 +serving +\\d+\\.\\d s ago$`));
    expect(lines[4]).toBe("queue: 1 waiting, 2 active, 0 delayed");
    expect(lines[5]).toBe("jobs kept: 1 queued, 2 in progress, 0 completed, 0 failed");
    for (const { id } of jobs) await fetch(`${a.url}/v1/videos/${id}`, { method: "DELETE" });
  });

  test("a node killed with -9 drops out of the registry once its entry expires (cluster.stall_ms)", async () => {
    const doomed = await infra.node({ "cluster.node_id": "node-doomed" });
    expect(nodesOf(infra).map((n) => n.node_id)).toContain("node-doomed");
    await doomed.kill();
    const started = Date.now();
    await until("node-doomed to expire", () => !nodesOf(infra).some((n) => n.node_id === "node-doomed"), 6000);
    expect(Date.now() - started).toBeLessThan(4500);
  });

  test("a full node refuses the upgrade with 503 + Retry-After naming nodes with room; another node accepts", async () => {
    const first = await RealtimeClient.connect(a.url);
    first.send(SLOW_SESSION);
    await first.nextOfType("video.start");
    await until("node-a's slot to be published as taken", () => nodesOf(infra).find((n) => n.node_id === "node-a")?.sessions.free === 0);

    const refused = await fetch(`${a.url}/v1/realtime/video`, { headers: upgradeHeaders });
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await expectEnvelope(refused, 503)).message).toBe(`This node is at its limit of 1 realtime sessions; nodes with room: ${b.url} (node-b, 2 free)`);
    const elsewhere = await RealtimeClient.connect(b.url);
    elsewhere.send(SLOW_SESSION);
    expect((await elsewhere.nextOfType("video.start")).request_id).toMatch(/^video_stream-/);
    first.close();
    elsewhere.close();
    await Promise.all([first.closed, elsewhere.closed]);
  });

  test("a start that lost the race for the last slot gets server_busy naming the nodes with room", async () => {
    await until("every slot free again", () => nodesOf(infra).every((n) => n.sessions.free === n.sessions.total));
    // Both upgrades pass while node-a has its one slot free; the first start takes it.
    const winner = await RealtimeClient.connect(a.url);
    const loser = await RealtimeClient.connect(a.url);
    winner.send(SLOW_SESSION);
    await winner.nextOfType("video.start");
    loser.send(SLOW_SESSION);
    expect(await loser.nextOfType("error")).toEqual({
      type: "error",
      code: "server_busy",
      message: `This node is at its limit of 1 realtime sessions; nodes with room: ${b.url} (node-b, 2 free)`,
      nodes_with_room: [{ node_id: "node-b", url: b.url, free_sessions: 2 }],
    });
    await loser.closed;
    winner.close();
    await winner.closed;
  });
});

describe.skipIf(!!missingRedis)("SIGTERM on a cluster node", () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(() => infra?.stop());

  test("it stops taking work, and the job it could not finish in drain_timeout_s completes on another node", async () => {
    const x = await infra.node({ "cluster.node_id": "node-x", "server.drain_timeout_s": "3" });
    // Alone in the cluster, node-x takes the job; node-y joins once it runs.
    const { id } = await create(x.url, slow(80));
    await until("node-x to run the job", () => runningOn([x], id));
    const y = await infra.node({ "cluster.node_id": "node-y" });
    const session = await RealtimeClient.connect(x.url);
    session.send(SLOW_SESSION);
    const start = await session.nextOfType("video.start");
    const unstarted = await RealtimeClient.connect(x.url);

    const started = Date.now();
    x.proc.kill("SIGTERM");
    expect(await session.nextOfType("session.done")).toMatchObject({ request_id: start.request_id, stopped: true, reason: "draining" });
    // A connection that had not started yet is pointed to a node with room.
    expect(await unstarted.nextOfType("error")).toEqual({
      type: "error",
      code: "server_busy",
      message: `This node is shutting down and takes no new realtime sessions; nodes with room: ${y.url} (node-y, 4 free)`,
      nodes_with_room: [{ node_id: "node-y", url: y.url, free_sessions: 4 }],
    });
    await until("node-x to show as draining", () => nodesOf(infra).find((n) => n.node_id === "node-x")?.draining);
    // While it drains: no sessions or syncs of its own, but a job still goes onto the queue (for node-y).
    const upgrade = await fetch(`${x.url}/v1/realtime/video`, { headers: upgradeHeaders });
    expect(upgrade.headers.get("retry-after")).toBe("5");
    expect((await expectEnvelope(upgrade, 503)).message).toBe("This node is shutting down and takes no new realtime sessions; nodes with room: " + `${y.url} (node-y, 4 free)`);
    expect((await expectEnvelope(await post(x.url, "/v1/videos/sync"), 503)).message).toBe(
      "This node is shutting down and takes no new generations; send the request to another node of the cluster",
    );
    const queued = await create(x.url);
    expect((await waitForJob(y.url, queued.id)).status).toBe("completed");
    expect(runningOn([x, y], queued.id)).toBe(y);

    // 80 steps of 100 ms outlast the 3 s: the job goes back to the queue and node-x exits 0.
    expect(await x.proc.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(x.output()).toContain(`cluster: job ${id} handed back to the queue by node-x (draining)`);
    expect(x.output()).toContain("1 still running at the deadline were handed back to the queue (1)");
    // A clean exit leaves the registry at once (no wait for the entry to expire).
    expect(nodesOf(infra).map((n) => n.node_id)).toEqual(["node-y"]);

    const done = await waitForJob(y.url, id, {}, 20000);
    expect(done).toMatchObject({ status: "completed", progress: 100 });
    // Taken over as a queued job, not as a dead node's: no stalled-job rerun.
    expect(y.output()).toContain(`cluster: job ${id} runs on node-y\n`);
    expect((await fetch(`${y.url}/v1/videos/${id}/content`)).status).toBe(200);
  });
});
