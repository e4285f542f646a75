// Arbitraries for the fuzz tests (fuzz.test.ts here, realtime/fuzz.test.ts): request bodies made from
// kino's own field names and the ones other clients send, mutated with values chosen to sit on every
// edge admission checks — types, grids, limits, own-property names, numbers JSON and forms spell
// differently. Valid combinations stay cheap to generate (sides ≤ 240, few frames), so the fuzz spends
// its time on admission, not on rendering.
import fc from "fast-check";
import { ImageEditSchema, ImageGenerateSchema } from "../../schemas/images.ts";
import { SessionStartSchema } from "../../schemas/realtime.ts";
import { VideoCreateSchema } from "../../schemas/videos.ts";

/**
 * The seed and size of a fuzz run: fixed in `npm test`, so a failure replays exactly. A longer hunt:
 * KINO_FUZZ_SEED=<n> KINO_FUZZ_RUNS=<n> bun test test/http/fuzz.test.ts test/realtime/fuzz.test.ts
 */
export const FUZZ_SEED = Number(process.env.KINO_FUZZ_SEED ?? 4141);
export const fuzzRuns = (runs: number) => Number(process.env.KINO_FUZZ_RUNS ?? runs);

/** Field names: every schema's own, names that live on Object.prototype, and junk. */
export const fieldName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...new Set([
    ...Object.keys(VideoCreateSchema.properties), ...Object.keys(ImageGenerateSchema.properties),
    ...Object.keys(ImageEditSchema.properties), ...Object.keys(SessionStartSchema.properties), "sampling_params",
  ])) },
  { weight: 2, arbitrary: fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "", " ", "prompt ", "PROMPT") },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);

const number = fc.constantFrom(-1, 0, -0, 0.5, 1, 2, 2.5, 3, 4, 5, 8, 9, 16, 17, 33, 48, 64, 100, 101, 240, 241, 481, 485, 1e3, 1e9, 4294967296, 1e308, -1e308);
const text = fc.oneof(
  fc.constantFrom("", " ", "a red circle", "16x16", "64x64", "0x0", "16x", "x16", "99999x99999", "2.5", "1e3", "-3", "4", "true", "false", "null",
    "{", "[]", '{"image_url": "data:image/png;base64,AAAA"}', "data:image/png;base64,AAAA", "http://127.0.0.1:9/x.png", "/etc/passwd",
    "../../../etc/passwd", "auto", "url", "b64_json", "png", "gif", "m4s", "t2v", "i2v", "\u0000", "é🎬", "x".repeat(5000), "y".repeat(300_000)),
  fc.string({ maxLength: 20 }),
);

/** Any JSON value, leaning on the ones admission treats specially. */
export const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { weight: 4, arbitrary: number },
    { weight: 4, arbitrary: text },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.array(tie("v"), { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(fieldName, tie("v"), { maxKeys: 3 }) },
  ),
})).v;

/**
 * extra_params: the test pipeline's hooks at harmless values only — a step delay of 1e9 ms would hold
 * the one worker for good, and crash_at_step kills it — and any other key with any value.
 */
const extraParams = fc
  .array(
    fc.oneof(
      fc.tuple(
        fc.constantFrom("step_delay_ms", "fail_at_step", "chunk_delay_ms", "fail_at_chunk", "pace_to_media_time", "pace_lead_chunks"),
        fc.constantFrom<unknown>(0, 1, 2, -1, 2.5, "1", "x", true, "true", null),
      ),
      fc.tuple(fieldName, value),
    ),
    { maxLength: 3 },
  )
  .map((entries) => Object.fromEntries(entries));

/** A valid cheap body, then 0–4 fields set to arbitrary values or removed. */
export function mutatedBody(base: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> {
  const change = fc.oneof(
    fc.tuple(fieldName, value),
    fc.tuple(fc.constant("extra_params"), extraParams),
    fc.tuple(fc.constantFrom(...Object.keys(base)), fc.constant(undefined)),
  );
  return fc.array(change, { maxLength: 4 }).map((changes) => {
    const body: Record<string, unknown> = { ...base };
    for (const [key, v] of changes) {
      if (v === undefined) delete body[key];
      else Object.defineProperty(body, key, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return body;
  });
}

/** Server overrides for a fuzz run: the request defaults an arbitrary body falls back to are the cheapest valid ones. */
export const CHEAP_DEFAULTS = {
  "default_request.sampling.width": "16",
  "default_request.sampling.height": "16",
  "default_request.sampling.num_inference_steps": "1",
};

export const VIDEO_BASE = { prompt: "a red circle moving right", size: "16x16", num_frames: 1, num_inference_steps: 1 };
export const IMAGE_BASE = { prompt: "a red circle", size: "16x16", num_inference_steps: 1 };

/** A form field name in bracket notation, as multipart clients spell nested fields: `a[b][]`, `image[]`, `a[`. */
export const formName = fc.oneof(
  fc.tuple(fieldName, fc.array(fc.oneof(fieldName, fc.constant("")), { maxLength: 3 })).map(([head, rest]) => head + rest.map((k) => `[${k}]`).join("")),
  fc.constantFrom("a[", "a]", "[]", "a[b]c", "image[][x]", "a[[b]]"),
);
