// The Wan-VAE (wan/modules/vae.py WanVAE_) decoder and encoder, streaming: the decoder takes one latent
// frame per call and keeps every causal conv's cache between calls (latent frame 0 → 1 frame, each
// later one → 4), so a streaming pipeline decodes chunk after chunk with the same state a whole-clip
// decode would have. The encoder takes frames 1, 4, 4, ... likewise.
//
// Latent normalisation is folded into the 1×1×1 convs at load: the DiT's latent z is (μ − mean)/std,
// so decode's `conv2(z·std + mean)` becomes conv2' with W·diag(std) and b + W·mean, and encode's
// `(conv1(h)[:z] − mean)/std` becomes conv1' with rows scaled by 1/std (log σ² rows dropped).
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { VaeConfig } from "./configs.ts";
import type { Tap } from "./umt5.ts";
import { CausalConv, ChannelNorm, FrameAttention, ResidualBlock } from "./wan-vae-blocks.ts";
import { Resample } from "./wan-vae-resample.ts";
import type { WeightReader } from "./weights.ts";

type Stage = ResidualBlock | FrameAttention | Resample;

/** Runs x through stages, freeing each intermediate (never the caller's x). */
function runStages(b: Backend, x: Tensor, stages: Stage[]): Tensor {
  let cur = x;
  for (const s of stages) {
    const next = s.run(cur);
    if (cur !== x && next !== cur) b.free(cur);
    cur = next;
  }
  return cur;
}

/** A 1×1×1 conv whose weights are folded with per-channel affine maps on the host. */
async function foldedPointwise(r: WeightReader, name: string, cout: number, cin: number, fold: (w: Float32Array, bias: Float32Array) => { w: Float32Array; b: Float32Array; cout: number }): Promise<CausalConv> {
  const w = await r.host(`${name}.weight`, [cout, cin, 1, 1, 1]);
  const bias = await r.host(`${name}.bias`, [cout]);
  const f = fold(w, bias);
  const be = r.backend;
  return new CausalConv(be, be.upload(f.w, [f.cout, cin, 1, 1, 1]), be.upload(f.b, [f.cout]), 0, false);
}

function release(b: Backend, stages: { tensors(): Tensor[] }[]): void {
  b.free(...new Set(stages.flatMap((s) => s.tensors()).map((t) => t.owner)));
}

export class WanVaeDecoder {
  private constructor(
    private readonly b: Backend,
    readonly config: VaeConfig,
    private readonly conv2: CausalConv,
    private readonly conv1: CausalConv,
    private readonly stages: Stage[],
    private readonly headNorm: ChannelNorm,
    private readonly headConv: CausalConv,
  ) {}

  static async load(r: WeightReader, cfg: VaeConfig): Promise<WanVaeDecoder> {
    const { dim, zDim, dimMult, numResBlocks } = cfg;
    const dims = [dimMult[dimMult.length - 1]!, ...[...dimMult].reverse()].map((m) => m * dim);
    const conv2 = await foldedPointwise(r, "conv2", zDim, zDim, (w, bias) => {
      const W = new Float32Array(w.length), B = Float32Array.from(bias);
      for (let o = 0; o < zDim; o++) for (let i = 0; i < zDim; i++) {
        W[o * zDim + i] = w[o * zDim + i]! * cfg.latentsStd[i]!;
        B[o] += w[o * zDim + i]! * cfg.latentsMean[i]!;
      }
      return { w: W, b: B, cout: zDim };
    });
    const conv1 = await CausalConv.load(r, "decoder.conv1", zDim, dims[0]!, [3, 3, 3], { pad: 1 });
    const stages: Stage[] = [
      await ResidualBlock.load(r, "decoder.middle.0", dims[0]!, dims[0]!),
      await FrameAttention.load(r, "decoder.middle.1", dims[0]!),
      await ResidualBlock.load(r, "decoder.middle.2", dims[0]!, dims[0]!),
    ];
    const temporalUp = [...cfg.temporalDownsample].reverse();
    let n = 0;
    for (let i = 0; i < dimMult.length; i++) {
      // after a resample the channels are halved (the upsampling conv's output)
      let cin = i > 0 ? dims[i]! / 2 : dims[i]!;
      const cout = dims[i + 1]!;
      for (let j = 0; j <= numResBlocks; j++, cin = cout) stages.push(await ResidualBlock.load(r, `decoder.upsamples.${n++}`, cin, cout));
      if (i !== dimMult.length - 1) stages.push(await Resample.load(r, `decoder.upsamples.${n++}`, cout, temporalUp[i] ? "upsample3d" : "upsample2d"));
    }
    const last = dims[dims.length - 1]!;
    const headNorm = await ChannelNorm.load(r, "decoder.head.0.gamma", last);
    const headConv = await CausalConv.load(r, "decoder.head.2", last, 3, [3, 3, 3], { pad: 1 });
    return new WanVaeDecoder(r.backend, cfg, conv2, conv1, stages, headNorm, headConv);
  }

