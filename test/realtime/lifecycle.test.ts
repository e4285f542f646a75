// The realtime session lifecycle with a real WebSocket client against a live server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { keyFrameIndices, probeMp4 } from "../helpers/ffprobe.ts";
import { RealtimeClient, type Received } from "../helpers/realtime-client.ts";
import { expectEnvelope, startTestServer, waitForJob, type TestServer } from "../helpers/server.ts";
import { upgradeHeaders } from "../helpers/realtime-client.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ "server.realtime.max_sessions": "2", "server.realtime.start_timeout_s": "0.5" });
});
afterAll(() => server.close());

const START = { type: "session.start", prompt: "a red circle moving right on a black background", size: "64x48", num_frames: 13, fps: 8 };

/** Checks the pair discipline and returns the binary payloads in order. */
function binariesOf(received: Received[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  received.forEach((r, i) => {
    if (r.kind === "json" && r.message.type === "video.chunk_metadata") {
      const next = received[i + 1];
      expect(next?.kind).toBe("binary");
      expect((next as { bytes: Uint8Array }).bytes.byteLength).toBe(r.message.byte_length);
      expect(r.message.transport_chunk_index).toBe(out.length);
    }
    if (r.kind === "binary") {
      expect(received[i - 1]?.kind === "json" && (received[i - 1] as any).message.type).toBe("video.chunk_metadata");
      out.push(r.bytes);
    }
  });
  return out;
}

const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

describe("a whole session", () => {
  test("start → video.start → metadata/binary pairs → trailer → session.done → close; the stream is valid fMP4", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send(START);
    const start = await client.nextOfType("video.start");
    expect(start.request_id).toMatch(/^video_stream-[0-9a-f]{32}$/);
    expect(start.format).toBe("m4s");
    expect(start.config).toMatchObject({ width: 64, height: 48, fps: 8, num_frames: 13, frames_per_chunk: 4, num_chunks: 4 });
    const received = await client.untilDone();
    expect((await client.closed).code).toBe(1000);

    const messages = client.jsonMessages();
    const metas = messages.filter((m) => m.type === "video.chunk_metadata");
    expect(metas.map((m) => m.kind)).toEqual(["media", "media", "media", "media", "trailer"]);
    expect(metas.map((m) => m.generation_chunk_index)).toEqual([0, 1, 2, 3, null]);
    expect(metas.map((m) => m.num_frames)).toEqual([4, 4, 4, 1, 0]);
    for (const m of metas) expect(m.request_id).toBe(start.request_id);
    const trailer = metas.at(-1);
    expect(trailer).toMatchObject({ started_event_ids: [], active_event_ids: [], completed_event_ids: [] });
    const done = messages.at(-1);
    expect(done).toEqual({ type: "session.done", request_id: start.request_id, chunks: 5, stopped: false });

    const binaries = binariesOf(received);
    expect(new TextDecoder().decode(binaries[0]!.subarray(4, 8))).toBe("ftyp");
    expect(new TextDecoder().decode(binaries.at(-1)!.subarray(4, 8))).toBe("mfra");
    const probe = await probeMp4(concat(binaries));
    expect(probe).toMatchObject({ codec: "h264", width: 64, height: 48, frames: 13 });
    // Every chunk starts with an IDR, so a late joiner can start at any chunk.
    expect(await keyFrameIndices(concat(binaries))).toEqual([0, 4, 8, 12]);
  });

  test("sampling_params are flattened: request fields lifted, the rest into extra_params", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ type: "session.start", prompt: "p", size: "32x32", sampling_params: { num_frames: 5, seed: 9, chunk_delay_ms: 1, fps: 99 }, fps: 4 });
    const start = await client.nextOfType("video.start");
    expect(start.config).toMatchObject({ num_frames: 5, seed: 9, fps: 4, extra_params: { chunk_delay_ms: 1 } });
    await client.untilDone();
  });

  test("session.stop ends with the trailer and stopped:true, losing no generated frame", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ ...START, num_frames: 41, extra_params: { chunk_delay_ms: 100 } });
    await client.nextOfType("video.start");
    await client.nextOfType("video.chunk_metadata");
    client.send({ type: "session.stop" });
    const received = await client.untilDone();
    const done = client.jsonMessages().at(-1);
    expect(done.stopped).toBe(true);
    const metas = client.jsonMessages().filter((m) => m.type === "video.chunk_metadata");
    expect(metas.at(-1).kind).toBe("trailer");
    expect(metas.length).toBeLessThan(12);
    const frames = metas.reduce((sum, m) => sum + m.num_frames, 0);
    expect((await probeMp4(concat(binariesOf(received)))).frames).toBe(frames);
    expect(done.chunks).toBe(metas.length);
  });

  test("ping answers pong, after leading whitespace too; unknown types, binary frames, bad JSON and non-objects get errors and the session goes on", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ type: "session.ping" });
    expect((await client.next()).kind === "json" && client.jsonMessages().at(-1)).toEqual({ type: "session.pong" });
    client.send({ type: "session.dance" });
    expect(await client.nextOfType("error")).toMatchObject({ code: "unknown_message_type", message: "Unknown message type: session.dance" });
    client.send(new Uint8Array([1, 2, 3]));
    expect((await client.nextOfType("error")).code).toBe("invalid_message");
    client.send("{not json");
    expect((await client.nextOfType("error")).code).toBe("invalid_json");
    client.send("[1,2]");
    expect((await client.nextOfType("error")).code).toBe("invalid_message");
    client.send("7");
    expect((await client.nextOfType("error")).code).toBe("invalid_message");
    // JSON allows whitespace before the value
    client.send('\r\n {"type": "session.ping"}');
    expect(await client.next()).toMatchObject({ kind: "json" });
    expect(client.jsonMessages().at(-1)).toEqual({ type: "session.pong" });
    client.send("  {not json");
    expect((await client.nextOfType("error")).code).toBe("invalid_json");
    client.send({ type: "session.interaction", interaction: { event: { prompt: "x" } } });
    expect((await client.nextOfType("error")).code).toBe("session_not_started");
    // a session that outlasts the messages below (the socket closes after session.done), then stopped
    client.send({ ...START, num_frames: 33, extra_params: { chunk_delay_ms: 300 } });
    await client.nextOfType("video.start");
    client.send({ ...START });
    expect((await client.nextOfType("error")).code).toBe("session_already_started");
    client.send({ type: "session.ping", padding: "x".repeat(200 * 1024) });
    expect((await client.nextOfType("error")).code).toBe("message_too_large");
    client.send({ type: "session.ping", extra: 1 });
    expect(await client.nextOfType("error")).toMatchObject({ code: "invalid_request", param: "extra" });
    client.send({ type: "session.stop" });
    expect((await client.nextOfType("session.done")).stopped).toBe(true);
  });
});

