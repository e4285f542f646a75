import { describe, expect, test } from "bun:test";
import { deflateSync } from "node:zlib";
import { InvalidMediaError } from "../../src/media/errors.ts";
import {
  decodeImage,
  encodeImage,
  IMAGE_MIME,
  imageDimensions,
  sniffImageFormat,
  type ImageFormat,
} from "../../src/media/images.ts";

const LIMITS = { maxPixels: 4_000_000, param: "image_reference[0].image_url" };
const FORMATS: ImageFormat[] = ["png", "jpeg", "webp"];

/** A smooth rgb24 test card with odd dimensions (so no codec block size divides it). */
function testCard(width = 67, height = 45): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      rgb[i] = (x * 255) / (width - 1);
      rgb[i + 1] = (y * 255) / (height - 1);
      rgb[i + 2] = 128 + 100 * Math.sin((x + y) / 9);
    }
  }
  return rgb;
}

function psnrRgb(rgb: Uint8Array, rgba: Uint8ClampedArray): number {
  let squared = 0;
  for (let p = 0; p < rgb.length / 3; p++) {
    for (let c = 0; c < 3; c++) squared += (rgb[p * 3 + c]! - rgba[p * 4 + c]!) ** 2;
  }
  const mse = squared / rgb.length;
  return mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse);
}

async function expectInvalid(bytes: Uint8Array, messagePart: RegExp, limits = LIMITS): Promise<InvalidMediaError> {
  const error = await decodeImage(bytes, limits).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidMediaError);
  expect((error as InvalidMediaError).param).toBe(limits.param);
  expect((error as InvalidMediaError).message).toMatch(messagePart);
  return error as InvalidMediaError;
}

