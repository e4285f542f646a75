// The Wan-VAE's resolution changes, streaming like the rest of the VAE (wan-vae-blocks.ts):
// - up: nearest ×2 in space, then a 3×3 conv that halves the channels (Wan2.2's keeps them), run as one
//   conv that reads its input upsampled (Conv3dOptions.upsample: no 4× copy of the input is made); "3d"
//   first doubles the frames with a causal (3,1,1) conv to 2C channels split [2, C] and interleaved in
//   time. The very first chunk skips that conv (Wan's 'Rep' cache), so latent frame 0 becomes one
//   frame, and it is not part of the later chunks' causal context (their cache starts as zeros).
// - down: zero pad right/bottom, 3×3 stride-2 conv; "3d" then joins the previous chunk's last frame
//   to the chunk and runs an unpadded stride-2 (3,1,1) conv, so 1 + 4k frames become 1 + k.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { CausalConv } from "./wan-vae-blocks.ts";
import type { WeightSource } from "./weights.ts";

export type ResampleMode = "upsample2d" | "upsample3d" | "downsample2d" | "downsample3d";

export class Resample {
  #first = true;
  #lastFrame: Tensor | null = null;

  private constructor(
    private readonly b: Backend,
    readonly mode: ResampleMode,
    private readonly spatial: { w: Tensor; b: Tensor },
    private readonly timeConv: CausalConv | null,
  ) {}

  static async load(r: WeightSource, p: string, c: number, mode: ResampleMode, upsampleHalves = true): Promise<Resample> {
    const up = mode.startsWith("up");
    const cout = up && upsampleHalves ? c / 2 : c;
    const w = (await r.matrix(`${p}.resample.1.weight`, [cout, c, 3, 3])).reshape([cout, c, 1, 3, 3]);
    const spatial = { w, b: await r.vector(`${p}.resample.1.bias`, [cout]) };
    let timeConv: CausalConv | null = null;
    if (mode === "upsample3d") timeConv = await CausalConv.load(r, `${p}.time_conv`, c, 2 * c, [3, 1, 1], { cached: true });
    if (mode === "downsample3d") timeConv = await CausalConv.load(r, `${p}.time_conv`, c, c, [3, 1, 1], { cached: false, stride: [2, 1, 1] });
    return new Resample(r.backend, mode, spatial, timeConv);
  }

  /** New output for x (caller frees x and the result). */
  run(x: Tensor): Tensor {
    if (this.mode === "upsample3d") {
      const doubled = this.#doubleFrames(x);
      const out = this.#upsample(doubled ?? x);
      if (doubled) this.b.free(doubled);
      return out;
    }
    if (this.mode === "upsample2d") return this.#upsample(x);
    const down = this.#downsample(x);
    if (this.mode === "downsample2d") return down;
    const out = this.#halveFrames(down);
    if (out !== down) this.b.free(down);
    return out;
  }

  #doubleFrames(x: Tensor): Tensor | null {
    if (this.#first) {
      this.#first = false;
      return null;
    }
    const b = this.b, [, c, T, H, W] = x.shape as [number, number, number, number, number];
    const tc = this.timeConv!.run(x); // [1, 2C, T, H, W]
    const out = b.alloc([1, c, 2 * T, H, W]);
    b.permute(out.reshape([c, T, 2, H, W]), tc.reshape([2, c, T, H, W]), [1, 2, 0, 3, 4]);
    b.free(tc);
    return out;
  }

  #upsample(x: Tensor): Tensor {
    const b = this.b, [, , T, H, W] = x.shape as [number, number, number, number, number];
    const out = b.alloc([1, this.spatial.w.shape[0]!, T, 2 * H, 2 * W]);
    b.conv3d(out, x, this.spatial.w, this.spatial.b, { pad: [1, 1, 1, 1], timePad: 0, upsample: true });
    return out;
  }

  #downsample(x: Tensor): Tensor {
    const b = this.b, [, c, T, H, W] = x.shape as [number, number, number, number, number];
    const out = b.alloc([1, c, T, Math.floor((H - 2) / 2) + 1, Math.floor((W - 2) / 2) + 1]);
    b.conv3d(out, x, this.spatial.w, this.spatial.b, { pad: [0, 1, 0, 1], stride: [1, 2, 2], timePad: 0 });
    return out;
  }

  #halveFrames(x: Tensor): Tensor {
    const b = this.b, [, c, T, H, W] = x.shape as [number, number, number, number, number];
    const previous = this.#lastFrame;
    this.#lastFrame = b.alloc([1, c, 1, H, W]);
    b.slice(this.#lastFrame, x, 2, T - 1);
    if (!previous) return x;
    const joined = b.alloc([1, c, T + 1, H, W]);
    b.concat(joined, [previous, x], 2);
    b.free(previous);
    const out = this.timeConv!.run(joined);
    b.free(joined);
    return out;
  }

  reset(): void {
    this.#first = true;
    if (this.#lastFrame) this.b.free(this.#lastFrame);
    this.#lastFrame = null;
    this.timeConv?.reset();
  }

  tensors(): Tensor[] {
    return [this.spatial.w.owner, this.spatial.b, ...(this.timeConv?.tensors() ?? [])];
  }
}
