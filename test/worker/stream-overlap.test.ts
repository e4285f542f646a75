// When a stream's encode runs on the encoder thread (src/worker/stream-overlap.ts): the environment
// decides where it says 1 or 0; otherwise only a CUDA model gets it, once the device check verified it.
import { expect, test } from "bun:test";
import { STREAM_OVERLAP_VERIFIED, streamOverlap } from "../../src/worker/stream-overlap.ts";

test("KINO_STREAM_OVERLAP=1 or =0 decides on any device; unset, the CPU never overlaps and CUDA does once verified", () => {
  for (const device of ["cpu", "cuda"] as const) {
    expect(streamOverlap(device, { KINO_STREAM_OVERLAP: "1" })).toBe(true);
    expect(streamOverlap(device, { KINO_STREAM_OVERLAP: "0" })).toBe(false);
  }
  expect(streamOverlap("cpu", {})).toBe(false);
  expect(streamOverlap("cuda", {})).toBe(STREAM_OVERLAP_VERIFIED);
  expect(streamOverlap("cuda", { KINO_STREAM_OVERLAP: "yes" })).toBe(STREAM_OVERLAP_VERIFIED);
});
