// Misbehaving clients: floods, garbage, oversize frames, early disconnects, a stop mid-transition.
// The server keeps serving other sessions and REST jobs throughout.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ "generator.engine.num_workers": "2", "server.realtime.max_sessions": "8", "server.realtime.max_start_bytes": "1048576" });
});
afterAll(() => server.close());

const start = { type: "session.start", prompt: "a red circle", size: "32x32", fps: 8, num_frames: 41, extra_params: { chunk_delay_ms: 40 } };

test("a flood of interactions and garbage is answered message by message; the stream completes", async () => {
  const flooder = await RealtimeClient.connect(server.url);
  const bystander = await RealtimeClient.connect(server.url);
  flooder.send(start);
  bystander.send({ ...start, prompt: "a blue square" });
  await flooder.nextOfType("video.start");
  await bystander.nextOfType("video.start");
  for (let i = 0; i < 300; i++) {
    flooder.send({ type: "session.interaction", interaction: { event_id: `f${i}`, event: { prompt: `a ${i % 2 ? "green" : "pink"} ring` }, transition_chunks: i % 4 } });
    flooder.send("garbage{");
    flooder.send(new Uint8Array(64));
  }
  await flooder.untilDone(60000);
  const answers = flooder.jsonMessages();
  expect(answers.filter((m) => m.type === "session.interaction.queued")).toHaveLength(300);
  expect(answers.filter((m) => m.type === "error" && m.code === "invalid_json")).toHaveLength(300);
  expect(answers.filter((m) => m.type === "error" && m.code === "invalid_message")).toHaveLength(300);
  // Only the last pending target of each boundary ever starts; the others are reported superseded
  // (as is a started transition that a newer one interrupts). Every id is one of the 300 sent.
  const metas = answers.filter((m) => m.type === "video.chunk_metadata");
  const started = metas.flatMap((m) => m.started_event_ids);
  const superseded = metas.flatMap((m) => m.superseded_event_ids);
  expect(new Set(started).size).toBe(started.length);
  expect(new Set(superseded).size).toBe(superseded.length);
  expect([...started, ...superseded].every((id) => /^f\d+$/.test(id) && Number(id.slice(1)) < 300)).toBe(true);
  expect(started.length).toBeGreaterThanOrEqual(1);
  // The other session never saw any of it.
  await bystander.untilDone(60000);
  expect(bystander.jsonMessages().filter((m) => m.type === "error")).toEqual([]);
});

test("frames over the session.start limit close that connection only", async () => {
  const big = await RealtimeClient.connect(server.url);
  big.send({ ...start, prompt: "x".repeat(1_100_000) });
  expect((await big.closed).code).toBe(1009);
  const ok = await RealtimeClient.connect(server.url);
  ok.send({ ...start, num_frames: 5 });
  expect((await ok.nextOfType("session.done")).stopped).toBe(false);
});

test("early disconnects (before start, during admission, mid-transition) leave the server serving", async () => {
  (await RealtimeClient.connect(server.url)).close();
  const during = await RealtimeClient.connect(server.url);
  during.send(start);
  during.close();
  const mid = await RealtimeClient.connect(server.url);
  mid.send(start);
  await mid.nextOfType("video.chunk_metadata");
  mid.send({ type: "session.interaction", interaction: { event: { prompt: "a blue ring" }, transition_chunks: 5 } });
  await mid.nextOfType("video.chunk_metadata");
  mid.close();

  const job = await (await fetch(`${server.url}/v1/videos`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "still here", size: "32x32", num_frames: 1 }) })).json();
  expect((await waitForJob(server.url, job.id)).status).toBe("completed");
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
});

test("session.stop during a transition: trailer, done stopped:true, the transition never completes", async () => {
  const client = await RealtimeClient.connect(server.url);
  client.send(start);
  await client.nextOfType("video.chunk_metadata");
  client.send({ type: "session.interaction", interaction: { event_id: "t", event: { prompt: "a blue ring" }, transition_chunks: 20 } });
  for (;;) {
    const m = await client.nextOfType("video.chunk_metadata");
    if (m.started_event_ids.includes("t")) break;
  }
  client.send({ type: "session.stop" });
  await client.untilDone();
  const messages = client.jsonMessages();
  expect(messages.at(-1)).toMatchObject({ type: "session.done", stopped: true });
  expect(messages.filter((m) => m.type === "video.chunk_metadata").at(-1).kind).toBe("trailer");
  expect(messages.some((m) => m.type === "video.chunk_metadata" && m.completed_event_ids.includes("t"))).toBe(false);
});

test("a message nested without end is answered (it went unanswered): before the start it ends the connection, after it the session goes on", async () => {
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
  const early = await RealtimeClient.connect(server.url);
  early.send(`{"type":"session.start","prompt":"p","extra_params":${deep(100_000)}}`);
  expect(await early.nextOfType("error")).toMatchObject({ code: "invalid_message", message: "The message nests deeper than 32 levels" });
  expect((await early.closed).code).toBe(1000);

  const streaming = await RealtimeClient.connect(server.url);
  streaming.send({ ...start, num_frames: 9 });
  await streaming.nextOfType("video.start");
  streaming.send(`{"type":"session.interaction","interaction":{"event":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`);
  expect(await streaming.nextOfType("error")).toMatchObject({ code: "invalid_message", message: "The message nests deeper than 32 levels" });
  streaming.send({ type: "session.ping" });
  await streaming.nextOfType("session.pong");
  expect((await streaming.nextOfType("session.done")).stopped).toBe(false);
});
