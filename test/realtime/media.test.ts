// What the viewer sees: a prompt update visibly changes the stream at the chunk the metadata names,
// a transition passes through intermediate states, and pacing keeps generation near media time.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeFrames, pixel } from "../helpers/decode.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const binaries = (client: RealtimeClient) =>
  new Uint8Array(Buffer.concat(client.received.filter((r) => r.kind === "binary").map((r) => (r as { bytes: Uint8Array }).bytes)));

test("a background change lands in the chunk that reports the event, through interpolated colours", async () => {
  const client = await RealtimeClient.connect(server.url);
  client.send({ type: "session.start", prompt: "a white circle still on a red background", size: "64x64", fps: 8, num_frames: 33, extra_params: { chunk_delay_ms: 120 } });
  await client.nextOfType("video.start");
  await client.nextOfType("video.chunk_metadata");
  client.send({ type: "session.interaction", interaction: { event_id: "to-blue", event: { prompt: "a white circle still on a blue background" }, transition_chunks: 2 } });
  await client.untilDone();
  const metas = client.jsonMessages().filter((m) => m.type === "video.chunk_metadata" && m.kind === "media");
  const frames = await decodeFrames(binaries(client), 64, 64);
  expect(frames.length).toBe(33);
  // The top-left corner is background. Frame index → chunk via frames_per_chunk.
  const corner = (chunk: number) => pixel(frames[chunk * 4 + 1]!, 64, 1, 1);
  const first = metas.find((m) => m.started_event_ids.includes("to-blue")).generation_chunk_index;
  const [r0, , b0] = corner(first - 1);
  expect(r0).toBeGreaterThan(150);
  expect(b0).toBeLessThan(80);
  const [rMid, , bMid] = corner(first); // progress 1/2: purple-ish
  expect(rMid).toBeGreaterThan(80);
  expect(rMid).toBeLessThan(160);
  expect(bMid).toBeGreaterThan(80);
  expect(bMid).toBeLessThan(160);
  const [r2, , b2] = corner(first + 1);
  expect(b2).toBeGreaterThan(150);
  expect(r2).toBeLessThan(80);
});

async function chunkArrivals(pace: boolean): Promise<number[]> {
  const client = await RealtimeClient.connect(server.url);
  client.send({ type: "session.start", prompt: "p", size: "32x32", fps: 16, num_frames: 21, extra_params: pace ? { pace_to_media_time: true, pace_lead_chunks: 1 } : {} });
  const start = await client.nextOfType("video.start");
  expect(start.config.pace_to_media_time).toBe(pace);
  const arrivals: number[] = [];
  for (;;) {
    const m = await client.nextOfType("video.chunk_metadata");
    if (m.kind === "trailer") break;
    arrivals.push(performance.now());
  }
  return arrivals.map((t) => t - arrivals[0]!);
}

test("pace_to_media_time keeps generation at most lead chunks ahead of playback", async () => {
  // 4 frames per chunk at 16 fps: one chunk is 0.25 s of media.
  const paced = await chunkArrivals(true);
  const unpaced = await chunkArrivals(false);
  expect(paced).toHaveLength(6);
  // With a lead of one chunk, chunk k may start once playback reaches chunk k-1: k-1 quarter seconds in.
  paced.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(Math.max(0, (k - 1) * 250) - 30));
  expect(unpaced.at(-1)!).toBeLessThan(paced.at(-1)! - 400);
});
