// Decoded video → what the pipeline contract hands on: RGB24 frames, row-major, one Uint8Array per
// frame. The VAE emits [3, T, H, W] floats in [−1, 1] (Wan clamps there); values are mapped to 0..255
// with rounding.

export function videoToRgb24(video: Float32Array, frames: number, height: number, width: number): Uint8Array[] {
  const plane = height * width;
  if (video.length !== 3 * frames * plane) throw new Error(`video of ${video.length} values is not [3, ${frames}, ${height}, ${width}]`);
  const out: Uint8Array[] = [];
  for (let t = 0; t < frames; t++) {
    const rgb = new Uint8Array(plane * 3);
    for (let c = 0; c < 3; c++) {
      const src = (c * frames + t) * plane;
      for (let p = 0; p < plane; p++) {
        const v = video[src + p]!;
        rgb[p * 3 + c] = v >= 1 ? 255 : v <= -1 ? 0 : Math.round((v + 1) * 127.5);
      }
    }
    out.push(rgb);
  }
  return out;
}

/**
 * The inverse for one RGB24 image: the centre of `rgb` cropped to the aspect ratio of
 * targetWidth × targetHeight (a cover fit: nothing stretched, the longer side trimmed), as planar
 * floats [3, h, w] in [−1, 1], the VAE's input range. Resampling to the target size is the caller's.
 */
export function rgb24ToPlanarCrop(rgb: Uint8Array, width: number, height: number, targetWidth: number, targetHeight: number): { data: Float32Array; width: number; height: number } {
  const { x0, y0, w, h } = aspectCropBox(width, height, targetWidth, targetHeight);
  const plane = w * h, data = new Float32Array(3 * plane);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const s = ((y0 + y) * width + x0 + x) * 3, o = y * w + x;
      for (let c = 0; c < 3; c++) data[c * plane + o] = rgb[s + c]! / 127.5 - 1;
    }
  }
  return { data, width: w, height: h };
}

/** The centred box of a width × height image with the aspect ratio of targetWidth × targetHeight. */
export function aspectCropBox(width: number, height: number, targetWidth: number, targetHeight: number): { x0: number; y0: number; w: number; h: number } {
  const aspect = targetWidth / targetHeight;
  const w = Math.min(width, Math.max(1, Math.round(height * aspect)));
  const h = Math.min(height, Math.max(1, Math.round(width / aspect)));
  return { x0: Math.floor((width - w) / 2), y0: Math.floor((height - h) / 2), w, h };
}

/** RGB24 pixels, row-major (the pipeline contract's RgbImage). */
export interface RgbPixels {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** The centre of an image cropped to the aspect ratio of targetWidth × targetHeight (aspectCropBox), still RGB24. */
export function cropToAspect(image: RgbPixels, targetWidth: number, targetHeight: number): RgbPixels {
  const { x0, y0, w, h } = aspectCropBox(image.width, image.height, targetWidth, targetHeight);
  if (w === image.width && h === image.height) return image;
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) rgb.set(image.rgb.subarray(((y0 + y) * image.width + x0) * 3, ((y0 + y) * image.width + x0 + w) * 3), y * w * 3);
  return { width: w, height: h, rgb };
}

/** RGB24 → planar floats [3, H, W] in [−1, 1] as Wan's pipelines make them: torchvision's
 *  to_tensor (v / 255 in float32), then (x − 0.5) / 0.5. */
export function rgb24ToUnitRange(image: RgbPixels): Float32Array {
  const plane = image.width * image.height, out = new Float32Array(3 * plane);
  for (let p = 0; p < plane; p++) for (let c = 0; c < 3; c++) out[c * plane + p] = (Math.fround(image.rgb[p * 3 + c]! / 255) - 0.5) / 0.5;
  return out;
}
