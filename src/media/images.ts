// PNG / JPEG / WebP encode and decode.
//
// Encoding and JPEG/WebP decoding use the Squoosh codecs repackaged as @jsquash (WebAssembly). Their
// default init fetches the .wasm by URL, which neither `bun test` nor a compiled executable can do, so
// each .wasm is imported as an embedded file, compiled once per process and handed to the package's
// `init`. PNG decoding is ours (png-decode.ts, TypeScript + node:zlib inflate): the @jsquash PNG decoder leaks
// its input and working buffers inside its wasm memory on every failed decode and cannot be
// re-instantiated (measured: ~5.5k truncated PNGs grow it to 4 GiB, after which every PNG decode in
// the process fails). Client references are untrusted, so that decoder must never see them.

import encodePngWasm, { init as initPngEncode } from "@jsquash/png/encode.js";
import encodeJpegWasm, { init as initJpegEncode } from "@jsquash/jpeg/encode.js";
import decodeJpegWasm, { init as initJpegDecode } from "@jsquash/jpeg/decode.js";
import encodeWebpWasm, { init as initWebpEncode } from "@jsquash/webp/encode.js";
import decodeWebpWasm, { init as initWebpDecode } from "@jsquash/webp/decode.js";
// `with { type: "file" }` makes `bun build --compile` embed each file; the import is its path.
// @ts-ignore -- no ambient module type for *.wasm
import pngWasmPath from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm" with { type: "file" };
// @ts-ignore
import jpegEncWasmPath from "@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm" with { type: "file" };
// @ts-ignore
import jpegDecWasmPath from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm" with { type: "file" };
// @ts-ignore
import webpEncSimdWasmPath from "@jsquash/webp/codec/enc/webp_enc_simd.wasm" with { type: "file" };
// @ts-ignore
import webpEncWasmPath from "@jsquash/webp/codec/enc/webp_enc.wasm" with { type: "file" };
// @ts-ignore
import webpDecWasmPath from "@jsquash/webp/codec/dec/webp_dec.wasm" with { type: "file" };
import { InvalidMediaError } from "./errors.ts";
import { ascii, u16be, u16le, u24le, u32be, u32le } from "./bytes.ts";
import { describeOtherFormat } from "./other-formats.ts";
import { decodePng, type RgbaImage } from "./png-decode.ts";
import { placeOnCanvas, webpFirstFrame } from "./webp-animation.ts";

export type ImageFormat = "png" | "jpeg" | "webp";

export const IMAGE_MIME: Record<ImageFormat, string> = {
  png: "image/png",
  jpeg: "image/jpeg",
  webp: "image/webp",
};

const FORMAT_LABEL: Record<ImageFormat, string> = { png: "PNG", jpeg: "JPEG", webp: "WebP" };
const DEFAULT_QUALITY = 90;

// ---------------------------------------------------------------------------------------------
// Sniffing and header-only dimensions

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];


export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (bytes.length >= 8 && PNG_SIGNATURE.every((v, i) => bytes[i] === v)) return "png";
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") return "webp";
  return null;
}

/** Width and height read from the header alone (no decoding); null when the header is unreadable. */
export function imageDimensions(bytes: Uint8Array): { width: number; height: number; format: ImageFormat } | null {
  const format = sniffImageFormat(bytes);
  if (format === null) return null;
  const size = format === "png" ? pngDimensions(bytes) : format === "jpeg" ? jpegDimensions(bytes) : webpDimensions(bytes);
  return size && { ...size, format };
}

function pngDimensions(b: Uint8Array): { width: number; height: number } | null {
  // The signature is followed by the IHDR chunk: length (4), "IHDR", width (4), height (4), ...
  if (b.length < 24 || ascii(b, 12, 16) !== "IHDR") return null;
  return { width: u32be(b, 16), height: u32be(b, 20) };
}

/** SOFn markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not. */
const isStartOfFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function jpegDimensions(b: Uint8Array): { width: number; height: number } | null {
  const frame = jpegFrameHeader(b);
  return frame && { width: frame.width, height: frame.height };
}

/** The JPEG frame header (SOFn): size and number of colour components (1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK). */
function jpegFrameHeader(b: Uint8Array): { width: number; height: number; components: number } | null {
  let pos = 2; // after SOI
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) return null;
    const marker = b[pos + 1]!;
    if (marker === 0xff) {
      pos += 1; // fill byte
      continue;
    }
    pos += 2;
    if (marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no payload
    if (marker === 0xd9 || marker === 0xda) return null; // EOI or scan data before any frame header
    const length = u16be(b, pos);
    if (length < 2) return null;
    if (isStartOfFrame(marker)) {
      // length (2), precision (1), height (2), width (2), components (1)
      return pos + 8 <= b.length ? { height: u16be(b, pos + 3), width: u16be(b, pos + 5), components: b[pos + 7]! } : null;
    }
    pos += length;
  }
  return null;
}

