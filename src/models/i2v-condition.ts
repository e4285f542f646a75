// The conditioning Wan2.1 image-to-video builds from its first frame (wan/image2video.py
// WanI2V.generate; goldens/README.md §8), on the backend:
// - the image in [−1, 1] resized to the video's size with PyTorch's bicubic (`F.interpolate`,
//   align_corners False, no antialiasing, no clamp), followed by F − 1 zero (mid-grey) frames, and
//   the whole clip VAE-encoded — the latent frames after the first are not zero, since the causal
//   encoder carries frame 0 into them;
// - the frame mask: ones for pixel frame 0 (repeated 4× in front, so F + 3 frames), zeros after,
//   folded 4 frames per latent frame into 4 channels — latent frame 0 all ones, the rest zeros;
// - y = mask ‖ latent along channels, which the DiT takes after the noise (WanDiT.withCondition).
// The CLIP features of the same [−1, 1] image go to the DiT's image cross-attention (clip-vision.ts).
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { I2V_MASK_CHANNELS } from "./dit-kind.ts";
import type { Tap } from "./umt5.ts";
import type { WanVaeEncoder } from "./wan-vae.ts";

/**
 * The 4-channel mask [4, T, h, w] for a clip of `frames` pixel frames (1 + 4k) whose first frame is
 * given, built as the original builds it: the pixel-frame mask with frame 0 repeated 4× in front,
 * viewed as [T, 4, h, w] and transposed.
 */
export function firstFrameMask(frames: number, h: number, w: number): Float32Array {
  const fold = I2V_MASK_CHANNELS;
  if ((frames - 1) % fold) throw new Error(`an image-to-video clip has 1 + ${fold}k frames, not ${frames}`);
  const pixelMask = [1, 1, 1, 1, ...new Array<number>(frames - 1).fill(0)]; // frame 0 ×4, then frames 1…
  const T = pixelMask.length / fold, plane = h * w, out = new Float32Array(fold * T * plane);
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < fold; c++) out.fill(pixelMask[t * fold + c]!, (c * T + t) * plane, (c * T + t + 1) * plane);
  }
  return out;
}

/**
 * y [4 + z_dim, T, height/s, width/s] for an image [3, H0, W0] in [−1, 1] starting a clip of `frames`
 * frames at width × height (the caller frees). Taps: vae_input [3, F, height, width], vae_latent,
 * mask, y — the goldens' names.
 */
export async function i2vCondition(b: Backend, encoder: WanVaeEncoder, image: Tensor, frames: number, width: number, height: number, tap?: Tap): Promise<Tensor> {
  if (image.rank !== 3 || image.shape[0] !== 3) throw new Error(`i2v conditioning: the image must be [3, H, W], got [${image.shape}]`);
  const video = b.alloc([3, frames, height, width]), first = b.alloc([3, 1, height, width]);
  let latent: Tensor | null = null, mask: Tensor | null = null;
  try {
    b.resize(first.reshape([3, height, width]), image, { filter: "torch" });
    b.fill(video, 0);
    b.writeSlice(video, first, 1, 0);
    await tap?.("vae_input", video);
    b.free(first);
    latent = await encoder.encode(video);
    b.free(video);
    await tap?.("vae_latent", latent);
    const [zDim, T, h, w] = latent.shape as [number, number, number, number];
    mask = b.upload(firstFrameMask(frames, h, w), [I2V_MASK_CHANNELS, T, h, w]);
    await tap?.("mask", mask);
    const y = b.alloc([I2V_MASK_CHANNELS + zDim, T, h, w]);
    b.concat(y, [mask, latent], 0);
    await tap?.("y", y);
    return y;
  } finally {
    b.free(...[video, first, latent, mask].filter((t): t is Tensor => t !== null && !t.freed));
  }
}
