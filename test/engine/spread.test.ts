// With N workers (num_gpus N), N jobs or N realtime sessions run at once, each on its own worker, and
// the (N+1)th waits in the FIFO queue until one finishes. Seen from outside: job statuses, /health's
// busy workers, and timing (slow steps of the tests' pipeline overlap instead of adding up).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

const STEP_MS = 250;
const STEPS = 6; // a job sleeps 1.5 s in all: long beside the server's own overheads

async function createJob(url: string, steps = STEPS, stepMs = STEP_MS): Promise<string> {
  const res = await fetch(`${url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "spread", size: "64x64", num_frames: 1, num_inference_steps: steps, extra_params: { step_delay_ms: stepMs } }),
  });
  expect(res.status).toBe(200);
  return (await res.json()).id;
}

/** The GPU slots of the workers /health shows busy, sorted. */
async function busyGpus(url: string): Promise<number[]> {
  const { workers } = await (await fetch(`${url}/health`)).json();
  return workers.filter((w: any) => w.state === "busy").map((w: any) => w.gpu).sort();
}

describe("three GPUs, three workers", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ "generator.engine.num_gpus": "3", "server.realtime.max_sessions": "4" });
  });
  afterAll(() => server.close());

  test("three jobs run at once on the three workers; a fourth waits queued until one finishes", async () => {
    let started = performance.now();
    await waitForJob(server.url, await createJob(server.url));
    const single = performance.now() - started;

    started = performance.now();
    const ids = await Promise.all([0, 1, 2, 3].map(() => createJob(server.url)));
    const completedAt = new Map<string, number>();
    let sawThreeRunningOneQueued = false;
    let startedBeforeAnyDone: string[] = [];
    let maxBusy: number[] = [];
    while (completedAt.size < ids.length && performance.now() - started < 20000) {
      const statuses = await Promise.all(ids.map(async (id) => (await (await fetch(`${server.url}/v1/videos/${id}`)).json()).status as string));
      statuses.forEach((s, i) => s === "completed" && !completedAt.has(ids[i]!) && completedAt.set(ids[i]!, performance.now() - started));
      const running = statuses.filter((s) => s === "in_progress").length;
      if (running === 3 && statuses.filter((s) => s === "queued").length === 1) sawThreeRunningOneQueued = true;
      if (completedAt.size === 0) startedBeforeAnyDone = ids.filter((_, i) => statuses[i] !== "queued");
      const busy = await busyGpus(server.url);
      if (busy.length > maxBusy.length) maxBusy = busy;
      await Bun.sleep(30);
    }
    expect(sawThreeRunningOneQueued).toBe(true);
    expect(maxBusy).toEqual([0, 1, 2]); // the three at once were on three workers, one per GPU
    // Nothing but three had started until a job finished: the fourth waited for a free worker.
    expect(startedBeforeAnyDone.length).toBe(3);
    const finish = [...completedAt.values()].sort((a, b) => a - b);
    expect(finish.length).toBe(4);
    // Three at once finish in about the time of one (one after the other: three times as long), the
    // fourth one job-time later.
    expect(finish[2]!).toBeLessThan(single * 1.7);
    expect(finish[3]!).toBeGreaterThan(finish[0]! + STEPS * STEP_MS * 0.9);
    expect(finish[3]!).toBeLessThan(single * 2.7);
  }, 60_000);

  test("three realtime sessions stream at once on the three workers; a fourth gets video.start and its first chunk once one ends", async () => {
    const START = { type: "session.start", prompt: "a red circle moving right", size: "64x48", num_frames: 13, fps: 8, extra_params: { chunk_delay_ms: 400 } };
    const clients: RealtimeClient[] = [];
    for (let i = 0; i < 4; i++) {
      const client = await RealtimeClient.connect(server.url);
      client.send(START);
      await client.nextOfType("video.start"); // in order: the first three take the workers, the fourth queues
      clients.push(client);
    }
    const t0 = performance.now();
    /** When this session's media chunk `index` arrives (ms after t0). */
    const chunkAt = async (client: RealtimeClient, index: number) => {
      for (;;) {
        const m = await client.nextOfType("video.chunk_metadata", 20000);
        if (m.kind === "media" && m.generation_chunk_index === index) return performance.now() - t0;
      }
    };
    let maxBusy: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const busy = await busyGpus(server.url);
        if (busy.length > maxBusy.length) maxBusy = busy;
        await Bun.sleep(30);
      }
    })();
    const firstThree = await Promise.all(clients.slice(0, 3).map(async (c) => ({ first: await chunkAt(c, 0), last: await chunkAt(c, 3) })));
    const fourthFirst = await chunkAt(clients[3]!, 0);
    await Promise.all(clients.map((c) => c.nextOfType("session.done", 20000)));
    watching = false;
    await watcher;
    for (const c of clients) c.close();

    // All three had their first chunk before any had its last: they streamed side by side, so on three
    // workers (each runs one task at a time), and /health saw the three GPUs busy at once.
    expect(Math.max(...firstThree.map((s) => s.first))).toBeLessThan(Math.min(...firstThree.map((s) => s.last)));
    expect(maxBusy).toEqual([0, 1, 2]);
    // The fourth's first chunk came only after a worker was done with one of the three.
    expect(fourthFirst).toBeGreaterThan(Math.min(...firstThree.map((s) => s.last)));
    for (const c of clients) expect(c.jsonMessages().at(-1)).toMatchObject({ type: "session.done", stopped: false });
  }, 60_000);
});

describe("two GPUs, two workers each", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ "generator.engine.num_gpus": "2", "generator.engine.num_workers": "4" });
  });
  afterAll(() => server.close());

  test("a job goes to a free worker on the idle GPU, not beside a running job on the busy one", async () => {
    // Workers 0 and 2 are on GPU 0, 1 and 3 on GPU 1. A and B take workers 0 and 1, C takes worker 2
    // (GPU 0 beside A); once A and B are done only C runs, on GPU 0, and D must go to GPU 1.
    const a = await createJob(server.url, 2, 100);
    const b = await createJob(server.url, 2, 100);
    const c = await createJob(server.url, 30, 100);
    await waitForJob(server.url, a);
    await waitForJob(server.url, b);
    expect(await busyGpus(server.url)).toEqual([0]);
    const d = await createJob(server.url, 30, 100);
    let busy = await busyGpus(server.url);
    for (const deadline = Date.now() + 5000; busy.length < 2 && Date.now() < deadline; await Bun.sleep(20)) busy = await busyGpus(server.url);
    expect(busy).toEqual([0, 1]);
    await Promise.all([c, d].map((id) => fetch(`${server.url}/v1/videos/${id}`, { method: "DELETE" })));
  }, 30_000);
});
