// kino.continuation_strength as the loader reads it from transformer/config.json: where a continuing
// chunk enters the schedule, and the errors that name the key for a value it cannot use; and
// kino.sink_reanchor_on_cut and kino.first_frame_conditioning, read the same way.
import { describe, expect, test } from "bun:test";
import { continuationStart, parseKinoConfig } from "../../src/models/kino-config.ts";

const FILE = "transformer/config.json";
const causal = (extra: Record<string, unknown>) => parseKinoConfig({ chunk_latent_frames: 1, ...extra }, {}, FILE);

describe("kino.continuation_strength", () => {
  test("absent: every chunk from noise (enters at step 0)", () => {
    const k = causal({});
    expect(k.continuationStrength).toBe(1);
    expect(continuationStart(k, 8)).toBe(0);
  });

  test("a continuing chunk runs the last max(1, ⌊strength·steps⌋) steps", () => {
    const half = causal({ continuation_strength: 0.5 });
    expect([8, 4, 3, 1].map((steps) => continuationStart(half, steps))).toEqual([4, 2, 2, 0]);
    expect(continuationStart(causal({ continuation_strength: 0.3 }), 8)).toBe(6);
    expect(continuationStart(causal({ continuation_strength: 0.01 }), 8)).toBe(7);
  });

  test("values outside (0, 1] and the unipc sampler are refused, naming the key", () => {
    for (const bad of [0, -0.5, 1.5, "half"]) {
      expect(() => causal({ continuation_strength: bad })).toThrow(`${FILE}: kino.continuation_strength must be a number in (0, 1], got ${JSON.stringify(bad)}`);
    }
    expect(() => causal({ continuation_strength: 0.5, sampler: "unipc" })).toThrow(`${FILE}: kino.continuation_strength needs the euler or distilled sampler`);
  });
});

describe("kino.sink_reanchor_on_cut", () => {
  test("absent (or null): false; true and false are read as given; anything else is refused, naming the key", () => {
    expect(causal({}).sinkReanchorOnCut).toBe(false);
    expect(causal({ sink_frames: 1, sink_reanchor_on_cut: true }).sinkReanchorOnCut).toBe(true);
    expect(causal({ sink_reanchor_on_cut: false }).sinkReanchorOnCut).toBe(false);
    for (const bad of [1, "yes"]) {
      expect(() => causal({ sink_reanchor_on_cut: bad })).toThrow(`${FILE}: kino.sink_reanchor_on_cut must be true or false, got ${JSON.stringify(bad)}`);
    }
  });
});

describe("kino.first_frame_conditioning", () => {
  test("absent: false; true on a causal model of one-latent-frame chunks; refused elsewhere, naming the key", () => {
    expect(causal({}).firstFrameConditioning).toBe(false);
    expect(causal({ first_frame_conditioning: true }).firstFrameConditioning).toBe(true);
    expect(() => causal({ first_frame_conditioning: "yes" })).toThrow(`${FILE}: kino.first_frame_conditioning must be true or false, got "yes"`);
    expect(() => causal({ chunk_latent_frames: 3, first_frame_conditioning: true })).toThrow(`${FILE}: kino.first_frame_conditioning needs a causal model whose chunks are one latent frame`);
    expect(() => parseKinoConfig({ first_frame_conditioning: true }, {}, FILE)).toThrow("kino.first_frame_conditioning needs a causal model");
  });
});