  /**
   * Decodes normalised latent frames z [zDim, T, h, w] that continue the stream so far (reset() starts
   * a new one) into video [3, frames, 8h, 8w], unclamped (Wan clamps to [−1, 1] afterwards).
   */
  async decode(z: Tensor, tap?: Tap): Promise<Tensor> {
    const b = this.b, [, T, h, w] = z.shape as [number, number, number, number];
    const x = this.conv2.run(z.reshape([1, ...z.shape]));
    await tap?.("conv2_out", x);
    const parts: Tensor[] = [];
    try {
      for (let t = 0; t < T; t++) {
        const frame = b.alloc([1, x.shape[1]!, 1, h, w]);
        b.slice(frame, x, 2, t);
        const c1 = this.conv1.run(frame);
        b.free(frame);
        const y = runStages(b, c1, this.stages);
        b.free(c1);
        this.headNorm.run(b, y, y);
        b.silu(y, y);
        parts.push(this.headConv.run(y));
        b.free(y);
      }
      const frames = parts.reduce((n, p) => n + p.shape[2]!, 0);
      const [, , , H, W] = parts[0]!.shape as number[];
      const video = b.alloc([3, frames, H!, W!]);
      b.concat(video.reshape([1, 3, frames, H!, W!]), parts, 2);
      return video;
    } finally {
      b.free(x, ...parts);
    }
  }

  /** Forget the stream: the next decode starts a new clip. */
  reset(): void {
    for (const s of this.stages) s instanceof FrameAttention || s.reset();
    this.conv1.reset();
    this.headConv.reset();
  }

  free(): void {
    this.reset();
    release(this.b, [this.conv2, this.conv1, ...this.stages, this.headNorm, this.headConv]);
  }
}

export class WanVaeEncoder {
  private constructor(
    private readonly b: Backend,
    readonly config: VaeConfig,
    private readonly conv1: CausalConv,
    private readonly stages: Stage[],
    private readonly headNorm: ChannelNorm,
    private readonly headConv: CausalConv,
    private readonly toLatent: CausalConv,
  ) {}

  static async load(r: WeightReader, cfg: VaeConfig): Promise<WanVaeEncoder> {
    const { dim, zDim, dimMult, numResBlocks } = cfg;
    const dims = [1, ...dimMult].map((m) => m * dim);
    const conv1 = await CausalConv.load(r, "encoder.conv1", 3, dims[0]!, [3, 3, 3], { pad: 1 });
    const stages: Stage[] = [];
    let n = 0;
    for (let i = 0; i < dimMult.length; i++) {
      let cin = dims[i]!;
      const cout = dims[i + 1]!;
      for (let j = 0; j < numResBlocks; j++, cin = cout) stages.push(await ResidualBlock.load(r, `encoder.downsamples.${n++}`, cin, cout));
      if (i !== dimMult.length - 1) stages.push(await Resample.load(r, `encoder.downsamples.${n++}`, cout, cfg.temporalDownsample[i] ? "downsample3d" : "downsample2d"));
    }
    const last = dims[dims.length - 1]!;
    stages.push(
      await ResidualBlock.load(r, "encoder.middle.0", last, last),
      await FrameAttention.load(r, "encoder.middle.1", last),
      await ResidualBlock.load(r, "encoder.middle.2", last, last),
    );
    const headNorm = await ChannelNorm.load(r, "encoder.head.0.gamma", last);
    const headConv = await CausalConv.load(r, "encoder.head.2", last, 2 * zDim, [3, 3, 3], { pad: 1 });
    const toLatent = await foldedPointwise(r, "conv1", 2 * zDim, 2 * zDim, (w, bias) => {
      const W = new Float32Array(zDim * 2 * zDim), B = new Float32Array(zDim);
      for (let o = 0; o < zDim; o++) {
        const inv = 1 / cfg.latentsStd[o]!;
        for (let i = 0; i < 2 * zDim; i++) W[o * 2 * zDim + i] = w[o * 2 * zDim + i]! * inv;
        B[o] = (bias[o]! - cfg.latentsMean[o]!) * inv;
      }
      return { w: W, b: B, cout: zDim };
    });
    return new WanVaeEncoder(r.backend, cfg, conv1, stages, headNorm, headConv, toLatent);
  }

  /** Video [3, 1 + 4k, H, W] in [−1, 1] → normalised latent μ [zDim, 1 + k, H/8, W/8] (a new stream). */
  async encode(video: Tensor): Promise<Tensor> {
    const b = this.b, [, T, H, W] = video.shape as [number, number, number, number];
    this.reset();
    const x = video.reshape([1, ...video.shape]);
    const parts: Tensor[] = [];
    try {
      for (let start = 0; start < T; start += start === 0 ? 1 : 4) {
        const n = Math.min(start === 0 ? 1 : 4, T - start);
        const chunk = b.alloc([1, 3, n, H, W]);
        b.slice(chunk, x, 2, start);
        const c1 = this.conv1.run(chunk);
        b.free(chunk);
        const y = runStages(b, c1, this.stages);
        b.free(c1);
        this.headNorm.run(b, y, y);
        b.silu(y, y);
        const head = this.headConv.run(y);
        b.free(y);
        parts.push(this.toLatent.run(head));
        b.free(head);
      }
      const frames = parts.reduce((s, p) => s + p.shape[2]!, 0);
      const [, zc, , h, w] = parts[0]!.shape as number[];
      const mu = b.alloc([zc!, frames, h!, w!]);
      b.concat(mu.reshape([1, zc!, frames, h!, w!]), parts, 2);
      return mu;
    } finally {
      b.free(...parts);
      this.reset();
    }
  }

  reset(): void {
    for (const s of this.stages) s instanceof FrameAttention || s.reset();
    this.conv1.reset();
    this.headConv.reset();
  }

  free(): void {
    this.reset();
    release(this.b, [this.conv1, ...this.stages, this.headNorm, this.headConv, this.toLatent]);
  }
}
