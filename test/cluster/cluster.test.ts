// Three kino nodes as one service: jobs in Redis through BullMQ, MP4s in an S3 bucket (s3rver). Any
// node answers for any job; a job whose node dies completes on another one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ServerProcess } from "../helpers/server-process.ts";
import { waitForJob } from "../helpers/server.ts";
import { encodeImage } from "../../src/media/images.ts";
import { decodeFrames, pixel } from "../helpers/decode.ts";
import { BUCKET, missingRedis, startInfra, type Infra } from "./infra.ts";

if (missingRedis) console.warn(`skipping the cluster tests: ${missingRedis}`);

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const create = async (url: string, body: Record<string, unknown> = {}) => {
  const res = await post(url, { prompt: "a red circle", size: "64x64", num_frames: 5, seed: 1, ...body });
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string; status: string };
};
const slow = (stepMs: number, steps = 20) => ({ num_inference_steps: steps, extra_params: { step_delay_ms: stepMs } });

describe.skipIf(!!missingRedis)("three nodes, one service", () => {
  let infra: Infra;
  let a: ServerProcess, b: ServerProcess, c: ServerProcess;
  beforeAll(async () => {
    infra = await startInfra();
    [a, b, c] = await Promise.all([infra.node(), infra.node(), infra.node()]);
  });
  afterAll(() => infra?.stop());

  test("create on A, poll on B, download on C: the same bytes from every node, Range too", async () => {
    const { id } = await create(a.url);
    const done = await waitForJob(b.url, id);
    // file_path says where the MP4 is kept: the bucket, not the disk of the node that made it.
    expect(done).toMatchObject({ status: "completed", progress: 100, file_name: `${id}.mp4`, file_path: `s3://${BUCKET}/videos/${id}.mp4` });
    const fromC = new Uint8Array(await (await fetch(`${c.url}/v1/videos/${id}/content`)).arrayBuffer());
    const fromA = new Uint8Array(await (await fetch(`${a.url}/v1/videos/${id}/content`)).arrayBuffer());
    expect(fromC.length).toBeGreaterThan(100);
    expect(fromC).toEqual(fromA);
    const part = await fetch(`${b.url}/v1/videos/${id}/content`, { headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 10-19/${fromC.length}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(fromC.slice(10, 20));
  });

  test("an image made on A is served by B and C (its url works on any node), Range too", async () => {
    const res = await fetch(`${a.url}/v1/images`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a red circle", size: "64x64", n: 2, response_format: "url" }),
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { url: string }[] };
    expect(data).toHaveLength(2);
    for (const { url } of data) {
      const fromB = await fetch(`${b.url}${url}`);
      expect(fromB.status).toBe(200);
      expect(fromB.headers.get("content-type")).toBe("image/png");
      const bytes = new Uint8Array(await fromB.arrayBuffer());
      expect([...bytes.slice(1, 4)].map((c) => String.fromCharCode(c)).join("")).toBe("PNG");
      expect(new Uint8Array(await (await fetch(`${c.url}${url}`)).arrayBuffer())).toEqual(bytes);
      const part = await fetch(`${c.url}${url}`, { headers: { range: "bytes=0-7" } });
      expect(part.status).toBe(206);
      expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(0, 8));
    }
    expect((await fetch(`${c.url}/v1/images/img_nothing-0/content`)).status).toBe(404);
  });

  test("a reference sent to A reaches whichever node runs the job, and is gone from the bucket afterwards", async () => {
    // A green picture: the first frame of the job shows it outside the object.
    const png = await encodeImage(new Uint8Array(64 * 64 * 3).map((_, i) => (i % 3 === 1 ? 220 : 20)), 64, 64, "png");
    const { id } = await create(a.url, { image_reference: [{ image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` }] });
    expect((await waitForJob(b.url, id)).status).toBe("completed");
    const mp4 = new Uint8Array(await (await fetch(`${c.url}/v1/videos/${id}/content`)).arrayBuffer());
    expect(pixel((await decodeFrames(mp4, 64, 64))[0]!, 64, 2, 2)[1]).toBeGreaterThan(160);
    const listing = await (await fetch(`${infra.s3Endpoint}/${BUCKET}?prefix=references/`)).text();
    expect(listing).toContain("<ListBucketResult");
    expect(listing).not.toContain("<Key>");
  });

  test("the list is the whole cluster's, in creation order, paged from any node", async () => {
    const ids: string[] = [];
    for (const node of [a, b, c, a, b]) ids.push((await create(node.url)).id);
    await Promise.all(ids.map((id) => waitForJob(c.url, id)));
    const all = await (await fetch(`${b.url}/v1/videos?order=asc&limit=100`)).json();
    const listed = all.data.map((j: { id: string }) => j.id);
    expect(listed.slice(-5)).toEqual(ids);
    const first = await (await fetch(`${c.url}/v1/videos?order=desc&limit=2`)).json();
    expect(first.data.map((j: { id: string }) => j.id)).toEqual([ids[4], ids[3]]);
    expect(first).toMatchObject({ first_id: ids[4], last_id: ids[3], has_more: true });
    const next = await (await fetch(`${a.url}/v1/videos?order=desc&limit=2&after=${first.last_id}`)).json();
    expect(next.data.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
  });

  test("a delete on C of a job running elsewhere stops it and leaves nothing", async () => {
    const { id } = await create(a.url, slow(200, 50));
    // Wait until some node runs it.
    for (let i = 0; i < 200; i++) {
      const job = await (await fetch(`${c.url}/v1/videos/${id}`)).json();
      if (job.status === "in_progress" && job.progress > 0) break;
      await Bun.sleep(50);
    }
    const res = await fetch(`${c.url}/v1/videos/${id}`, { method: "DELETE" });
    expect(await res.json()).toEqual({ id, object: "video.deleted", deleted: true });
    for (const node of [a, b, c]) expect((await fetch(`${node.url}/v1/videos/${id}`)).status).toBe(404);
    // The next jobs run at once: the aborted one no longer holds a worker (one per node, three nodes).
    const next = await Promise.all([create(a.url), create(b.url), create(c.url)]);
    const started = Date.now();
    for (const { id: other } of next) expect((await waitForJob(a.url, other)).status).toBe("completed");
    expect(Date.now() - started).toBeLessThan(8000);
    expect((await fetch(`${a.url}/v1/videos/${id}/content`)).status).toBe(404);
  });

  test("kill -9 of the node running a job: it completes on another node", async () => {
    const { id } = await create(b.url, slow(100, 30));
    let running: ServerProcess | undefined;
    for (let i = 0; i < 200 && !running; i++) {
      const job = await (await fetch(`${a.url}/v1/videos/${id}`)).json();
      if (job.status === "in_progress" && job.progress > 10) running = [a, b, c].find((n) => n.output().includes(id));
      await Bun.sleep(50);
    }
    expect(running).toBeDefined();
    await running!.kill();
    const alive = [a, b, c].filter((n) => n !== running);
    const done = await waitForJob(alive[0]!.url, id, {}, 30000);
    expect(done.status).toBe("completed");
    const bytes = new Uint8Array(await (await fetch(`${alive[1]!.url}/v1/videos/${id}/content`)).arrayBuffer());
    expect(bytes.length).toBeGreaterThan(100);
  });
});

describe.skipIf(!!missingRedis)("many jobs, restarts", () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(() => infra?.stop());

  test("100 jobs over 3 nodes each run and complete exactly once; after every node restarts all are listed and downloadable", async () => {
    const nodes = await Promise.all([infra.node(), infra.node(), infra.node()]);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await create(nodes[i % 3]!.url, { seed: i })).id);
    for (const id of ids) expect((await waitForJob(nodes[0]!.url, id, {}, 60000)).status).toBe("completed");
    const runs = (id: string) => nodes.reduce((n, node) => n + node.output().split(`job ${id} runs on`).length - 1, 0);
    expect(ids.filter((id) => runs(id) !== 1)).toEqual([]);
    // Every node took a share.
    for (const node of nodes) expect(node.output()).toContain("runs on");

    await Promise.all(nodes.map((n) => n.kill()));
    const restarted = await Promise.all([infra.node(), infra.node(), infra.node()]);
    const listed = await (await fetch(`${restarted[1]!.url}/v1/videos?order=asc&limit=100`)).json();
    expect(listed.data.map((j: { id: string }) => j.id)).toEqual(ids);
    expect(listed.data.every((j: { status: string }) => j.status === "completed")).toBe(true);
    for (const [i, id] of ids.entries()) {
      const res = await fetch(`${restarted[i % 3]!.url}/v1/videos/${id}/content`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
  }, 180000);
});

describe.skipIf(!!missingRedis)("node deaths beyond cluster.max_attempts", () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(() => infra?.stop());

  test("a job whose only run died fails with the reason, on every node", async () => {
    const nodes = await Promise.all([infra.node({ "cluster.max_attempts": "1" }), infra.node({ "cluster.max_attempts": "1" })]);
    const { id } = await create(nodes[0]!.url, slow(100, 100));
    let running: ServerProcess | undefined;
    for (let i = 0; i < 200 && !running; i++) {
      running = nodes.find((n) => n.output().includes(`job ${id} runs on`));
      await Bun.sleep(50);
    }
    await running!.kill();
    const alive = nodes.find((n) => n !== running)!;
    const failed = await waitForJob(alive.url, id, {}, 30000);
    expect(failed.status).toBe("failed");
    expect(failed.error).toEqual({ code: "generation_failed", message: "Every node that ran this job stopped responding (1 run, cluster.max_attempts)" });
    expect(alive.output()).not.toContain(`job ${id} runs on`);
  });
});

describe.skipIf(!!missingRedis)("presigned downloads", () => {
  let infra: Infra;
  beforeAll(async () => {
    infra = await startInfra();
  });
  afterAll(() => infra?.stop());

  test("with cluster.storage.presign, /content redirects to a URL the bucket serves itself", async () => {
    const node = await infra.node({ "cluster.storage.presign": "true" });
    const { id } = await create(node.url);
    expect((await waitForJob(node.url, id)).status).toBe("completed");
    const res = await fetch(`${node.url}/v1/videos/${id}/content`, { redirect: "manual" });
    expect(res.status).toBe(307);
    const location = res.headers.get("location")!;
    expect(location).toStartWith(`${infra.s3Endpoint}/${BUCKET}/videos/${id}.mp4?`);
    const bytes = new Uint8Array(await (await fetch(location)).arrayBuffer());
    expect(bytes.length).toBeGreaterThan(100);
  });
});
