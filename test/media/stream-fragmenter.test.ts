// A realtime stream's fragmenter on its own thread against the same fragmenter inline: the same bytes
// chunk for chunk, a stream ffmpeg decodes, refused frames and a dying thread reported as errors that
// reach the caller (never the process), and closing a stream frees its encoder for the next one.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { nativeLibrary } from "../../src/media/h264/core-native.ts";
import { InlineFragmenter, type ChunkFragmenter } from "../../src/media/stream/fragmenter.ts";
import { EncoderThread } from "../../src/media/stream/encoder-thread-host.ts";
import { ThreadedFragmenter } from "../../src/media/stream/threaded-fragmenter.ts";
import { decodeFrames, pixel } from "../helpers/decode.ts";

const OPTIONS = { width: 96, height: 64, fps: 16, qp: 23, input: "rgb24" as const };

/** Frame t of a scene: a gradient with a bright square moving right, so P pictures carry motion. */
function frame(t: number, width = OPTIONS.width, height = OPTIONS.height): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inSquare = x >= 4 + 3 * t && x < 20 + 3 * t && y >= 24 && y < 40;
      rgb.set(inSquare ? [240, 240, 40] : [(x * 2) & 255, (y * 3) & 255, 90], (y * width + x) * 3);
    }
  }
  return rgb;
}

/** Chunks of 5, 4, 4, 4 frames (a causal model's first chunk is one frame longer). */
const CHUNKS = [5, 4, 4, 4];
const chunkFrames = (c: number) => Array.from({ length: CHUNKS[c]! }, (_, i) => frame(CHUNKS.slice(0, c).reduce((a, b) => a + b, 0) + i));

async function stream(fragmenter: ChunkFragmenter): Promise<Uint8Array[]> {
  try {
    // every chunk is handed over before the first is awaited, as the stream task does when it runs ahead
    const fragments = CHUNKS.map((_, c) => fragmenter.fragment(chunkFrames(c)));
    return [...(await Promise.all(fragments)), await fragmenter.finish()];
  } finally {
    fragmenter.close();
  }
}

/** The error `promise` rejects with. (Bun's `expect(p).rejects` never settles on a promise that a
 *  worker's message rejects later, so pending promises are awaited this way.) */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => new Error("expected a rejection, the promise resolved"),
    (err: unknown) => err as Error,
  );
}

const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

