// PNG decoding in TypeScript (node:zlib inflate). Client references are untrusted and the @jsquash
// PNG decoder leaks its wasm memory on every failed decode (see images.ts), so PNGs never reach it.
import { inflateSync } from "node:zlib";
import { ascii, u16be, u32be } from "./bytes.ts";

/** Decoded pixels, RGBA8, row-major. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}

interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlaced: boolean;
}

/** Samples per pixel and the bit depths the PNG spec allows, by colour type. */
const PNG_COLOR_TYPES: Record<number, { channels: number; depths: number[] }> = {
  0: { channels: 1, depths: [1, 2, 4, 8, 16] }, // greyscale
  2: { channels: 3, depths: [8, 16] }, // truecolour
  3: { channels: 1, depths: [1, 2, 4, 8] }, // indexed
  4: { channels: 2, depths: [8, 16] }, // greyscale + alpha
  6: { channels: 4, depths: [8, 16] }, // truecolour + alpha
};

/** Adam7 passes: x start, y start, x step, y step. A non-interlaced image is one pass of step 1. */
const ADAM7 = [
  [0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2],
] as const;

/** Decodes a whole PNG (the default image of an APNG) to RGBA8; throws Error with the reason. */
export function decodePng(bytes: Uint8Array): RgbaImage {
  let header: PngHeader | null = null;
  let palette: Uint8Array | null = null;
  let transparency: Uint8Array | null = null;
  const idat: Uint8Array[] = [];
  let pos = 8;
  for (;;) {
    if (pos + 12 > bytes.length) throw new Error("truncated (no IEND chunk)");
    const length = u32be(bytes, pos);
    const type = ascii(bytes, pos + 4, pos + 8);
    const end = pos + 8 + length;
    if (end + 4 > bytes.length) throw new Error(`truncated inside the ${type} chunk`);
    if (Bun.hash.crc32(bytes.subarray(pos + 4, end)) !== u32be(bytes, end)) throw new Error(`bad CRC in the ${type} chunk`);
    const data = bytes.subarray(pos + 8, end);
    pos = end + 4;
    if (header === null && type !== "IHDR") throw new Error("the first chunk is not IHDR");
    if (type === "IHDR") header = parsePngHeader(data);
    else if (type === "PLTE") palette = data;
    else if (type === "tRNS") transparency = data;
    else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    else if ((type.charCodeAt(0) & 0x20) === 0) throw new Error(`unknown critical chunk ${type}`);
  }
  if (header === null) throw new Error("no IHDR chunk");
  if (header.colorType === 3 && palette === null) throw new Error("indexed image without a PLTE chunk");
  if (idat.length === 0) throw new Error("no image data");

  const { width, height, bitDepth, colorType } = header;
  const bitsPerPixel = PNG_COLOR_TYPES[colorType]!.channels * bitDepth;
  const filterUnit = Math.max(1, bitsPerPixel >> 3);
  const passes = (header.interlaced ? ADAM7 : [[0, 0, 1, 1] as const]).map(([x0, y0, dx, dy]) => {
    const columns = width > x0 ? Math.ceil((width - x0) / dx) : 0;
    const rows = columns > 0 && height > y0 ? Math.ceil((height - y0) / dy) : 0;
    return { x0, y0, dx, dy, columns, rows, rowBytes: Math.ceil((columns * bitsPerPixel) / 8) };
  });
  const expected = passes.reduce((sum, p) => sum + p.rows * (1 + p.rowBytes), 0);

  let raw: Uint8Array;
  try {
    // The cap stops a zlib bomb: more data than the header allows is an error, never an allocation.
    raw = inflateSync(Buffer.concat(idat), { maxOutputLength: expected });
  } catch (error) {
    throw new Error(`image data: ${(error as Error).message}`);
  }
  if (raw.length < expected) throw new Error("image data is truncated");

  const out = new Uint8ClampedArray(width * height * 4);
  const toRgba = pngRowConverter(header, palette, transparency);
  let offset = 0;
  for (const pass of passes) {
    if (pass.rows === 0) continue;
    unfilter(raw, offset, pass.rows, pass.rowBytes, filterUnit);
    const rgbaRow = new Uint8Array(pass.columns * 4);
    for (let r = 0; r < pass.rows; r++) {
      const rowStart = offset + r * (1 + pass.rowBytes) + 1;
      toRgba(raw.subarray(rowStart, rowStart + pass.rowBytes), pass.columns, rgbaRow);
      const y = pass.y0 + r * pass.dy;
      if (pass.dx === 1) {
        out.set(rgbaRow, y * width * 4);
        continue;
      }
      for (let c = 0; c < pass.columns; c++) {
        out.set(rgbaRow.subarray(c * 4, c * 4 + 4), (y * width + pass.x0 + c * pass.dx) * 4);
      }
    }
    offset += pass.rows * (1 + pass.rowBytes);
  }
  return { width, height, data: out };
}

