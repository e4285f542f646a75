// A real Wan checkpoint (tiny, random weights, diffusers layout, made by tools/make-tiny-checkpoint.ts)
// served end to end: REST produces a valid MP4 and a realtime session streams from the causal DiT,
// with the model card taken from the checkpoint's configs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";
import { probeMp4 } from "../helpers/ffprobe.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

let dir: string;
let server: TestServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kino-ckpt-"));
  await makeTinyCheckpoint(dir, { seed: 7 });
  server = await startTestServer({ "generator.model_path": dir, "server.served_model_name": "tiny-wan" });
}, 120_000);
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the card comes from the checkpoint", async () => {
  const model = await (await fetch(`${server.url}/v1/models/tiny-wan`)).json();
  expect(model.root).toBe(dir);
  expect(model.card.supports_streaming).toBe(true);
  expect(model.card.frames_per_chunk).toBeGreaterThan(0);
});

test("POST /v1/videos on the Wan pipeline produces a valid MP4 with real progress and stage timings", async () => {
  const card = server.ctx.engine.card;
  const res = await fetch(`${server.url}/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "a red circle moving left", size: `${card.defaults.width}x${card.defaults.height}`, num_frames: 9, seed: 3 }),
  });
  expect(res.status).toBe(200);
  const job = await waitForJob(server.url, (await res.json()).id, {}, 120_000);
  expect(job.status).toBe("completed");
  expect(Object.keys(job.stage_durations)).toEqual(expect.arrayContaining(["text_encode", "denoise", "decode", "encode"]));
  const mp4 = new Uint8Array(await (await fetch(`${server.url}/v1/videos/${job.id}/content`)).arrayBuffer());
  expect(await probeMp4(mp4)).toMatchObject({ codec: "h264", width: card.defaults.width, height: card.defaults.height, frames: 9 });
});

test("a realtime session streams the causal model chunk by chunk and takes a prompt update", async () => {
  const client = await RealtimeClient.connect(server.url);
  // Paced, so the update arrives before the later chunks are generated.
  client.send({ type: "session.start", prompt: "a red circle", num_frames: 29, seed: 1, extra_params: { pace_to_media_time: true, pace_lead_chunks: 0 } });
  const start = await client.nextOfType("video.start");
  expect(start.config.model).toBe("tiny-wan");
  await client.nextOfType("video.chunk_metadata");
  client.send({ type: "session.interaction", interaction: { event_id: "blue", event: { prompt: "a blue square" }, transition_chunks: 0 } });
  await client.untilDone(120_000);
  const metas = client.jsonMessages().filter((m) => m.type === "video.chunk_metadata");
  expect(metas.at(-1).kind).toBe("trailer");
  expect(metas.reduce((n, m) => n + m.num_frames, 0)).toBe(29);
  expect(metas.some((m) => m.completed_event_ids.includes("blue"))).toBe(true);
});

test("flow_shift reaches the sampler: the card's shift is the default, another one changes the frames", async () => {
  const model = await (await fetch(`${server.url}/v1/models/tiny-wan`)).json();
  expect(model.card.flow_shift).toBe(5);
  const image = async (extra: object) => {
    const res = await fetch(`${server.url}/v1/images`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a red circle", size: "32x32", seed: 11, ...extra }),
    });
    expect(res.status).toBe(200);
    return (await res.json()).data[0].b64_json as string;
  };
  const [own, same, other] = [await image({}), await image({ flow_shift: 5 }), await image({ flow_shift: 1 })];
  expect(same).toBe(own);
  expect(other).not.toBe(own);
});

test("a realtime session takes flow_shift from sampling_params, as vLLM-Omni's streaming client sends it", async () => {
  const client = await RealtimeClient.connect(server.url);
  client.send({ type: "session.start", prompt: "a red circle", num_frames: 5, sampling_params: { flow_shift: 2 } });
  expect((await client.nextOfType("video.start")).config.flow_shift).toBe(2);
  await client.untilDone(120_000);
});