// A small PNG writer for the decoder tests: every colour type, bit depth, filter and Adam7, so the
// decoder is checked against pixels we chose rather than against another decoder's output.
const u32 = (v: number) => [(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
function chunk(type: string, data: Uint8Array | number[]): number[] {
  const body = new Uint8Array([...Buffer.from(type, "latin1"), ...data]);
  return [...u32(data.length), ...body, ...u32(Bun.hash.crc32(body))];
}
function ihdr(width: number, height: number, bitDepth: number, colorType: number, interlace = 0): number[] {
  return chunk("IHDR", [...u32(width), ...u32(height), bitDepth, colorType, 0, 0, interlace]);
}
const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

interface PngSpec {
  width: number;
  height: number;
  colorType: number;
  bitDepth: number;
  channels: number;
  samples: number[]; // row-major, `channels` raw samples per pixel
  palette?: number[];
  trns?: number[];
  interlace?: boolean;
  filter?: number;
}

function writePng(s: PngSpec): Uint8Array {
  const passes = s.interlace
    ? [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]]
    : [[0, 0, 1, 1]];
  const raw: number[] = [];
  const unit = Math.max(1, (s.channels * s.bitDepth) >> 3);
  for (const [x0, y0, dx, dy] of passes) {
    let prev: number[] | null = null;
    for (let y = y0!; y < s.height; y += dy!) {
      const bits: number[] = [];
      for (let x = x0!; x < s.width; x += dx!) {
        for (let c = 0; c < s.channels; c++) {
          const v = s.samples[(y * s.width + x) * s.channels + c]!;
          for (let b = s.bitDepth - 1; b >= 0; b--) bits.push((v >> b) & 1);
        }
      }
      if (bits.length === 0) break;
      const row: number[] = [];
      for (let i = 0; i < bits.length; i += 8) row.push(bits.slice(i, i + 8).reduce((a, bit, k) => a | (bit << (7 - k)), 0));
      const f = s.filter ?? 0;
      raw.push(f);
      row.forEach((v, i) => {
        const left = i >= unit ? row[i - unit]! : 0;
        const up = prev ? prev[i]! : 0;
        const upLeft = prev && i >= unit ? prev[i - unit]! : 0;
        const [pa, pb, pc] = [left, up, upLeft].map((n) => Math.abs(left + up - upLeft - n));
        const paeth = pa! <= pb! && pa! <= pc! ? left : pb! <= pc! ? up : upLeft;
        const predictor = [0, left, up, (left + up) >> 1, paeth][f]!;
        raw.push((v - predictor) & 255);
      });
      prev = row;
    }
  }
  return new Uint8Array([
    ...SIGNATURE,
    ...ihdr(s.width, s.height, s.bitDepth, s.colorType, s.interlace ? 1 : 0),
    ...(s.palette ? chunk("PLTE", s.palette) : []),
    ...(s.trns ? chunk("tRNS", s.trns) : []),
    ...chunk("IDAT", deflateSync(new Uint8Array(raw))),
    ...chunk("IEND", []),
  ]);
}

describe("encode → decode round trip", () => {
  const rgb = testCard();
  for (const format of FORMATS) {
    test(`${format}: header dimensions, sniffing and pixels`, async () => {
      const encoded = await encodeImage(rgb, 67, 45, format);
      expect(sniffImageFormat(encoded)).toBe(format);
      expect(imageDimensions(encoded)).toEqual({ width: 67, height: 45, format });
      const image = await decodeImage(encoded, LIMITS);
      expect([image.width, image.height, image.data.length]).toEqual([67, 45, 67 * 45 * 4]);
      const psnr = psnrRgb(rgb, image.data);
      if (format === "png") expect(psnr).toBe(Infinity);
      else expect(psnr).toBeGreaterThan(35);
      for (let p = 0; p < 67 * 45; p++) expect(image.data[p * 4 + 3]).toBe(255);
    });
  }

  test("png keeps rgba input exactly, alpha included", async () => {
    const rgba = new Uint8Array(5 * 3 * 4).map((_, i) => (i * 37) % 256);
    const image = await decodeImage(await encodeImage(rgba, 5, 3, "png"), LIMITS);
    expect([...image.data]).toEqual([...rgba]);
  });

  test("png encodes a view into a larger buffer from its own offset", async () => {
    const backing = new Uint8Array(100 + 2 * 2 * 3).fill(7);
    const view = backing.subarray(100);
    view.set([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9]);
    const image = await decodeImage(await encodeImage(view, 2, 2, "png"), LIMITS);
    expect([...image.data]).toEqual([255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 9, 9, 9, 255]);
  });

  test("lower quality gives smaller files", async () => {
    for (const format of ["jpeg", "webp"] as const) {
      const high = await encodeImage(rgb, 67, 45, format, 95);
      const low = await encodeImage(rgb, 67, 45, format, 10);
      expect(low.length).toBeLessThan(high.length);
    }
  });

  test("a pixel buffer of the wrong size is a programming error, not bad media", async () => {
    await expect(encodeImage(new Uint8Array(10), 2, 2, "png")).rejects.toThrow(RangeError);
  });

  test("mime types", () => {
    expect(IMAGE_MIME).toEqual({ png: "image/png", jpeg: "image/jpeg", webp: "image/webp" });
  });
});

describe("rejecting bad input", () => {
  test("sniffing knows only png, jpeg and webp", () => {
    expect(sniffImageFormat(new Uint8Array(SIGNATURE))).toBe("png");
    expect(sniffImageFormat(new Uint8Array([0xff, 0xd8, 0xff, 0xe0]))).toBe("jpeg");
    expect(sniffImageFormat(new Uint8Array([...Buffer.from("RIFF\0\0\0\0WEBP")]))).toBe("webp");
    expect(sniffImageFormat(new Uint8Array([...Buffer.from("RIFF\0\0\0\0WAVE")]))).toBeNull();
    expect(sniffImageFormat(Buffer.from("GIF89a......"))).toBeNull();
    expect(sniffImageFormat(new Uint8Array())).toBeNull();
  });

  test("garbage bytes", async () => {
    await expectInvalid(new Uint8Array(64).fill(0x41), /not a PNG, JPEG or WebP image/);
    await expectInvalid(new Uint8Array(), /the image is empty \(0 bytes\)/);
  });

  for (const format of FORMATS) {
    test(`truncated ${format}`, async () => {
      const encoded = await encodeImage(testCard(), 67, 45, format);
      await expectInvalid(encoded.slice(0, encoded.length >> 1), new RegExp(`could not be decoded as`));
      await expectInvalid(encoded.slice(0, 20), /header is truncated or malformed/);
    });
  }

  test("the jpeg and webp decoders keep working after many failures", async () => {
    for (const format of ["jpeg", "webp"] as const) {
      const encoded = await encodeImage(testCard(), 67, 45, format);
      for (let i = 0; i < 40; i++) await expectInvalid(encoded.slice(0, encoded.length - 50 - i * 5), /could not be decoded/);
      const ok = await Promise.all([1, 2, 3].map(() => decodeImage(encoded, LIMITS)));
      for (const image of ok) expect(image.width).toBe(67);
    }
  });

  test("jpeg EXIF orientation is applied, as browsers do (the axes may swap)", async () => {
    const rgb = new Uint8Array(6 * 4 * 3);
    rgb.set([255, 255, 255]); // a white top-left pixel on black
    const jpeg = await encodeImage(rgb, 6, 4, "jpeg", 100);
    // APP1 "Exif": a big-endian TIFF header and one IFD entry, Orientation (0x0112) = 6 (rotate 90° clockwise).
    const tiff = [0x4d, 0x4d, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0];
    const app1 = [0xff, 0xe1, 0, 2 + 6 + tiff.length, ...Buffer.from("Exif\0\0"), ...tiff];
    const rotated = new Uint8Array([0xff, 0xd8, ...app1, ...jpeg.subarray(2)]);
    expect(imageDimensions(rotated)).toEqual({ width: 6, height: 4, format: "jpeg" });
    const image = await decodeImage(rotated, LIMITS);
    expect([image.width, image.height]).toEqual([4, 6]);
    expect(image.data[0]).toBeLessThan(30); // top-left is now black
    expect(image.data[(image.width - 1) * 4]).toBeGreaterThan(225); // the white pixel moved to the top-right
  });

  test("a png header claiming 100000x100000 is refused before any decoding", async () => {
    // A real header with nothing behind it: decoding would fail differently ("no IEND chunk").
    const bomb = new Uint8Array([...SIGNATURE, ...ihdr(100_000, 100_000, 8, 6)]);
    expect(imageDimensions(bomb)).toEqual({ width: 100_000, height: 100_000, format: "png" });
    await expectInvalid(bomb, /100000x100000 \(10000000000 pixels\), over the limit of 4000000 pixels/);
  });

  test("jpeg and webp headers over the pixel cap are refused too", async () => {
    const sof = [0xff, 0xc0, 0x00, 0x11, 0x08, 0xff, 0xff, 0xff, 0xff, 0x03];
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, ...sof]);
    expect(imageDimensions(jpeg)).toEqual({ width: 65535, height: 65535, format: "jpeg" });
    await expectInvalid(jpeg, /65535x65535/);
    const webp = new Uint8Array([...Buffer.from("RIFF\0\0\0\0WEBPVP8X"), 10, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x3f, 0, 0xff, 0x3f, 0]);
    expect(imageDimensions(webp)).toEqual({ width: 16384, height: 16384, format: "webp" });
    await expectInvalid(webp, /16384x16384/);
  });

  test("zero-sized images", async () => {
    await expectInvalid(new Uint8Array([...SIGNATURE, ...ihdr(0, 10, 8, 6)]), /zero width or height/);
  });

  test("a png whose data inflates past its declared size (zlib bomb)", async () => {
    const bomb = new Uint8Array([
      ...SIGNATURE,
      ...ihdr(10, 10, 8, 6),
      ...chunk("IDAT", deflateSync(new Uint8Array(20_000_000))),
      ...chunk("IEND", []),
    ]);
    await expectInvalid(bomb, /could not be decoded as PNG: image data/);
  });

  test("a png with a corrupted chunk checksum", async () => {
    const png = await encodeImage(testCard(), 67, 45, "png");
    png[40] = png[40]! ^ 0xff; // inside IDAT
    await expectInvalid(png, /bad CRC/);
  });
});