function parsePngHeader(data: Uint8Array): PngHeader {
  if (data.length !== 13) throw new Error("IHDR has the wrong length");
  const [bitDepth, colorType, compression, filter, interlace] = data.subarray(8, 13) as unknown as number[];
  const kind = PNG_COLOR_TYPES[colorType!];
  if (!kind || !kind.depths.includes(bitDepth!)) throw new Error(`invalid colour type ${colorType} / bit depth ${bitDepth}`);
  if (compression !== 0 || filter !== 0 || interlace! > 1) throw new Error("unknown compression, filter or interlace method");
  const [width, height] = [u32be(data, 0), u32be(data, 4)];
  return { width, height, bitDepth: bitDepth!, colorType: colorType!, interlaced: interlace === 1 };
}

/** Reverses the per-scanline filters in place; `unit` is the bytes per pixel (at least 1). */
function unfilter(data: Uint8Array, offset: number, rows: number, rowBytes: number, unit: number): void {
  let prev = -1; // start of the previous unfiltered row; -1 = a row of zeros
  for (let r = 0; r < rows; r++) {
    const filterType = data[offset]!;
    const row = offset + 1;
    if (filterType > 4) throw new Error(`invalid filter type ${filterType}`);
    for (let i = 0; filterType !== 0 && i < rowBytes; i++) {
      const left = i >= unit ? data[row + i - unit]! : 0;
      const up = prev >= 0 ? data[prev + i]! : 0;
      const predictor =
        filterType === 1 ? left
        : filterType === 2 ? up
        : filterType === 3 ? (left + up) >> 1
        : paeth(left, up, prev >= 0 && i >= unit ? data[prev + i - unit]! : 0);
      data[row + i] = data[row + i]! + predictor; // Uint8Array stores modulo 256
    }
    prev = row;
    offset = row + rowBytes;
  }
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Returns a function that converts one unfiltered scanline of `count` pixels to RGBA8. */
function pngRowConverter(
  header: PngHeader,
  palette: Uint8Array | null,
  transparency: Uint8Array | null,
): (row: Uint8Array, count: number, out: Uint8Array) => void {
  const { bitDepth, colorType } = header;
  const channels = PNG_COLOR_TYPES[colorType]!.channels;
  const mask = (1 << Math.min(bitDepth, 8)) - 1;
  // Raw sample i of a row, at full precision (needed to compare with the tRNS colour key).
  const sample =
    bitDepth === 16
      ? (row: Uint8Array, i: number) => (row[2 * i]! << 8) | row[2 * i + 1]!
      : bitDepth === 8
        ? (row: Uint8Array, i: number) => row[i]!
        : (row: Uint8Array, i: number) => (row[(i * bitDepth) >> 3]! >> (8 - bitDepth - ((i * bitDepth) & 7))) & mask;
  const to8 = bitDepth === 16 ? (v: number) => Math.round(v / 257) : (v: number) => (v * 255) / mask;
  // For greyscale/truecolour, tRNS is one colour key (16-bit samples) that becomes fully transparent.
  const key = transparency && (colorType === 0 || colorType === 2) ? transparency : null;
  const isKey = (row: Uint8Array, first: number) => {
    for (let c = 0; c < channels; c++) if (sample(row, first + c) !== u16be(key!, 2 * c)) return false;
    return true;
  };

  return (row, count, out) => {
    for (let x = 0; x < count; x++) {
      const s = x * channels;
      const o = x * 4;
      if (colorType === 3) {
        const index = sample(row, x);
        const inPalette = 3 * index + 2 < palette!.length; // out-of-range indices render black, as browsers do
        out[o] = inPalette ? palette![3 * index]! : 0;
        out[o + 1] = inPalette ? palette![3 * index + 1]! : 0;
        out[o + 2] = inPalette ? palette![3 * index + 2]! : 0;
        out[o + 3] = transparency && index < transparency.length ? transparency[index]! : 255;
        continue;
      }
      const grey = channels <= 2;
      out[o] = to8(sample(row, s));
      out[o + 1] = grey ? out[o]! : to8(sample(row, s + 1));
      out[o + 2] = grey ? out[o]! : to8(sample(row, s + 2));
      if (channels === 2 || channels === 4) out[o + 3] = to8(sample(row, s + channels - 1));
      else out[o + 3] = key && key.length >= 2 * channels && isKey(row, s) ? 0 : 255;
    }
  };
}
