// Prompt updates over a live session: validation, acknowledgement, idempotency, scheduling and the
// per-chunk event bookkeeping, as docs/spec/realtime-video-protocol.md defines them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ "server.realtime.max_sessions": "8" });
});
afterAll(() => server.close());

/** A session with a pause between chunks long enough for a test to act at a known boundary. */
async function session(numFrames = 41, chunkDelayMs = 150): Promise<{ client: RealtimeClient; requestId: string }> {
  const client = await RealtimeClient.connect(server.url);
  client.send({ type: "session.start", prompt: "a red circle on a black background", size: "32x32", fps: 8, num_frames: numFrames, extra_params: { chunk_delay_ms: chunkDelayMs } });
  const start = await client.nextOfType("video.start");
  return { client, requestId: start.request_id };
}

const interaction = (prompt: string, extra: Record<string, unknown> = {}) => ({ type: "session.interaction", interaction: { event: { prompt }, ...extra } });
const media = (client: RealtimeClient) => client.jsonMessages().filter((m) => m.type === "video.chunk_metadata" && m.kind === "media");

describe("acknowledgement", () => {
  test("queued arrives within milliseconds, with a generated UUID when event_id is omitted", async () => {
    const { client, requestId } = await session();
    const sent = performance.now();
    client.send(interaction("a blue square"));
    const queued = await client.nextOfType("session.interaction.queued");
    expect(performance.now() - sent).toBeLessThan(100);
    expect(queued.request_id).toBe(requestId);
    expect(queued.event_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    client.close();
  });

  test("invalid interactions get errors and the session goes on", async () => {
    const { client } = await session();
    const bad: [unknown, string | undefined][] = [
      [{ type: "session.interaction", interaction: "blue" }, "interaction"],
      [{ type: "session.interaction", interaction: { event: { prompt: "x" }, event_id: "" } }, "interaction.event_id"],
      [{ type: "session.interaction", interaction: {} }, "interaction.event"],
      [{ type: "session.interaction", interaction: { event: { prompt: "" } } }, "interaction.event.prompt"],
      [{ type: "session.interaction", interaction: { event: { negative_prompt: "x" } } }, "interaction.event.prompt"],
      [{ type: "session.interaction", interaction: { event: { prompt: "x", style: "noir" } } }, "interaction.event.style"],
      [interaction("x", { transition_chunks: -1 }), "interaction.transition_chunks"],
      [interaction("x", { transition_chunks: true }), "interaction.transition_chunks"],
      [interaction("x", { transition_chunks: 1.5 }), "interaction.transition_chunks"],
    ];
    for (const [message, param] of bad) {
      client.send(message);
      const error = await client.nextOfType("error");
      expect({ code: error.code, param: error.param }).toEqual({ code: "invalid_request", param });
    }
    // An integral float is an integer.
    client.send({ type: "session.interaction", interaction: { event: { prompt: "x" }, transition_chunks: 2.0, event_id: "ok" } });
    expect((await client.nextOfType("session.interaction.queued")).event_id).toBe("ok");
    client.close();
  });

  test("after session.stop an interaction is refused with session_stopping, never queued", async () => {
    const { client, requestId } = await session();
    await client.nextOfType("video.chunk_metadata");
    client.send({ type: "session.stop" });
    client.send({ type: "session.interaction", interaction: { event: { prompt: "a blue square" }, event_id: "late" } });
    const error = await client.nextOfType("error");
    expect(error).toEqual({
      type: "error", code: "session_stopping", request_id: requestId, event_id: "late",
      message: "The session is stopping: session.stop was received, so no further interaction is applied",
    });
    await client.untilDone();
    expect(client.jsonMessages().filter((m) => m.type === "session.interaction.queued")).toEqual([]);
  });
});

describe("scheduling and bookkeeping", () => {
  test("transition_chunks 0 is a hard switch: started, active and completed in one chunk", async () => {
    const { client } = await session();
    await client.nextOfType("video.chunk_metadata");
    client.send(interaction("a green square on a blue background", { event_id: "hard", transition_chunks: 0 }));
    await client.nextOfType("session.interaction.queued");
    await client.untilDone();
    const chunks = media(client).filter((m) => m.active_event_ids.includes("hard"));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ started_event_ids: ["hard"], active_event_ids: ["hard"], completed_event_ids: ["hard"] });
    expect(chunks[0].transition).toEqual({ event_id: "hard", k: 1, n: 1, progress: 1 });
  });

  test("transition_chunks N reaches the target in the N-th affected chunk with progress k/N", async () => {
    const { client } = await session();
    const first = await client.nextOfType("video.chunk_metadata");
    client.send(interaction("a blue ring", { event_id: "slow", transition_chunks: 3 }));
    await client.untilDone();
    const affected = media(client).filter((m) => m.active_event_ids.includes("slow"));
    expect(affected.map((m) => m.transition.progress)).toEqual([1 / 3, 2 / 3, 1]);
    expect(affected.map((m) => m.generation_chunk_index)).toEqual([1, 2, 3].map((k) => first.generation_chunk_index + k));
    expect(affected.map((m) => m.started_event_ids)).toEqual([["slow"], [], []]);
    expect(affected.map((m) => m.completed_event_ids)).toEqual([[], [], ["slow"]]);
  });

  test("omitted transition_chunks uses the model card's default", async () => {
    const { client } = await session();
    await client.nextOfType("video.chunk_metadata");
    client.send(interaction("a pink star", { event_id: "default" }));
    await client.untilDone();
    expect(media(client).filter((m) => m.active_event_ids.includes("default"))).toHaveLength(server.ctx.engine.card.default_transition_chunks);
  });

  test("a newer pending target supersedes an older one, which never starts and is reported", async () => {
    const { client } = await session();
    await client.nextOfType("video.chunk_metadata");
    client.send(interaction("a blue square", { event_id: "older", transition_chunks: 0 }));
    client.send(interaction("a green square", { event_id: "newer", transition_chunks: 0 }));
    await client.untilDone();
    const all = media(client);
    expect(all.some((m) => m.started_event_ids.includes("older") || m.active_event_ids.includes("older"))).toBe(false);
    const takeover = all.find((m) => m.started_event_ids.includes("newer"));
    expect(takeover.superseded_event_ids).toEqual(["older"]);
  });

  test("a new target interrupting an active transition: the old one is reported superseded, never completed", async () => {
    const { client } = await session();
    await client.nextOfType("video.chunk_metadata");
    client.send(interaction("a blue square", { event_id: "long", transition_chunks: 4 }));
    // Wait until the long transition is under way, then interrupt it.
    for (;;) {
      const m = await client.nextOfType("video.chunk_metadata");
      if (m.started_event_ids.includes("long")) break;
    }
    client.send(interaction("a yellow ring", { event_id: "cut", transition_chunks: 2 }));
    await client.untilDone();
    const all = media(client);
    expect(all.some((m) => m.completed_event_ids.includes("long"))).toBe(false);
    const takeover = all.find((m) => m.started_event_ids.includes("cut"));
    expect(takeover.superseded_event_ids).toEqual(["long"]);
    expect(takeover.active_event_ids).toEqual(["cut"]);
    expect(all.filter((m) => m.active_event_ids.includes("cut")).map((m) => m.transition.progress)).toEqual([0.5, 1]);
  });
});