describe("start failures", () => {
  test("no session.start in time → start_timeout error and close", async () => {
    const client = await RealtimeClient.connect(server.url);
    const error = await client.nextOfType("error", 5000);
    expect(error).toEqual({ type: "error", code: "start_timeout", message: "Timeout waiting for session.start" });
    await client.closed;
  });

  test("bad start requests get an error naming the field, then close", async () => {
    const cases: [object, string, string | undefined][] = [
      [{ ...START, format: "webm" }, "invalid_request", "format"],
      [{ ...START, model: "sora-2" }, "model_mismatch", "model"],
      [{ ...START, num_frames: 6 }, "invalid_request", "num_frames"],
      [{ type: "session.start", prompt: "p", seconds: "9999" }, "invalid_request", "seconds"],
      [{ ...START, colour: "red" }, "invalid_request", "colour"],
      [{ type: "session.start" }, "invalid_request", "prompt"],
      [{ ...START, extra_params: { pace_to_media_time: "yes" } }, "invalid_request", "extra_params.pace_to_media_time"],
    ];
    for (const [start, code, param] of cases) {
      const client = await RealtimeClient.connect(server.url);
      client.send(start);
      const error = await client.nextOfType("error");
      expect({ code: error.code, param: error.param }).toEqual({ code, param });
      await client.closed;
    }
  });

  test("beyond max_sessions the upgrade is refused with 503 and Retry-After; a start that lost the race for the last slot gets server_busy", async () => {
    const slow = { ...START, num_frames: 41, extra_params: { chunk_delay_ms: 200 } };
    const a = await RealtimeClient.connect(server.url);
    a.send(slow);
    await a.nextOfType("video.start");
    // One slot left: both upgrades pass, the first start takes it.
    const b = await RealtimeClient.connect(server.url);
    const c = await RealtimeClient.connect(server.url);
    b.send(slow);
    await b.nextOfType("video.start");
    c.send(START);
    const busy = await c.nextOfType("error");
    expect(busy).toEqual({ type: "error", code: "server_busy", message: "The server is at its limit of 2 realtime sessions; try again later" });
    await c.closed;
    const refused = await fetch(`${server.url}/v1/realtime/video`, { headers: upgradeHeaders });
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await expectEnvelope(refused, 503)).message).toBe("The server is at its limit of 2 realtime sessions; try again later");
    a.close();
    b.close();
    await Promise.all([a.closed, b.closed]);
    // Free again: the next upgrade succeeds.
    const d = await RealtimeClient.connect(server.url);
    d.close();
  });
});

