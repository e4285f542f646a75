// PIL's `Image.resize(size, Image.LANCZOS)` on RGB24, reproduced exactly (Pillow's Resample.c, 8 bits
// per channel), because Wan2.2 TI2V prepares its first frame with it (wan/textimage2video.py;
// goldens/README.md §11): two separable passes, horizontal then vertical, each with per-output-pixel
// Lanczos-3 coefficients (support 3·max(1, in/out), normalised to sum 1) turned into 22-bit fixed
// point, and every pass rounds and clips to 0…255 — so the vertical pass reads 8-bit values. A float
// resize that rounds only at the end differs from PIL by up to 11 levels on the golden image.
//
// It runs on the host: its input is the client's 8-bit image, already in host memory, it runs once per
// request, and its integer arithmetic is what makes it bit-exact — a device op would have to repeat the
// same fixed point for no gain next to the denoising steps.
import type { RgbPixels as RgbImage } from "./frames.ts";

const PRECISION_BITS = 32 - 8 - 2;
const LANCZOS_SUPPORT = 3;

const sinc = (x: number) => {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
};
const lanczos = (x: number) => (-LANCZOS_SUPPORT <= x && x < LANCZOS_SUPPORT ? sinc(x) * sinc(x / LANCZOS_SUPPORT) : 0);

interface Coefficients {
  /** First input index and tap count per output pixel. */
  start: Int32Array;
  count: Int32Array;
  /** `ksize` fixed-point taps per output pixel. */
  taps: Int32Array;
  ksize: number;
}

/** Pillow's precompute_coeffs + normalize_coeffs_8bpc for one axis (box = the whole input). */
function coefficients(inSize: number, outSize: number): Coefficients {
  const scale = inSize / outSize, filterScale = Math.max(scale, 1);
  const support = LANCZOS_SUPPORT * filterScale, ksize = Math.ceil(support) * 2 + 1;
  const start = new Int32Array(outSize), count = new Int32Array(outSize), taps = new Int32Array(outSize * ksize);
  const w = new Float64Array(ksize);
  for (let o = 0; o < outSize; o++) {
    const center = (o + 0.5) * scale;
    const lo = Math.max(0, Math.trunc(center - support + 0.5));
    const n = Math.min(inSize, Math.trunc(center + support + 0.5)) - lo;
    let sum = 0;
    for (let x = 0; x < n; x++) sum += w[x] = lanczos((x + lo - center + 0.5) / filterScale);
    for (let x = 0; x < n; x++) {
      const k = sum !== 0 ? w[x]! / sum : w[x]!;
      taps[o * ksize + x] = Math.trunc(k < 0 ? -0.5 + k * (1 << PRECISION_BITS) : 0.5 + k * (1 << PRECISION_BITS));
    }
    start[o] = lo;
    count[o] = n;
  }
  return { start, count, taps, ksize };
}

/** Pillow's clip8: the fixed-point sum back to 0…255. */
const clip8 = (v: number) => (v <= 0 ? 0 : v >= 1 << PRECISION_BITS << 8 ? 255 : Math.floor(v / (1 << PRECISION_BITS)));

/** One pass along x (stride 3, rows of `width`) or along y (stride 3·width), 8-bit in and out. */
function pass(src: Uint8Array, width: number, height: number, outW: number, outH: number, horizontal: boolean): Uint8Array {
  const c = coefficients(horizontal ? width : height, horizontal ? outW : outH);
  const out = new Uint8Array(outW * outH * 3), half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < outH; y++) {
    for (let x = 0; x < outW; x++) {
      const o = horizontal ? x : y, lo = c.start[o]!, n = c.count[o]!, k = o * c.ksize;
      let r = half, g = half, b = half;
      for (let i = 0; i < n; i++) {
        const p = horizontal ? (y * width + lo + i) * 3 : ((lo + i) * width + x) * 3, t = c.taps[k + i]!;
        r += src[p]! * t;
        g += src[p + 1]! * t;
        b += src[p + 2]! * t;
      }
      const q = (y * outW + x) * 3;
      out[q] = clip8(r);
      out[q + 1] = clip8(g);
      out[q + 2] = clip8(b);
    }
  }
  return out;
}

/** `image.resize((width, height), Image.LANCZOS)`: a pass per axis whose size changes. */
export function lanczosResize(image: RgbImage, width: number, height: number): RgbImage {
  let rgb = image.rgb;
  if (width !== image.width) rgb = pass(rgb, image.width, image.height, width, image.height, true);
  if (height !== image.height) rgb = pass(rgb, width, image.height, width, height, false);
  return { width, height, rgb: rgb === image.rgb ? rgb.slice() : rgb };
}

/** Python's round(): halves go to the even neighbour. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * TI2V's first frame at width × height: scaled to cover it (the larger of the two ratios, sides
 * rounded as Python rounds), Lanczos-resized, and the centre cut out (offsets floored).
 */
export function coverResizeCrop(image: RgbImage, width: number, height: number): { resized: RgbImage; cropped: RgbImage } {
  const scale = Math.max(width / image.width, height / image.height);
  const resized = lanczosResize(image, roundHalfEven(image.width * scale), roundHalfEven(image.height * scale));
  const x0 = Math.floor((resized.width - width) / 2), y0 = Math.floor((resized.height - height) / 2);
  if (x0 < 0 || y0 < 0) throw new Error(`cover resize of ${image.width}x${image.height} to ${width}x${height} gave ${resized.width}x${resized.height}`);
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) rgb.set(resized.rgb.subarray(((y0 + y) * resized.width + x0) * 3, ((y0 + y) * resized.width + x0 + width) * 3), y * width * 3);
  return { resized, cropped: { width, height, rgb } };
}
