// Client images are decoded and re-encoded on the image thread (image-thread-host.ts), not on the
// server's event loop: while a 16-megapixel picture is prepared, timers on the main thread keep
// firing; its result and its refusals are what decodeImage would give.
import { expect, test } from "bun:test";
import { deflateSync } from "node:zlib";
import { InvalidMediaError } from "../../src/media/errors.ts";
import { decodeImage } from "../../src/media/images.ts";
import { prepareImage } from "../../src/media/image-thread-host.ts";

/** A PNG of `width` × `height` RGB pixels, every row the given gradient (cheap to make, costly to decode). */
function gradientPng(width: number, height: number): Uint8Array {
  const row = new Uint8Array(1 + width * 3);
  for (let x = 0; x < width; x++) row.set([x % 256, (x >> 4) % 256, 128], 1 + x * 3);
  const raw = new Uint8Array(row.length * height);
  for (let y = 0; y < height; y++) raw.set(row, y * row.length);
  const chunk = (type: string, data: Uint8Array) => {
    const body = new Uint8Array([...new TextEncoder().encode(type), ...data]);
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    out.set(body, 4);
    view.setUint32(8 + data.length, Bun.hash.crc32(body));
    return out;
  };
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, width);
  new DataView(ihdr.buffer).setUint32(4, height);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", new Uint8Array(0))];
  return new Uint8Array(Buffer.concat(parts));
}

test("a 16-megapixel image is prepared while the main thread's timers keep firing", async () => {
  const png = gradientPng(4096, 4096);
  await prepareImage(gradientPng(8, 8), 1 << 24, "image"); // the thread and its codecs started
  let last = performance.now(), longest = 0, ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
  }, 10);
  const started = performance.now();
  const image = await prepareImage(png, 1 << 24, "image");
  const took = performance.now() - started;
  clearInterval(timer);
  expect({ width: image.width, height: image.height }).toEqual({ width: 4096, height: 4096 });
  expect(took).toBeGreaterThan(300); // long enough that a stall would show
  expect(ticks).toBeGreaterThan(took / 10 / 4);
  expect(longest).toBeLessThan(150);
  // the PNG is the image composited over black: this one is opaque, so its pixels as given
  const back = await decodeImage(image.png, { maxPixels: 1 << 24, param: "image" });
  expect([...back.data.subarray(0, 8)]).toEqual([0, 0, 128, 255, 1, 0, 128, 255]);
}, 60_000);

test("a bad image is refused by the thread with decodeImage's error, naming the field", async () => {
  const err = await prepareImage(new TextEncoder().encode("GIF89a not really"), 1 << 24, "image_reference.image_url").catch((e) => e);
  expect(err).toBeInstanceOf(InvalidMediaError);
  expect(err.param).toBe("image_reference.image_url");
  expect(err.message).toContain("image_reference.image_url: this is a GIF");
  const big = await prepareImage(gradientPng(64, 64), 1000, "image").catch((e) => e);
  expect(big).toBeInstanceOf(InvalidMediaError);
  expect(big.message).toContain("over the limit of 1000 pixels");
});

test("the caller's bytes stay usable after the thread took its copy", async () => {
  const png = gradientPng(16, 16);
  const before = png.slice();
  await prepareImage(png, 1 << 24, "image");
  expect(png).toEqual(before);
});
