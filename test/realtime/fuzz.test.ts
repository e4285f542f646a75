// Property-based fuzz of /v1/realtime/video (fixed seed, bounded runs): sequences of every client
// message type — session.start, session.interaction, session.stop, session.ping — with mutated fields,
// unknown types, non-objects, bad JSON and binary frames. Every answer is a protocol message; every
// error carries a documented code and never `internal_error` (a generation failure is the documented
// `generation_failed`); afterwards the server answers /health and streams a whole session.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { RealtimeErrorCode } from "../../schemas/realtime.ts";
import { RealtimeClient } from "../helpers/realtime-client.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { CHEAP_DEFAULTS, FUZZ_SEED, fieldName, fuzzRuns, mutatedBody, value } from "../http/fuzz-values.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ ...CHEAP_DEFAULTS, "default_request.sampling.num_frames": "5", "server.realtime.start_timeout_s": "0.3" });
});
afterAll(() => server.close());

const CODES = new Set(RealtimeErrorCode.anyOf.map((literal: { const: string }) => literal.const));
const SERVER_TYPES = new Set(["video.start", "video.chunk_metadata", "session.interaction.queued", "session.done", "session.pong", "error"]);

// A slow stream, so that the frames after the start meet a session that is streaming.
const START = { type: "session.start", prompt: "a red circle on a black background", size: "16x16", num_frames: 9, fps: 8, extra_params: { chunk_delay_ms: 40 } };
const start = fc.oneof(fc.constant(START), mutatedBody(START), mutatedBody({ ...START, sampling_params: { num_frames: 5, flow_shift: 3 } }));

const validInteraction = fc.record(
  {
    event_id: fc.constantFrom("e1", "e2", "e3"),
    event: fc.constantFrom("a blue square", "a green ring on a white background").map((prompt) => ({ prompt })),
    transition_chunks: fc.integer({ min: 0, max: 3 }),
  },
  { requiredKeys: ["event"] },
);
const mutatedInteraction = fc.record(
  {
    event_id: fc.oneof(fc.constantFrom("e1", "", "constructor", "__proto__"), value),
    event: fc.oneof({ weight: 3, arbitrary: mutatedBody({ prompt: "a blue square" }) }, { weight: 1, arbitrary: value }),
    transition_chunks: fc.oneof(fc.integer({ min: 0, max: 4 }), value),
    junk: value,
  },
  { requiredKeys: ["event"] },
);
const interaction = fc
  .oneof(validInteraction, mutatedInteraction, value)
  .chain((i) => fc.oneof(fc.constant({ type: "session.interaction", interaction: i }), mutatedBody({ type: "session.interaction", interaction: i })));

/** One client frame: JSON objects of every type, or frames that are not a JSON object at all. */
const frame: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 2, arbitrary: start },
  { weight: 4, arbitrary: interaction },
  { weight: 1, arbitrary: fc.oneof(fc.constant({ type: "session.stop" }), mutatedBody({ type: "session.stop" })) },
  { weight: 1, arbitrary: fc.oneof(fc.constant({ type: "session.ping" }), mutatedBody({ type: "session.ping" })) },
  { weight: 1, arbitrary: fc.dictionary(fieldName, value, { maxKeys: 3 }).map((m) => ({ ...m, type: m.type ?? "session.unknown" })) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 20 }).map((s) => `{${s}`), fc.uint8Array({ maxLength: 16 }), value.map((v) => JSON.stringify(v))) },
);

const session = fc.tuple(fc.boolean(), start, fc.array(frame, { minLength: 1, maxLength: 5 }));

/** What is wrong with one server message, or null. */
function problemWith(message: any): string | null {
  if (!SERVER_TYPES.has(message?.type)) return `unknown server message ${JSON.stringify(message).slice(0, 200)}`;
  if (message.type !== "error") return null;
  if (!CODES.has(message.code) || typeof message.message !== "string") return `malformed error ${JSON.stringify(message)}`;
  if (message.code === "internal_error") return `internal_error: ${message.message}`;
  return null;
}

test("every message type, mutated, is answered with protocol messages and documented error codes", async () => {
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype);
  const found: string[] = [];
  await fc.assert(
    fc.asyncProperty(session, async ([startFirst, first, frames]) => {
      const client = await RealtimeClient.connect(server.url);
      const sent = startFirst ? [first, ...frames] : frames;
      const answered = () => client.jsonMessages().some((m) => m.type === "video.start" || m.type === "error");
      for (const [i, f] of sent.entries()) {
        if (!client.isOpen) break;
        client.send(typeof f === "string" || f instanceof Uint8Array ? f : JSON.stringify(f));
        // After a start, wait for its answer, so later frames meet a streaming session.
        for (let waited = 0; i === 0 && startFirst && !answered() && client.isOpen && waited < 500; waited += 5) await Bun.sleep(5);
        await Bun.sleep(2);
      }
      // Let answers arrive (a started stream runs on until done or until the client leaves).
      const streaming = () => client.jsonMessages().some((m) => m.type === "video.start");
      const until = Date.now() + 400;
      while (client.isOpen && Date.now() < until && !client.jsonMessages().some((m) => m.type === "session.done")) {
        await Bun.sleep(streaming() ? 20 : 10);
      }
      client.close();
      await client.closed;
      const problems = client.jsonMessages().map(problemWith).filter((p) => p !== null);
      if (Object.getOwnPropertyNames(Object.prototype).length !== prototypeKeys.length) problems.push("wrote into Object.prototype");
      if (problems.length) found.push(`${JSON.stringify(sent).slice(0, 600)}\n  → ${problems.join("; ")}`);
      return problems.length === 0;
    }),
    { seed: FUZZ_SEED, numRuns: fuzzRuns(150), endOnFailure: true },
  ).catch((err) => {
    throw new Error(`${(err as Error).message.split("\n")[0]}\n${found.join("\n")}`);
  });

  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  const client = await RealtimeClient.connect(server.url);
  client.send(START);
  await client.untilDone();
  expect(client.jsonMessages().at(-1)).toMatchObject({ type: "session.done", stopped: false });
}, 120_000);
