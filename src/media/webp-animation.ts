// The first frame of an animated WebP. libwebp's still-image decoder (what @jsquash wraps) refuses
// animations, so the first ANMF frame is cut out of the container (RFC 9649 §5.7) as a still WebP of
// its own, decoded like any other, and placed on the canvas the file declares.
import { ascii, u24le, u32le } from "./bytes.ts";

const ANIMATION_FLAG = 0x02;
const ALPHA_FLAG = 0x10;

export interface WebpFirstFrame {
  /** The frame as a still WebP file. */
  still: Uint8Array;
  canvasWidth: number;
  canvasHeight: number;
  /** Where the frame sits on the canvas, and its size. */
  x: number;
  y: number;
  width: number;
  height: number;
}

interface Chunk {
  type: string;
  /** The whole chunk: header, payload and padding. */
  bytes: Uint8Array;
  payload: Uint8Array;
}

/** The chunks of a RIFF body from `start`; throws where a chunk runs past the end. */
function chunks(b: Uint8Array, start: number, end: number): Chunk[] {
  const found: Chunk[] = [];
  for (let pos = start; pos + 8 <= end; ) {
    const size = u32le(b, pos + 4);
    const payloadEnd = pos + 8 + size;
    if (payloadEnd > end) throw new Error(`truncated inside the ${ascii(b, pos, pos + 4).trim()} chunk`);
    const next = Math.min(end, payloadEnd + (size & 1));
    found.push({ type: ascii(b, pos, pos + 4), bytes: b.subarray(pos, next), payload: b.subarray(pos + 8, payloadEnd) });
    pos = next;
  }
  return found;
}

/**
 * For an animated WebP (VP8X with the animation flag), its first frame; null for a still WebP.
 * Throws Error with the reason when the animation is malformed.
 */
export function webpFirstFrame(b: Uint8Array): WebpFirstFrame | null {
  if (b.length < 30 || ascii(b, 12, 16) !== "VP8X" || (b[20]! & ANIMATION_FLAG) === 0) return null;
  const canvasWidth = u24le(b, 24) + 1;
  const canvasHeight = u24le(b, 27) + 1;
  const frame = chunks(b, 12, Math.min(b.length, 8 + u32le(b, 4))).find((c) => c.type === "ANMF");
  if (!frame) throw new Error("animation without any frame");
  const p = frame.payload;
  if (p.length < 16) throw new Error("truncated frame header");
  const [x, y, width, height] = [2 * u24le(p, 0), 2 * u24le(p, 3), u24le(p, 6) + 1, u24le(p, 9) + 1];
  if (x + width > canvasWidth || y + height > canvasHeight) {
    throw new Error(`the first frame (${width}x${height} at ${x},${y}) lies outside the ${canvasWidth}x${canvasHeight} canvas`);
  }
  // Frame data: an optional ALPH chunk and a VP8 bitstream, or a VP8L bitstream (unknown chunks skipped).
  const data = chunks(p, 16, p.length).filter((c) => c.type === "ALPH" || c.type === "VP8 " || c.type === "VP8L");
  if (!data.some((c) => c.type !== "ALPH")) throw new Error("the first frame has no image data");
  const hasAlpha = data.some((c) => c.type !== "VP8 ");
  const vp8x = new Uint8Array(18);
  vp8x.set([0x56, 0x50, 0x38, 0x58, 10, 0, 0, 0, hasAlpha ? ALPHA_FLAG : 0, 0, 0, 0]);
  vp8x.set(u24leBytes(width - 1), 12);
  vp8x.set(u24leBytes(height - 1), 15);
  const body = [vp8x, ...data.map((c) => c.bytes)];
  const size = 4 + body.reduce((n, part) => n + part.length, 0);
  const still = new Uint8Array(8 + size);
  still.set([0x52, 0x49, 0x46, 0x46, size & 255, (size >> 8) & 255, (size >> 16) & 255, size >>> 24, 0x57, 0x45, 0x42, 0x50]);
  let offset = 12;
  for (const part of body) {
    still.set(part, offset);
    offset += part.length;
  }
  return { still, canvasWidth, canvasHeight, x, y, width, height };
}

const u24leBytes = (v: number) => [v & 255, (v >> 8) & 255, (v >> 16) & 255];

/**
 * The decoded first frame placed on its canvas. The canvas starts fully transparent, as browsers
 * show it (the ANIM background colour is only a hint, RFC 9649 §5.7), so either blending method
 * leaves the frame's own pixels.
 */
export function placeOnCanvas(frame: WebpFirstFrame, pixels: Uint8ClampedArray): Uint8ClampedArray {
  if (frame.x === 0 && frame.y === 0 && frame.width === frame.canvasWidth && frame.height === frame.canvasHeight) return pixels;
  const canvas = new Uint8ClampedArray(frame.canvasWidth * frame.canvasHeight * 4);
  for (let row = 0; row < frame.height; row++) {
    canvas.set(pixels.subarray(row * frame.width * 4, (row + 1) * frame.width * 4), ((frame.y + row) * frame.canvasWidth + frame.x) * 4);
  }
  return canvas;
}
