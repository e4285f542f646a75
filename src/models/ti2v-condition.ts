// Wan2.2 TI2V's first-frame conditioning (wan/textimage2video.py WanTI2V.i2v; goldens/README.md §11):
// the image's latent z [48, 1, h, w] replaces latent frame 0 — before the first step and again after
// every sampler step (the sampler's own history is left as it is) — and the tokens of that frame are
// denoised at t = 0 while the rest take the step's t. The mask is the original's `masks_like(…,
// zero=True)`: 0 on frame 0, 1 elsewhere, so (1 − mask)·z + mask·x is exactly a copy of z into frame 0.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { type RgbPixels, rgb24ToUnitRange } from "./frames.ts";
import { coverResizeCrop } from "./pil-lanczos.ts";
import type { Tap } from "./umt5.ts";
import type { Grid } from "./wan-dit.ts";
import type { WanVaeEncoder } from "./wan-vae.ts";

/**
 * Per-token timesteps of a step at t with the first latent frame given: the mask sampled at the patch
 * stride, tokens f-major then h, w — frame 0's tokens at 0, all others at t.
 */
export function firstFrameTimesteps(grid: Grid, t: number): number[] {
  const [f, h, w] = grid, perFrame = h * w;
  return Array.from({ length: f * perFrame }, (_, i) => (i < perFrame ? 0 : t));
}

/** latent [C, T, h, w] ← z [C, 1, h, w] in frame 0, the rest untouched. */
export function injectFirstFrame(b: Backend, latent: Tensor, z: Tensor): void {
  const [C, , h, w] = latent.shape as [number, number, number, number];
  if (z.rank !== 4 || z.shape[0] !== C || z.shape[1] !== 1 || z.shape[2] !== h || z.shape[3] !== w) {
    throw new Error(`first-frame latent [${z.shape}] does not fit latent [${latent.shape}]`);
  }
  b.writeSlice(latent, z, 1, 0);
}

/**
 * The image's latent z [48, 1, height/16, width/16]: scaled to cover width × height with PIL's Lanczos
 * (host, exact), centre-cropped, to [−1, 1], encoded as a one-frame clip. Taps: image ([3, 1, H, W]), z.
 */
export async function firstFrameLatent(b: Backend, encoder: WanVaeEncoder, image: RgbPixels, width: number, height: number, tap?: Tap): Promise<Tensor> {
  const { cropped } = coverResizeCrop(image, width, height);
  const pixels = b.upload(rgb24ToUnitRange(cropped), [3, 1, height, width]);
  try {
    await tap?.("image", pixels);
    const z = await encoder.encode(pixels);
    await tap?.("z", z);
    return z;
  } finally {
    b.free(pixels);
  }
}