describe("idempotency", () => {
  test("the same event_id and payload is a retry: queued again, applied once", async () => {
    const { client } = await session();
    await client.nextOfType("video.chunk_metadata");
    const message = interaction("a cyan circle", { event_id: "same", transition_chunks: 1 });
    client.send(message);
    client.send(message);
    expect((await client.nextOfType("session.interaction.queued")).event_id).toBe("same");
    expect((await client.nextOfType("session.interaction.queued")).event_id).toBe("same");
    await client.untilDone();
    expect(media(client).filter((m) => m.started_event_ids.includes("same"))).toHaveLength(1);
  });

  test("the same event_id with another payload is event_id_conflict", async () => {
    const { client, requestId } = await session();
    client.send(interaction("a cyan circle", { event_id: "dup" }));
    await client.nextOfType("session.interaction.queued");
    client.send(interaction("a pink circle", { event_id: "dup" }));
    expect(await client.nextOfType("error")).toMatchObject({ code: "event_id_conflict", request_id: requestId, event_id: "dup" });
    client.close();
  });
});

describe("the supported subset", () => {
  test("an event field the model does not implement fails that event only; its id becomes reusable", async () => {
    const { client, requestId } = await session();
    client.send({ type: "session.interaction", interaction: { event_id: "neg", event: { prompt: "a blue ring", negative_prompt: "blurry" } } });
    await client.nextOfType("session.interaction.queued");
    const failed = await client.nextOfType("error");
    expect(failed).toMatchObject({ code: "interaction_failed", request_id: requestId, event_id: "neg" });
    expect(failed.message).toContain("negative_prompt");
    client.send(interaction("a blue ring", { event_id: "neg", transition_chunks: 0 }));
    expect((await client.nextOfType("session.interaction.queued")).event_id).toBe("neg");
    await client.untilDone();
    expect(media(client).filter((m) => m.completed_event_ids.includes("neg"))).toHaveLength(1);
  });

  test("a model that cannot update prompts answers interaction_failed while generation goes on", async () => {
    const fixed = await startTestServer({ "generator.model_path": `pipeline:${import.meta.dir}/../fixtures/fixed-prompt-pipeline.ts` });
    try {
      const client = await RealtimeClient.connect(fixed.url);
      client.send({ type: "session.start", prompt: "a red circle", size: "32x32", num_frames: 13, extra_params: { chunk_delay_ms: 50 } });
      await client.nextOfType("video.start");
      client.send(interaction("a blue ring", { event_id: "nope" }));
      await client.nextOfType("session.interaction.queued");
      expect(await client.nextOfType("error")).toMatchObject({
        code: "interaction_failed",
        event_id: "nope",
        message: "The active model does not support prompt updates",
      });
      const done = await client.nextOfType("session.done");
      expect(done.stopped).toBe(false);
    } finally {
      await fixed.close();
    }
  });
});
