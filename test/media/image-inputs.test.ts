// Images clients send beyond plain PNG/JPEG/WebP stills: animations (the first frame), transparency
// (composited over black when stored), print and other formats (refused by name), empty files.
import { describe, expect, test } from "bun:test";
import { deflateSync } from "node:zlib";
import { InvalidMediaError } from "../../src/media/errors.ts";
import { compositeOverBlack, decodeImage } from "../../src/media/images.ts";
import { animatedWebp, solid } from "./helpers/webp-animation.ts";

const LIMITS = { maxPixels: 1 << 24, param: "image_reference.image_url" };

async function refusal(bytes: Uint8Array): Promise<string> {
  const error = await decodeImage(bytes, LIMITS).then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(InvalidMediaError);
  expect((error as InvalidMediaError).param).toBe(LIMITS.param);
  return (error as InvalidMediaError).message;
}

const pixel = (data: Uint8ClampedArray, width: number, x: number, y: number) => [...data.subarray((y * width + x) * 4, (y * width + x) * 4 + 4)];

// Made with Pillow 12.3 (libwebp, libjpeg): red then blue, lossless, 8x8; and an 8x8 Adobe CMYK JPEG.
const LIBWEBP_ANIMATION = "UklGRoQAAABXRUJQVlA4WAoAAAACAAAABwAABwAAQU5JTQYAAAAAAAAAAABBTk1GKAAAAAAAAAAAAAcAAAcAAGQAAAJWUDhMDwAAAC8HwAEABxD9j/4HIqL/AQBBTk1GKAAAAAAAAAAAAAcAAAcAAGQAAABWUDhMDwAAAC8HwAEABxDR//4HIqL/AQA=";
const CMYK_JPEG =
  "/9j/7gAOQWRvYmUAZAAAAAAA/9sAQwAIBgYHBgUIBwcHCQkICgwUDQwLCwwZEhMPFB0aHx4dGhwcICQuJyAiLCMcHCg3KSwwMTQ0NB8nOT04MjwuMzQy/8AAFAgACAAIBEMRAE0RAFkRAEsRAP/EAB8AAAEFAQEBAQEBAAAAAAAAAAABAgMEBQYHCAkKC//EALUQAAIBAwMCBAMFBQQEAAABfQECAwAEEQUSITFBBhNRYQcicRQygZGhCCNCscEVUtHwJDNicoIJChYXGBkaJSYnKCkqNDU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6g4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2drh4uPk5ebn6Onq8fLz9PX29/j5+v/aAA4EQwBNAFkASwAAPwD3+vn+vn+vf6//2Q==";
const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));

describe("animations give their first frame", () => {
  test("an animated WebP from libwebp", async () => {
    const image = await decodeImage(b64(LIBWEBP_ANIMATION), LIMITS);
    expect([image.width, image.height]).toEqual([8, 8]);
    expect(pixel(image.data, 8, 0, 0)).toEqual([255, 0, 0, 255]);
    expect(pixel(image.data, 8, 7, 7)).toEqual([255, 0, 0, 255]);
  });

  test("a first frame smaller than the canvas sits at its offset on a transparent canvas; alpha (ALPH + VP8) is kept", async () => {
    const first = { ...solid(6, 4, [0, 200, 0, 128]), x: 4, y: 2 };
    const second = solid(16, 10, [0, 0, 255, 255]);
    const image = await decodeImage(await animatedWebp(16, 10, [first, second]), LIMITS);
    expect([image.width, image.height]).toEqual([16, 10]);
    expect(pixel(image.data, 16, 0, 0)).toEqual([0, 0, 0, 0]);
    const inside = pixel(image.data, 16, 6, 3);
    expect(inside[1]!).toBeGreaterThan(185);
    expect(inside[3]!).toBe(128);
    expect(pixel(image.data, 16, 10, 3)).toEqual([0, 0, 0, 0]); // just right of the frame
    expect(pixel(image.data, 16, 6, 6)).toEqual([0, 0, 0, 0]); // just below it
  });

  test("a frame outside its canvas, an animation without frames, a truncated one", async () => {
    const outside = await animatedWebp(8, 8, [{ ...solid(6, 6, [255, 0, 0, 255]), x: 4, y: 0 }]);
    expect(await refusal(outside)).toContain("lies outside the 8x8 canvas");
    const noFrames = await animatedWebp(8, 8, []);
    expect(await refusal(noFrames)).toContain("animation without any frame");
    const whole = b64(LIBWEBP_ANIMATION);
    expect(await refusal(whole.subarray(0, whole.length - 10))).toContain("could not be decoded as WebP: truncated");
  });

  test("an animated PNG gives its default image, the first frame", async () => {
    const image = await decodeImage(apng([255, 0, 0], [0, 0, 255]), LIMITS);
    expect([image.width, image.height]).toEqual([4, 4]);
    expect(pixel(image.data, 4, 2, 2)).toEqual([255, 0, 0, 255]);
  });
});

