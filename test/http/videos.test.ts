// The /v1/videos routes end to end against a live server with a real worker process.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { probeMp4, topLevelBoxes } from "../helpers/ffprobe.ts";
import { expectEnvelope, startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("create → poll → download", () => {
  test("a JSON job is queued, progresses, completes and serves a valid MP4", async () => {
    const res = await post("/v1/videos", { prompt: "a red circle moving right", size: "320x192", num_frames: 9, fps: 8, seed: 3 });
    expect(res.status).toBe(200);
    const queued = await res.json();
    expect(queued).toMatchObject({
      object: "video", status: "queued", progress: 0, model: server.ctx.admission.servedModelId, size: "320x192",
      prompt: "a red circle moving right", completed_at: null, error: null, file_name: null, file_path: null,
      media_type: "video/mp4", quality: "standard", remixed_from_video_id: null, expires_at: null,
    });
    expect(queued.id).toMatch(/^video_gen_[0-9a-f]{32}$/);
    expect(queued.seconds).toBe("1.13");

    const done = await waitForJob(server.url, queued.id);
    expect(done.status).toBe("completed");
    expect(done.progress).toBe(100);
    expect(done.file_name).toBe(`${queued.id}.mp4`);
    expect(done.file_path).toBe(join(server.outputDir, "videos", `${queued.id}.mp4`));
    expect(done.inference_time_s).toBeGreaterThan(0);
    expect(Object.keys(done.stage_durations)).toEqual(expect.arrayContaining(["denoise", "encode"]));
    expect(done.peak_memory_mb).toBeGreaterThan(0);

    const content = await fetch(`${server.url}/v1/videos/${queued.id}/content`);
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    const bytes = new Uint8Array(await content.arrayBuffer());
    expect(topLevelBoxes(bytes).slice(0, 3)).toEqual(["ftyp", "moov", "mdat"]);
    const probe = await probeMp4(bytes);
    expect(probe).toMatchObject({ codec: "h264", width: 320, height: 192, frames: 9, fps: 8 });
  });

  test("progress moves through intermediate values, not 0 → 100", async () => {
    const { id } = await (await post("/v1/videos", {
      prompt: "slow", size: "64x64", num_frames: 5, num_inference_steps: 8, extra_params: { step_delay_ms: 150 },
    })).json();
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const job = await (await fetch(`${server.url}/v1/videos/${id}`)).json();
      seen.add(job.progress);
      if (job.status === "completed") break;
      await Bun.sleep(40);
    }
    expect([...seen].filter((p) => p > 0 && p < 100).length).toBeGreaterThanOrEqual(3);
    expect(seen.has(100)).toBe(true);
  });

  test("Range requests return 206 with the exact bytes; bad ranges 416", async () => {
    const { id } = await (await post("/v1/videos", { prompt: "range", size: "64x64", num_frames: 5 })).json();
    await waitForJob(server.url, id);
    const full = new Uint8Array(await (await fetch(`${server.url}/v1/videos/${id}/content`)).arrayBuffer());
    const part = await fetch(`${server.url}/v1/videos/${id}/content`, { headers: { Range: "bytes=10-99" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 10-99/${full.length}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(full.subarray(10, 100));
    const tail = await fetch(`${server.url}/v1/videos/${id}/content`, { headers: { Range: "bytes=-16" } });
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(full.subarray(full.length - 16));
    const bad = await fetch(`${server.url}/v1/videos/${id}/content`, { headers: { Range: `bytes=${full.length}-` } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get("content-range")).toBe(`bytes */${full.length}`);
  });
});

describe("multipart bodies", () => {
  test("form fields are typed, nested JSON strings and bracket notation decode", async () => {
    const form = new FormData();
    form.append("prompt", "a blue square");
    form.append("seconds", "1");
    form.append("video_params", JSON.stringify({ width: 128, height: 96, fps: 8 }));
    form.append("seed", "7");
    form.append("extra_params[step_delay_ms]", "0");
    const res = await fetch(`${server.url}/v1/videos`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    const job = await res.json();
    expect(job.size).toBe("128x96");
    expect(job.seconds).toBe("1");
    const done = await waitForJob(server.url, job.id);
    const probe = await probeMp4(new Uint8Array(await (await fetch(`${server.url}/v1/videos/${job.id}/content`)).arrayBuffer()));
    // 1 s × 8 fps = 8 frames, aligned to the 4n+1 grid → 9
    expect(probe.frames).toBe(9);
    expect(done.status).toBe("completed");
  });

  test("a bad JSON string in a nested form field is a 400 naming it", async () => {
    const form = new FormData();
    form.append("prompt", "x");
    form.append("video_params", "{not json");
    const err = await expectEnvelope(await fetch(`${server.url}/v1/videos`, { method: "POST", body: form }), 400);
    expect(err.param).toBe("video_params");
  });

  test("a form with no seconds or seed does not invent them", async () => {
    const form = new FormData();
    form.append("prompt", "defaults");
    form.append("size", "64x64");
    const job = await (await fetch(`${server.url}/v1/videos`, { method: "POST", body: form })).json();
    const card = server.ctx.engine.card;
    expect(job.seconds).toBe(String(Math.round((card.defaults.num_frames / card.defaults.fps) * 100) / 100));
  });
});

describe("precedence", () => {
  test("size beats width/height beats video_params; top-level fps/num_frames beat video_params", async () => {
    const job = async (body: object) => (await post("/v1/videos", { prompt: "p", ...body })).json();
    expect((await job({ size: "64x48", width: 96, height: 96, video_params: { width: 128, height: 128 } })).size).toBe("64x48");
    expect((await job({ width: 96, height: 80, video_params: { width: 128, height: 128 } })).size).toBe("96x80");
    expect((await job({ video_params: { width: 128, height: 112 } })).size).toBe("128x112");
    const a = await job({ size: "64x64", num_frames: 5, fps: 10, video_params: { num_frames: 9, fps: 20 } });
    expect(a.seconds).toBe("0.5");
    const b = await job({ size: "64x64", video_params: { num_frames: 9, fps: 20 } });
    expect(b.seconds).toBe("0.45");
  });

  test("the longest length in seconds is made in full: the job and the stream agree", async () => {
    const job = await (await post("/v1/videos", { prompt: "long", size: "16x16", seconds: "30", num_inference_steps: 1 })).json();
    expect(job.seconds).toBe("30");
    const done = await waitForJob(server.url, job.id, {}, 60000);
    const probe = await probeMp4(new Uint8Array(await (await fetch(`${server.url}/v1/videos/${job.id}/content`)).arrayBuffer()));
    // 30 s × 16 fps = 480 frames, on the 4n+1 grid → 481, the model's maximum
    expect([done.status, probe.frames]).toEqual(["completed", 481]);
  });

  test("legacy alias /v1/videos/generations creates the same job object", async () => {
    const res = await post("/v1/videos/generations", { prompt: "alias", size: "64x64", num_frames: 1 });
    expect(res.status).toBe(200);
    expect((await res.json()).object).toBe("video");
  });
});

describe("sync", () => {
  test("returns MP4 bytes with the timing headers and removes its temporary file", async () => {
    const res = await post("/v1/videos/sync", { prompt: "sync", size: "96x64", num_frames: 5, fps: 10 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("video/mp4");
    expect(res.headers.get("x-request-id")).toMatch(/^video_sync-[0-9a-f]{32}$/);
    expect(res.headers.get("x-model")).toBe(server.ctx.admission.servedModelId);
    expect(res.headers.get("x-inference-time-s")).toMatch(/^\d+\.\d{3}$/);
    const stages = JSON.parse(res.headers.get("x-stage-durations")!);
    expect(stages.encode).toBeGreaterThanOrEqual(0);
    expect(Number(res.headers.get("x-peak-memory-mb"))).toBeGreaterThan(0);
    const probe = await probeMp4(new Uint8Array(await res.arrayBuffer()));
    expect(probe).toMatchObject({ width: 96, height: 64, frames: 5 });
    await Bun.sleep(50);
    const syncDir = join(server.outputDir, "sync");
    expect(existsSync(syncDir) ? readdirSync(syncDir) : []).toEqual([]);
  });

  test("a generation failure is a 500 with the envelope", async () => {
    const err = await expectEnvelope(await post("/v1/videos/sync", { prompt: "x", size: "64x64", num_frames: 1, extra_params: { fail_at_step: 0 } }), 500);
    expect(err.type).toBe("server_error");
    expect(err.message).toContain("test pipeline failed");
  });
});

describe("list, retrieve, delete", () => {
  test("cursor pagination in both orders", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await (await post("/v1/videos", { prompt: `list ${i}`, size: "64x64", num_frames: 1 })).json()).id);
    const page = await (await fetch(`${server.url}/v1/videos?limit=2`)).json();
    expect(page).toMatchObject({ object: "list", has_more: true, first_id: ids[2], last_id: ids[1] });
    expect(page.data.map((j: any) => j.id)).toEqual([ids[2], ids[1]]);
    const next = await (await fetch(`${server.url}/v1/videos?limit=1&after=${ids[1]}`)).json();
    expect(next.data[0].id).toBe(ids[0]);
    const asc = await (await fetch(`${server.url}/v1/videos?order=asc&limit=100`)).json();
    const ascIds = asc.data.map((j: any) => j.id);
    expect(ascIds.indexOf(ids[0])).toBeLessThan(ascIds.indexOf(ids[2]));
    expect(asc.has_more).toBe(false);
  });

  test("bad pagination is a 400 naming the parameter", async () => {
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?order=sideways`), 400)).param).toBe("order");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?limit=0`), 400)).param).toBe("limit");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?limit=101`), 400)).param).toBe("limit");
    // read as JSON reads numbers: never truncated or parsed as hex or an exponent
    for (const limit of ["2.5", "0x10", "abc"]) expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?limit=${limit}`), 400)).param).toBe("limit");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?limit=ten`), 400)).param).toBe("limit");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?after=video_gen_nope`), 400)).param).toBe("after");
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos?colour=red`), 400)).param).toBe("colour");
  });

  test("unknown ids are 404; content of unfinished is 404, of failed 422, variant ≠ video 400", async () => {
    await expectEnvelope(await fetch(`${server.url}/v1/videos/video_gen_missing`), 404);
    await expectEnvelope(await fetch(`${server.url}/v1/videos/video_gen_missing/content`), 404);
    await expectEnvelope(await fetch(`${server.url}/v1/videos/video_gen_missing`, { method: "DELETE" }), 404);

    const slow = await (await post("/v1/videos", { prompt: "slow", size: "64x64", num_frames: 1, num_inference_steps: 4, extra_params: { step_delay_ms: 200 } })).json();
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos/${slow.id}/content`), 404)).message).toContain("not ready");
    await waitForJob(server.url, slow.id);

    const failing = await (await post("/v1/videos", { prompt: "x", size: "64x64", num_frames: 1, extra_params: { fail_at_step: 0 } })).json();
    const failed = await waitForJob(server.url, failing.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toEqual({ code: "generation_failed", message: "test pipeline failed at step 0" });
    await expectEnvelope(await fetch(`${server.url}/v1/videos/${failing.id}/content`), 422);
    expect((await expectEnvelope(await fetch(`${server.url}/v1/videos/${slow.id}/content?variant=thumbnail`), 400)).param).toBe("variant");
    expect(existsSync(join(server.outputDir, "videos", `${failing.id}.mp4`))).toBe(false);
  });

  test("deleting a completed job removes it and its file", async () => {
    const { id } = await (await post("/v1/videos", { prompt: "del", size: "64x64", num_frames: 1 })).json();
    await waitForJob(server.url, id);
    const file = join(server.outputDir, "videos", `${id}.mp4`);
    expect(existsSync(file)).toBe(true);
    const res = await fetch(`${server.url}/v1/videos/${id}`, { method: "DELETE" });
    expect(await res.json()).toEqual({ id, object: "video.deleted", deleted: true });
    expect(existsSync(file)).toBe(false);
    await expectEnvelope(await fetch(`${server.url}/v1/videos/${id}`), 404);
  });

  test("deleting an in-progress job hides it at once and leaves no artifact", async () => {
    const { id } = await (await post("/v1/videos", { prompt: "del", size: "64x64", num_frames: 5, num_inference_steps: 10, extra_params: { step_delay_ms: 100 } })).json();
    for (let i = 0; i < 100; i++) {
      if ((await (await fetch(`${server.url}/v1/videos/${id}`)).json()).status === "in_progress") break;
      await Bun.sleep(20);
    }
    expect((await fetch(`${server.url}/v1/videos/${id}`, { method: "DELETE" })).status).toBe(200);
    await expectEnvelope(await fetch(`${server.url}/v1/videos/${id}`), 404);
    // The engine is free again right after: the next job completes.
    const next = await (await post("/v1/videos", { prompt: "after", size: "64x64", num_frames: 1 })).json();
    expect((await waitForJob(server.url, next.id)).status).toBe("completed");
    expect(existsSync(join(server.outputDir, "videos", `${id}.mp4`))).toBe(false);
  });
});