describe("png decoding across colour types", () => {
  const W = 13;
  const H = 5;
  const pixels = (f: (x: number, y: number) => number[]) =>
    Array.from({ length: W * H }, (_, i) => f(i % W, Math.floor(i / W))).flat();

  for (const bitDepth of [1, 2, 4, 8, 16]) {
    test(`greyscale, ${bitDepth} bit`, async () => {
      const max = 2 ** bitDepth - 1;
      const samples = pixels((x, y) => [(x * 3 + y) % (max + 1)]);
      const png = writePng({ width: W, height: H, colorType: 0, bitDepth, channels: 1, samples, filter: 1 });
      const image = await decodeImage(png, LIMITS);
      const expected = samples.flatMap((v) => {
        const g = Math.round((v * 255) / max);
        return [g, g, g, 255];
      });
      expect([...image.data]).toEqual(expected);
    });
  }

  test("indexed 2 bit with tRNS, interlaced", async () => {
    const palette = [255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9];
    const trns = [0, 128];
    const samples = pixels((x, y) => [(x + 2 * y) % 4]);
    const spec = { width: W, height: H, colorType: 3, bitDepth: 2, channels: 1, samples, palette, trns };
    const png = writePng({ ...spec, interlace: true, filter: 4 });
    const image = await decodeImage(png, LIMITS);
    const expected = samples.flatMap((i) => [...palette.slice(3 * i, 3 * i + 3), trns[i] ?? 255]);
    expect([...image.data]).toEqual(expected);
  });

  test("truecolour 16 bit with a tRNS colour key, interlaced", async () => {
    const rgb16 = (x: number, y: number) => [x * 5000, y * 257 * 40, (x * y * 999) % 65536];
    const samples = pixels(rgb16);
    const trns = samples.slice(0, 3).flatMap((v) => [v >> 8, v & 255]); // pixel (0,0) becomes transparent
    const spec = { width: W, height: H, colorType: 2, bitDepth: 16, channels: 3, samples, trns };
    const png = writePng({ ...spec, interlace: true, filter: 3 });
    const image = await decodeImage(png, LIMITS);
    const expected = pixels((x, y) => [...rgb16(x, y).map((v) => Math.round(v / 257)), x === 0 && y === 0 ? 0 : 255]);
    expect([...image.data]).toEqual(expected);
  });

  test("greyscale + alpha and rgba, every filter, tiny interlaced sizes", async () => {
    for (const [width, height] of [[1, 1], [3, 2], [9, 9]]) {
      for (const filter of [0, 1, 2, 3, 4]) {
        const rgba = Array.from({ length: width * height * 4 }, (_, i) => (i * 53 + filter) % 256);
        const spec = { width, height, colorType: 6, bitDepth: 8, channels: 4, samples: rgba };
        const rgbaPng = writePng({ ...spec, interlace: true, filter });
        expect([...(await decodeImage(rgbaPng, LIMITS)).data]).toEqual(rgba);
        const ga = rgba.slice(0, width * height * 2);
        const gaPng = writePng({ width, height, colorType: 4, bitDepth: 8, channels: 2, samples: ga, filter });
        const expected = Array.from({ length: width * height }, (_, p) => [ga[2 * p]!, ga[2 * p]!, ga[2 * p]!, ga[2 * p + 1]!]);
        expect([...(await decodeImage(gaPng, LIMITS)).data]).toEqual(expected.flat());
      }
    }
  });

  test("indexed image without a palette", async () => {
    const png = writePng({ width: 2, height: 2, colorType: 3, bitDepth: 8, channels: 1, samples: [0, 0, 0, 0] });
    await expectInvalid(png, /without a PLTE chunk/);
  });
});