/** An APNG of two solid 4x4 rgb frames: `first` as the default image (IDAT, frame 0), `second` as fdAT. */
function apng(first: number[], second: number[]): Uint8Array {
  const u32 = (v: number) => [(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
  const chunk = (type: string, data: number[]) => {
    const body = [...Buffer.from(type, "latin1"), ...data];
    return [...u32(data.length), ...body, ...u32(Bun.hash.crc32(new Uint8Array(body)))];
  };
  const fctl = (seq: number) => chunk("fcTL", [...u32(seq), ...u32(4), ...u32(4), ...u32(0), ...u32(0), 0, 10, 0, 100, 0, 0]);
  const frame = (rgb: number[]) => {
    const raw = new Uint8Array(4 * (1 + 4 * 3)); // 4 rows: filter byte 0, then 4 pixels
    for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) raw.set(rgb, y * 13 + 1 + x * 3);
    return [...deflateSync(raw)];
  };
  return new Uint8Array([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a,
    ...chunk("IHDR", [...u32(4), ...u32(4), 8, 2, 0, 0, 0]),
    ...chunk("acTL", [...u32(2), ...u32(0)]),
    ...fctl(0),
    ...chunk("IDAT", frame(first)),
    ...fctl(1),
    ...chunk("fdAT", [...u32(2), ...frame(second)]),
    ...chunk("IEND", []),
  ]);
}

describe("formats kino does not decode are refused by name", () => {
  test("a CMYK JPEG (before libjpeg's 'Unsupported color conversion request')", async () => {
    expect(await refusal(b64(CMYK_JPEG))).toBe(
      "image_reference.image_url: this is a CMYK JPEG (print colours), which kino does not decode; save it as an RGB JPEG or a PNG",
    );
  });

  test("GIF, BMP, TIFF, SVG, HEIC, AVIF, PDF; an empty file; text", async () => {
    const cases: [Uint8Array, string][] = [
      [Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "a GIF image"],
      [new Uint8Array([0x42, 0x4d, ...new Array(60).fill(0)]), "a BMP image"],
      [new Uint8Array([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0]), "a TIFF image"],
      [Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'), "an SVG image (vector graphics)"],
      [Buffer.from("\0\0\0\x18ftypheic\0\0\0\0mif1heic"), "a HEIC/HEIF image"],
      [Buffer.from("\0\0\0\x1cftypavif\0\0\0\0avifmif1"), "an AVIF image"],
      [Buffer.from("%PDF-1.7\n"), "a PDF document"],
    ];
    for (const [bytes, name] of cases) {
      expect(await refusal(bytes)).toBe(`image_reference.image_url: this is ${name}; send a PNG, JPEG or WebP image`);
    }
    expect(await refusal(new Uint8Array())).toBe("image_reference.image_url: the image is empty (0 bytes)");
    expect(await refusal(Buffer.from("hello, world"))).toBe("image_reference.image_url: not a PNG, JPEG or WebP image");
  });
});

describe("transparency", () => {
  test("composited over black: opaque kept, transparent black whatever colour lies under it, partial scaled", () => {
    const data = new Uint8ClampedArray([10, 20, 30, 255, 0, 220, 0, 0, 200, 100, 50, 128]);
    expect([...compositeOverBlack({ width: 3, height: 1, data })]).toEqual([10, 20, 30, 0, 0, 0, 100, 50, 25]);
  });
});
