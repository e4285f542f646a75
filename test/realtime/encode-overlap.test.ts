// A session's stream with the worker's encoder on its own thread (KINO_STREAM_OVERLAP=1) against the
// same session on a server whose workers encode in sequence (the default): the client receives the same
// bytes. An encoder failure reaches the client as the protocol's generation_failed error, after the
// chunks before it, and the worker process lives on to stream the next session.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeFrames } from "../helpers/decode.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let overlapped: TestServer;
let sequential: TestServer;
beforeAll(async () => {
  sequential = await startTestServer();
  // worker processes take the server's environment when they are spawned, at start
  process.env.KINO_STREAM_OVERLAP = "1";
  try {
    overlapped = await startTestServer();
  } finally {
    delete process.env.KINO_STREAM_OVERLAP;
  }
});
afterAll(async () => {
  await overlapped.close();
  await sequential.close();
});

const START = {
  type: "session.start",
  prompt: "a yellow square moving right on a blue background",
  size: "480x272",
  fps: 16,
  num_frames: 33,
  num_inference_steps: 2,
  seed: 5,
};

async function session(server: TestServer, start: object): Promise<RealtimeClient> {
  const client = await RealtimeClient.connect(server.url);
  client.send(start);
  await client.untilDone(60000);
  return client;
}

const binaries = (client: RealtimeClient) => client.received.filter((r) => r.kind === "binary").map((r) => (r as { bytes: Uint8Array }).bytes);

test("a session streams the same bytes with the encoder on its own thread as in sequence", async () => {
  const [a, b] = await Promise.all([session(overlapped, START), session(sequential, START)]);
  const [x, y] = [binaries(a), binaries(b)];
  expect(x).toHaveLength(10); // 9 chunks and the trailer
  expect(x.map((m) => m.length)).toEqual(y.map((m) => m.length));
  x.forEach((bytes, i) => expect(Buffer.from(bytes).equals(Buffer.from(y[i]!))).toBe(true));
  const metadata = (c: RealtimeClient) => c.jsonMessages().filter((m) => m.type === "video.chunk_metadata").map(({ request_id: _, ...m }) => m);
  expect(metadata(a)).toEqual(metadata(b));
  expect(await decodeFrames(new Uint8Array(Buffer.concat(x)), 480, 272)).toHaveLength(33);
});

test("an encoder failure is generation_failed after the chunks before it, and the worker streams on", async () => {
  const [pid] = overlapped.ctx.engine.workerPids();
  const failing = await RealtimeClient.connect(overlapped.url);
  failing.send({ ...START, extra_params: { bad_frame_at_chunk: 2 } });
  const error = await failing.nextOfType("error", 30000);
  expect(error).toMatchObject({ code: "generation_failed", message: "Generation failed: H264Encoder: frame has 100 bytes, expected 391680 for 480x272" });
  const media = failing.jsonMessages().filter((m) => m.type === "video.chunk_metadata");
  expect(media.map((m) => m.generation_chunk_index)).toEqual([0, 1]);
  await failing.closed;

  const next = await session(overlapped, { ...START, num_frames: 9 });
  expect(next.jsonMessages().find((m) => m.type === "session.done")).toMatchObject({ stopped: false });
  expect(next.jsonMessages().filter((m) => m.type === "video.chunk_metadata" && m.kind === "media")).toHaveLength(3);
  expect(overlapped.ctx.engine.workerPids()).toEqual([pid!]);
});