describe("ending badly", () => {
  test("a client that disconnects mid-stream frees the engine at once", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ ...START, num_frames: 201, extra_params: { chunk_delay_ms: 100 } });
    await client.nextOfType("video.chunk_metadata");
    client.close();
    const started = performance.now();
    const job = await (await fetch(`${server.url}/v1/videos`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "after", size: "32x32", num_frames: 1 }),
    })).json();
    expect((await waitForJob(server.url, job.id)).status).toBe("completed");
    // The stream had ~5 s of chunks left; the job ran right away instead.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test("a generation failure is an error, then close", async () => {
    const client = await RealtimeClient.connect(server.url);
    client.send({ ...START, extra_params: { fail_at_chunk: 1 } });
    const error = await client.nextOfType("error");
    expect(error.code).toBe("generation_failed");
    expect(error.message).toContain("test pipeline failed at chunk 1");
    expect(error.request_id).toMatch(/^video_stream-/);
    await client.closed;
  });
});

describe("stall watchdog", () => {
  let stalling: TestServer;
  beforeAll(async () => {
    stalling = await startTestServer({ "server.realtime.stall_timeout_s": "0.3" });
  });
  afterAll(() => stalling.close());

  test("no progress for stall_timeout_s → stall_timeout error and session.done stopped:true", async () => {
    const client = await RealtimeClient.connect(stalling.url);
    client.send({ ...START, extra_params: { chunk_delay_ms: 2000 } });
    await client.nextOfType("video.chunk_metadata");
    expect(await client.nextOfType("error", 5000)).toMatchObject({ code: "stall_timeout", message: "Stall timeout: no generation progress" });
    const done = await client.nextOfType("session.done");
    expect(done).toMatchObject({ stopped: true, chunks: 1 });
    await client.closed;
  });
});

describe("API key", () => {
  let keyed: TestServer;
  beforeAll(async () => {
    keyed = await startTestServer({ "server.api_key": "sk-rt" });
  });
  afterAll(() => keyed.close());

  test("the upgrade needs the key, as a bearer header or ?api_key= (browsers cannot set headers)", async () => {
    await expect(RealtimeClient.connect(keyed.url)).rejects.toBeDefined();
    const viaHeader = await RealtimeClient.connect(keyed.url, { authorization: "Bearer sk-rt" });
    viaHeader.send({ type: "session.ping" });
    expect((await viaHeader.nextOfType("session.pong")).type).toBe("session.pong");
    viaHeader.close();
    const viaQuery = await RealtimeClient.connect(keyed.url, {}, "?api_key=sk-rt");
    viaQuery.send({ type: "session.ping" });
    expect((await viaQuery.nextOfType("session.pong")).type).toBe("session.pong");
    viaQuery.close();
  });
});
