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
