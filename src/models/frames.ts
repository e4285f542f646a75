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
  const aspect = targetWidth / targetHeight;
  const w = Math.min(width, Math.max(1, Math.round(height * aspect)));
  const h = Math.min(height, Math.max(1, Math.round(width / aspect)));
  const x0 = Math.floor((width - w) / 2), y0 = Math.floor((height - h) / 2);
  const plane = w * h, data = new Float32Array(3 * plane);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const s = ((y0 + y) * width + x0 + x) * 3, o = y * w + x;
      for (let c = 0; c < 3; c++) data[c * plane + o] = rgb[s + c]! / 127.5 - 1;
    }
  }
  return { data, width: w, height: h };
}
