// The Wan-VAE (wan/modules/vae.py WanVAE_) decoder and encoder, streaming: the decoder takes one latent
// frame per call and keeps every causal conv's cache between calls (latent frame 0 → 1 frame, each
// later one → 4), so a streaming pipeline decodes chunk after chunk with the same state a whole-clip
// decode would have. The encoder takes frames 1, 4, 4, ... likewise. Both halves are the same trunk
// (conv1, stages, head norm + SiLU + conv) around different stages (wan-vae-layout.ts).
//
// Latent normalisation is folded into the 1×1×1 convs at load: the DiT's latent z is (μ − mean)/std,
// so decode's `conv2(z·std + mean)` becomes conv2' with W·diag(std) and b + W·mean, and encode's
// `(conv1(h)[:z] − mean)/std` becomes conv1' with rows scaled by 1/std (log σ² rows dropped).
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { VaeConfig } from "./configs.ts";
import type { Tap } from "./umt5.ts";
import { CausalConv, ChannelNorm, FrameAttention, ResidualBlock } from "./wan-vae-blocks.ts";
import { type VaeStage, vaeLayout } from "./wan-vae-layout.ts";
import { Resample } from "./wan-vae-resample.ts";
import type { WeightReader } from "./weights.ts";

type Stage = ResidualBlock | FrameAttention | Resample;

async function loadStages(r: WeightReader, plan: VaeStage[]): Promise<Stage[]> {
  const stages: Stage[] = [];
  for (const s of plan) stages.push(s.kind === "residual" ? await ResidualBlock.load(r, s.wan, s.cin, s.cout) : await Resample.load(r, s.wan, s.channels, s.mode));
  return stages;
}

/** Residual block, single-head frame attention, residual block. */
async function loadMiddle(r: WeightReader, side: "encoder" | "decoder", c: number): Promise<Stage[]> {
  return [await ResidualBlock.load(r, `${side}.middle.0`, c, c), await FrameAttention.load(r, `${side}.middle.1`, c), await ResidualBlock.load(r, `${side}.middle.2`, c, c)];
}

/** A 1×1×1 conv whose weights are folded with per-channel affine maps on the host. */
async function foldedPointwise(r: WeightReader, name: string, cout: number, cin: number, fold: (w: Float32Array, bias: Float32Array) => { w: Float32Array; b: Float32Array; cout: number }): Promise<CausalConv> {
  const w = await r.host(`${name}.weight`, [cout, cin, 1, 1, 1]);
  const bias = await r.host(`${name}.bias`, [cout]);
  const f = fold(w, bias);
  const be = r.backend;
  return new CausalConv(be, be.upload(f.w, [f.cout, cin, 1, 1, 1]), be.upload(f.b, [f.cout]), 0, false);
}

/** conv1 → stages → RMS norm, SiLU, conv: what both halves run on each time chunk, with its caches. */
class Trunk {
  constructor(
    private readonly b: Backend,
    private readonly conv1: CausalConv,
    private readonly stages: Stage[],
    private readonly headNorm: ChannelNorm,
    private readonly headConv: CausalConv,
  ) {}

  static async load(r: WeightReader, side: "encoder" | "decoder", cin: number, width: number, stages: Stage[], top: number, cout: number): Promise<Trunk> {
    const conv1 = await CausalConv.load(r, `${side}.conv1`, cin, width, [3, 3, 3], { pad: 1 });
    const headNorm = await ChannelNorm.load(r, `${side}.head.0.gamma`, top);
    const headConv = await CausalConv.load(r, `${side}.head.2`, top, cout, [3, 3, 3], { pad: 1 });
    return new Trunk(r.backend, conv1, stages, headNorm, headConv);
  }

  /** New output for one time chunk x (the caller frees both). */
  run(x: Tensor): Tensor {
    const b = this.b;
    let cur = this.conv1.run(x);
    for (const s of this.stages) {
      const next = s.run(cur);
      if (next !== cur) b.free(cur);
      cur = next;
    }
    this.headNorm.run(b, cur, cur);
    b.silu(cur, cur);
    const out = this.headConv.run(cur);
    b.free(cur);
    return out;
  }

  /** Forget the stream (every causal cache). */
  reset(): void {
    for (const s of this.stages) s instanceof FrameAttention || s.reset();
    this.conv1.reset();
    this.headConv.reset();
  }

  tensors(): Tensor[] {
    return [this.conv1, ...this.stages, this.headNorm, this.headConv].flatMap((m) => m.tensors());
  }
}

function release(b: Backend, parts: { tensors(): Tensor[] }[]): void {
  b.free(...new Set(parts.flatMap((s) => s.tensors()).map((t) => t.owner)));
}

export class WanVaeDecoder {
  private constructor(private readonly b: Backend, readonly config: VaeConfig, private readonly conv2: CausalConv, private readonly trunk: Trunk) {}

  static async load(r: WeightReader, cfg: VaeConfig): Promise<WanVaeDecoder> {
    const { zDim } = cfg, layout = vaeLayout(cfg), top = layout.decoderTop;
    const conv2 = await foldedPointwise(r, "conv2", zDim, zDim, (w, bias) => {
      const W = new Float32Array(w.length), B = Float32Array.from(bias);
      for (let o = 0; o < zDim; o++) for (let i = 0; i < zDim; i++) {
        W[o * zDim + i] = w[o * zDim + i]! * cfg.latentsStd[i]!;
        B[o] += w[o * zDim + i]! * cfg.latentsMean[i]!;
      }
      return { w: W, b: B, cout: zDim };
    });
    const stages = [...(await loadMiddle(r, "decoder", top)), ...(await loadStages(r, layout.decoderStages))];
    return new WanVaeDecoder(r.backend, cfg, conv2, await Trunk.load(r, "decoder", zDim, top, stages, layout.decoderOut, 3));
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
        parts.push(this.trunk.run(frame));
        b.free(frame);
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
    this.trunk.reset();
  }

  free(): void {
    this.reset();
    release(this.b, [this.conv2, this.trunk]);
  }
}

export class WanVaeEncoder {
  private constructor(private readonly b: Backend, readonly config: VaeConfig, private readonly trunk: Trunk, private readonly toLatent: CausalConv) {}

  static async load(r: WeightReader, cfg: VaeConfig): Promise<WanVaeEncoder> {
    const { zDim } = cfg, layout = vaeLayout(cfg), top = layout.encoderTop;
    const stages = [...(await loadStages(r, layout.encoderStages)), ...(await loadMiddle(r, "encoder", top))];
    const trunk = await Trunk.load(r, "encoder", 3, layout.encoderIn, stages, top, 2 * zDim);
    const toLatent = await foldedPointwise(r, "conv1", 2 * zDim, 2 * zDim, (w, bias) => {
      const W = new Float32Array(zDim * 2 * zDim), B = new Float32Array(zDim);
      for (let o = 0; o < zDim; o++) {
        const inv = 1 / cfg.latentsStd[o]!;
        for (let i = 0; i < 2 * zDim; i++) W[o * 2 * zDim + i] = w[o * 2 * zDim + i]! * inv;
        B[o] = (bias[o]! - cfg.latentsMean[o]!) * inv;
      }
      return { w: W, b: B, cout: zDim };
    });
    return new WanVaeEncoder(r.backend, cfg, trunk, toLatent);
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
        const head = this.trunk.run(chunk);
        b.free(chunk);
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
    this.trunk.reset();
  }

  free(): void {
    this.reset();
    release(this.b, [this.trunk, this.toLatent]);
  }
}