function webpDimensions(b: Uint8Array): { width: number; height: number } | null {
  const chunk = b.length >= 16 ? ascii(b, 12, 16) : "";
  if (chunk === "VP8 " && b.length >= 30) {
    // frame tag (3) then the key-frame start code 9D 01 2A, then 14-bit width and height
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
    return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
  }
  if (chunk === "VP8L" && b.length >= 25) {
    if (b[20] !== 0x2f) return null;
    const bits = u32le(b, 21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8X" && b.length >= 30) return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
  return null;
}

// ---------------------------------------------------------------------------------------------
// The wasm codecs, compiled lazily and at most once per process

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

const compiledModules = new Map<string, Promise<WebAssembly.Module>>();
function compileWasm(path: string): Promise<WebAssembly.Module> {
  let module = compiledModules.get(path);
  if (!module) {
    module = Bun.file(path).arrayBuffer().then((bytes) => WebAssembly.compile(bytes));
    compiledModules.set(path, module);
  }
  return module;
}

/** The jpeg/webp `init(module, moduleOverrides)` as implemented; their d.ts only declares the overrides. */
type EmscriptenInit = (
  module: WebAssembly.Module,
  overrides?: { print?(line: string): void; printErr?(line: string): void },
) => Promise<unknown>;

const pngEncoder = once(async () => {
  await initPngEncode(await compileWasm(pngWasmPath));
  return encodePngWasm;
});
const jpegEncoder = once(async () => {
  await (initJpegEncode as unknown as EmscriptenInit)(await compileWasm(jpegEncWasmPath));
  return encodeJpegWasm;
});
const webpEncoder = once(async () => {
  // The package picks its SIMD or plain glue with a WebAssembly.validate probe; hand it the matching
  // binary (Bun always takes the SIMD one, the plain one is the fallback the package would choose).
  const simd = await Bun.file(webpEncSimdWasmPath).arrayBuffer();
  const module = WebAssembly.validate(simd) ? await WebAssembly.compile(simd) : await compileWasm(webpEncWasmPath);
  await (initWebpEncode as unknown as EmscriptenInit)(module);
  return encodeWebpWasm;
});

/**
 * An Emscripten decoder run one call at a time. libjpeg reports through stderr (captured here, since
 * "Premature end of JPEG file" is only a warning and the image would come back gray-filled) and
 * bails out with exit(), which leaves the instance's heap behind; after any failure the next call
 * starts a fresh instance from the compiled module.
 */
class EmscriptenDecoder {
  private ready: Promise<unknown> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private messages: string[] = [];

  constructor(
    private readonly wasmPath: string,
    private readonly init: EmscriptenInit,
    private readonly decode: (buffer: ArrayBuffer) => Promise<ImageData>,
  ) {}

  run(bytes: Uint8Array): Promise<{ image: ImageData; messages: string[] }> {
    const result = this.queue.then(() => this.decodeNow(bytes));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async decodeNow(bytes: Uint8Array) {
    this.ready ??= compileWasm(this.wasmPath).then((module) =>
      this.init(module, { print: () => {}, printErr: (line) => this.messages.push(line) }),
    );
    await this.ready;
    this.messages = [];
    try {
      const image = await this.decode(bytes.slice().buffer);
      return { image, messages: this.messages };
    } catch (error) {
      this.ready = null;
      throw new Error(this.messages.join("; ") || (error as Error).message || String(error));
    }
  }
}

const jpegDecoder = new EmscriptenDecoder(jpegDecWasmPath, initJpegDecode as unknown as EmscriptenInit, (buffer) =>
  // Apply EXIF orientation, as browsers do, so phone photos arrive upright.
  decodeJpegWasm(buffer, { preserveOrientation: true }),
);
const webpDecoder = new EmscriptenDecoder(webpDecWasmPath, initWebpDecode as unknown as EmscriptenInit, decodeWebpWasm);

// ---------------------------------------------------------------------------------------------
// Encode

/** rgb24 (w*h*3) or rgba (w*h*4) → encoded bytes. quality 0..100 for jpeg/webp (default 90). */
export async function encodeImage(
  pixels: Uint8Array,
  width: number,
  height: number,
  format: ImageFormat,
  quality = DEFAULT_QUALITY,
): Promise<Uint8Array<ArrayBuffer>> {
  const image = { data: toRgba(pixels, width, height), width, height, colorSpace: "srgb" } as ImageData;
  const q = Math.min(100, Math.max(0, Math.round(quality)));
  switch (format) {
    case "png":
      return new Uint8Array(await (await pngEncoder())(image));
    case "jpeg":
      return new Uint8Array(await (await jpegEncoder())(image, { quality: q }));
    case "webp":
      return new Uint8Array(await (await webpEncoder())(image, { quality: q }));
  }
}

/** A fresh, exactly sized RGBA buffer: the PNG codec encodes `data.buffer` whole, offsets ignored. */
function toRgba(pixels: Uint8Array, width: number, height: number): Uint8ClampedArray {
  const count = width * height;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`encodeImage: invalid size ${width}x${height}`);
  }
  if (pixels.length === count * 4) return new Uint8ClampedArray(pixels);
  if (pixels.length !== count * 3) {
    throw new RangeError(`encodeImage: ${pixels.length} bytes is neither rgb24 nor rgba for ${width}x${height}`);
  }
  const rgba = new Uint8ClampedArray(count * 4);
  for (let i = 0, j = 0; i < count * 3; i += 3, j += 4) {
    rgba[j] = pixels[i]!;
    rgba[j + 1] = pixels[i + 1]!;
    rgba[j + 2] = pixels[i + 2]!;
    rgba[j + 3] = 255;
  }
  return rgba;
}

// ---------------------------------------------------------------------------------------------
// Decode

/**
 * Sniffs the format, reads the size from the header and rejects zero-sized images and images over
 * `maxPixels` before any decoding (decompression bombs), then decodes to RGBA. An animation gives its
 * first frame (an APNG its default image, which encoders make the first frame). Every failure is an
 * InvalidMediaError naming `param`.
 */
export async function decodeImage(bytes: Uint8Array, opts: { maxPixels: number; param: string }): Promise<RgbaImage> {
  const { maxPixels, param } = opts;
  const fail = (reason: string) => new InvalidMediaError(`${param}: ${reason}`, param);
  const format = sniffImageFormat(bytes);
  if (bytes.length === 0) throw fail("the image is empty (0 bytes)");
  if (format === null) {
    const other = describeOtherFormat(bytes);
    throw fail(other ? `this is ${other}; send a PNG, JPEG or WebP image` : "not a PNG, JPEG or WebP image");
  }
  const label = FORMAT_LABEL[format];
  const size = imageDimensions(bytes);
  if (size === null) throw fail(`${label} header is truncated or malformed`);
  const { width, height } = size;
  if (width === 0 || height === 0) throw fail(`${label} image has zero width or height`);
  if (width * height > maxPixels) {
    throw fail(`image is ${width}x${height} (${width * height} pixels), over the limit of ${maxPixels} pixels`);
  }

  if (format === "jpeg" && jpegFrameHeader(bytes)?.components === 4) {
    throw fail("this is a CMYK JPEG (print colours), which kino does not decode; save it as an RGB JPEG or a PNG");
  }

  let image: RgbaImage;
  try {
    const animation = format === "webp" ? webpFirstFrame(bytes) : null;
    if (format === "png") {
      image = decodePng(bytes);
    } else if (animation) {
      const { image: frame } = await webpDecoder.run(animation.still);
      if (frame.width !== animation.width || frame.height !== animation.height) {
        throw new Error(`the first frame decoded to ${frame.width}x${frame.height} but its header says ${animation.width}x${animation.height}`);
      }
      image = { width: animation.canvasWidth, height: animation.canvasHeight, data: placeOnCanvas(animation, frame.data) };
    } else {
      const decoded = await (format === "jpeg" ? jpegDecoder : webpDecoder).run(bytes);
      // Truncation is only a libjpeg warning; the rest of the image would be filled with gray.
      const truncation = decoded.messages.find((m) => /premature end/i.test(m));
      if (truncation) throw new Error(truncation);
      image = { width: decoded.image.width, height: decoded.image.height, data: decoded.image.data };
    }
  } catch (error) {
    throw fail(`could not be decoded as ${label}: ${(error as Error).message}`);
  }
  // EXIF orientation may swap the axes of a JPEG; anything else disagreeing with the header is corrupt.
  const swapped = image.width === height && image.height === width;
  if (!(image.width === width && image.height === height) && !(format === "jpeg" && swapped)) {
    throw fail(`${label} decoded to ${image.width}x${image.height} but its header says ${width}x${height}`);
  }
  return image;
}

/**
 * The image as opaque rgb24: every pixel composited over black by its alpha, which is what its
 * colour means where alpha counts as coverage (premultiplied), and never the colour an editor left
 * under fully transparent pixels. A video frame has no alpha, so one rule for every model.
 */
export function compositeOverBlack(image: RgbaImage): Uint8Array {
  const { data } = image;
  const rgb = new Uint8Array(image.width * image.height * 3);
  for (let p = 0, q = 0; q < data.length; p += 3, q += 4) {
    const alpha = data[q + 3]!;
    if (alpha === 255) {
      rgb[p] = data[q]!;
      rgb[p + 1] = data[q + 1]!;
      rgb[p + 2] = data[q + 2]!;
    } else if (alpha !== 0) {
      rgb[p] = Math.round((data[q]! * alpha) / 255);
      rgb[p + 1] = Math.round((data[q + 1]! * alpha) / 255);
      rgb[p + 2] = Math.round((data[q + 2]! * alpha) / 255);
    }
  }
  return rgb;
}