describe("ThreadedFragmenter", () => {
  test("writes the inline fragmenter's bytes, chunk for chunk, and ffmpeg decodes the stream", async () => {
    const threaded = await ThreadedFragmenter.start(OPTIONS);
    // the thread runs the build of the encoder this process would (the native library where it loads)
    const lib = await nativeLibrary();
    expect(await threaded.ready).toBe(typeof lib === "string" ? "wasm" : "native");
    const [onThread, inline] = await Promise.all([stream(threaded), InlineFragmenter.create(OPTIONS).then(stream)]);
    expect(onThread.map((b) => b.length)).toEqual(inline.map((b) => b.length));
    onThread.forEach((bytes, i) => expect(Buffer.from(bytes).equals(Buffer.from(inline[i]!))).toBe(true));
    expect(new TextDecoder().decode(onThread[0]!.subarray(4, 8))).toBe("ftyp");
    expect(new TextDecoder().decode(onThread[1]!.subarray(4, 8))).toBe("moof");
    expect(new TextDecoder().decode(onThread.at(-1)!.subarray(4, 8))).toBe("mfra");
    const frames = await decodeFrames(concat(onThread), OPTIONS.width, OPTIONS.height);
    expect(frames).toHaveLength(17);
    // the square of frame 16 sits at x 52..67: yellow there, the gradient's blue beside it
    const [r, g, b] = pixel(frames[16]!, OPTIONS.width, 60, 32);
    expect(r).toBeGreaterThan(200);
    expect(g).toBeGreaterThan(200);
    expect(b).toBeLessThan(90);
  });

  test("takes each whole frame buffer over, and copies a frame that is a view on a larger buffer", async () => {
    const threaded = await ThreadedFragmenter.start(OPTIONS);
    const own = frame(0), frameBytes = own.length;
    const backing = new Uint8Array(frameBytes + 16);
    backing.set(frame(1), 8);
    const view = backing.subarray(8, 8 + frameBytes);
    try {
      const bytes = await threaded.fragment([own, view]);
      expect(bytes.length).toBeGreaterThan(0);
      expect(own.byteLength).toBe(0); // transferred to the thread
      expect(view.byteLength).toBe(frameBytes); // copied: the larger buffer stays the caller's
      expect(backing.byteLength).toBe(frameBytes + 16);
    } finally {
      threaded.close();
    }
  });

  test("a refused frame rejects that chunk and every later request with the encoder's message", async () => {
    const threaded = await ThreadedFragmenter.start(OPTIONS);
    try {
      const good = threaded.fragment(chunkFrames(0));
      const bad = threaded.fragment([frame(5).subarray(0, 100)]);
      const after = threaded.fragment(chunkFrames(2));
      expect((await good).length).toBeGreaterThan(0);
      expect((await rejection(bad)).message).toContain("H264Encoder: frame has 100 bytes, expected 18432 for 96x64");
      expect((await rejection(after)).message).toContain("H264Encoder: frame has 100 bytes");
      expect((await rejection(threaded.finish())).message).toContain("H264Encoder: frame has 100 bytes");
    } finally {
      threaded.close();
    }
  });

  test("an encoder the thread cannot create fails the first chunk with the reason", async () => {
    const threaded = await ThreadedFragmenter.start({ ...OPTIONS, width: 95 });
    try {
      expect((await rejection(threaded.fragment([frame(0)]))).message).toContain("H264Encoder: width must be even (4:2:0 chroma), got 95");
    } finally {
      threaded.close();
    }
  });

  test("a thread that dies fails the streams open on it, and the process goes on", async () => {
    const thread = new EncoderThread(new URL(`file://${join(import.meta.dir, "../fixtures/failing-encoder-thread.ts")}`));
    const threaded = await ThreadedFragmenter.start(OPTIONS, thread);
    try {
      const pending = threaded.fragment(chunkFrames(0));
      expect((await rejection(pending)).message).toContain("the stream encoder thread failed: ");
      expect((await rejection(pending)).message).toContain("encoder thread crashed on purpose");
      expect((await rejection(threaded.fragment(chunkFrames(1)))).message).toContain("encoder thread crashed on purpose");
    } finally {
      threaded.close();
      thread.stop();
    }
  });

  test("close() refuses pending work and frees the stream's encoder; the thread serves the next stream", async () => {
    const threaded = await ThreadedFragmenter.start({ ...OPTIONS, width: 1280, height: 720 });
    const pending = threaded.fragment(Array.from({ length: 8 }, (_, i) => frame(i, 1280, 720)));
    threaded.close();
    expect((await rejection(pending)).message).toContain("the stream's encoder was closed");
    expect((await rejection(threaded.fragment([frame(0)]))).message).toContain("the stream's encoder was closed");
    expect(EncoderThread.shared().openStreams).toBe(0);
    const next = await ThreadedFragmenter.start(OPTIONS);
    try {
      expect((await next.fragment(chunkFrames(0))).length).toBeGreaterThan(0);
    } finally {
      next.close();
    }
  });

  test("a stopped thread fails its open streams and ends; the next stream gets a new thread", async () => {
    const first = EncoderThread.shared();
    const threaded = await ThreadedFragmenter.start(OPTIONS);
    await threaded.ready;
    first.stop();
    await first.exited;
    expect((await rejection(threaded.fragment(chunkFrames(0)))).message).toContain("the stream encoder thread was stopped");
    threaded.close();
    const next = await ThreadedFragmenter.start(OPTIONS);
    try {
      expect(EncoderThread.shared()).not.toBe(first);
      expect((await next.fragment(chunkFrames(0))).length).toBeGreaterThan(0);
    } finally {
      next.close();
    }
  });
});
