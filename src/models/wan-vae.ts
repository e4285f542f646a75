// The Wan-VAE (wan/modules/vae.py WanVAE_) decoder and encoder, streaming: the decoder takes one latent
// frame per call and keeps every causal conv's cache between calls (latent frame 0 → 1 frame, each
// later one → 4), so a streaming pipeline decodes chunk after chunk with the same state a whole-clip
// decode would have. The encoder takes frames 1, 4, 4, ... likewise. Both halves are the same trunk
// (conv1, stages, head norm + SiLU + conv) around different stages (wan-vae-layout.ts).
//
// Wan2.2's VAE (cfg.wan22, wan/modules/vae2_2.py) is the same trunk around other stages
// (wan-vae22-layout.ts, wan-vae22-blocks.ts): it sees 2×2-patchified pixels (12 channels) and its
// decoder's 12 output channels are unpatchified, so its latent is 16× smaller than the video in space.
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
import { ResidualLevel, patchify, unpatchify } from "./wan-vae22-blocks.ts";
import { VAE22_PIXEL_CHANNELS, type Vae22Level, vae22Layout } from "./wan-vae22-layout.ts";
import type { WeightSource } from "./weights.ts";

type Stage = ResidualBlock | FrameAttention | Resample | ResidualLevel;

async function loadLevels(r: WeightSource, levels: Vae22Level[]): Promise<Stage[]> {
  const stages: Stage[] = [];
  for (const l of levels) stages.push(await ResidualLevel.load(r, l));
  return stages;
}

/** The widths and stages of one half: Wan2.1's flat lists or Wan2.2's levels. */
async function halfPlan(r: WeightSource, cfg: VaeConfig, side: "encoder" | "decoder") {
  if (cfg.wan22) {
    const l = vae22Layout(cfg);
    return side === "encoder"
      ? { pixels: VAE22_PIXEL_CHANNELS, width: l.encoderIn, top: l.encoderTop, stages: await loadLevels(r, l.encoderLevels) }
      : { pixels: VAE22_PIXEL_CHANNELS, width: l.decoderTop, top: l.decoderOut, stages: await loadLevels(r, l.decoderLevels) };
  }
  const l = vaeLayout(cfg);
  return side === "encoder"
    ? { pixels: 3, width: l.encoderIn, top: l.encoderTop, stages: await loadStages(r, l.encoderStages) }
    : { pixels: 3, width: l.decoderTop, top: l.decoderOut, stages: await loadStages(r, l.decoderStages) };
}

async function loadStages(r: WeightSource, plan: VaeStage[]): Promise<Stage[]> {
  const stages: Stage[] = [];
  for (const s of plan) stages.push(s.kind === "residual" ? await ResidualBlock.load(r, s.wan, s.cin, s.cout) : await Resample.load(r, s.wan, s.channels, s.mode));
  return stages;
}

/** Residual block, single-head frame attention, residual block. */
async function loadMiddle(r: WeightSource, side: "encoder" | "decoder", c: number): Promise<Stage[]> {
  return [await ResidualBlock.load(r, `${side}.middle.0`, c, c), await FrameAttention.load(r, `${side}.middle.1`, c), await ResidualBlock.load(r, `${side}.middle.2`, c, c)];
}

/** A 1×1×1 conv whose weights are folded with per-channel affine maps on the host. */
async function foldedPointwise(r: WeightSource, name: string, cout: number, cin: number, fold: (w: Float32Array, bias: Float32Array) => { w: Float32Array; b: Float32Array; cout: number }): Promise<CausalConv> {
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

  static async load(r: WeightSource, side: "encoder" | "decoder", cin: number, width: number, stages: Stage[], top: number, cout: number): Promise<Trunk> {
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
    const out = this.headConv.run(cur, { normSilu: this.headNorm.thenSilu() });
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

  static async load(r: WeightSource, cfg: VaeConfig): Promise<WanVaeDecoder> {
    const { zDim } = cfg;
    const conv2 = await foldedPointwise(r, "conv2", zDim, zDim, (w, bias) => {
      const W = new Float32Array(w.length), B = Float32Array.from(bias);
      for (let o = 0; o < zDim; o++) for (let i = 0; i < zDim; i++) {
        W[o * zDim + i] = w[o * zDim + i]! * cfg.latentsStd[i]!;
        B[o] += w[o * zDim + i]! * cfg.latentsMean[i]!;
      }
      return { w: W, b: B, cout: zDim };
    });
    const middle = await loadMiddle(r, "decoder", cfg.wan22 ? vae22Layout(cfg).decoderTop : vaeLayout(cfg).decoderTop);
    const plan = await halfPlan(r, cfg, "decoder");
    return new WanVaeDecoder(r.backend, cfg, conv2, await Trunk.load(r, "decoder", zDim, plan.width, [...middle, ...plan.stages], plan.top, plan.pixels));
  }

  /**
   * Decodes normalised latent frames z [zDim, T, h, w] that continue the stream so far (reset() starts
   * a new one) into video [3, frames, s·h, s·w] (s = 8, Wan2.2: 16), unclamped (Wan clamps to [−1, 1]
   * afterwards).
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
      const [, C, , H, W] = parts[0]!.shape as number[];
      const video = b.alloc([C!, frames, H!, W!]);
      b.concat(video.reshape([1, C!, frames, H!, W!]), parts, 2);
      if (!this.config.wan22) return video;
      const pixels = unpatchify(b, video);
      b.free(video);
      return pixels;
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

  static async load(r: WeightSource, cfg: VaeConfig): Promise<WanVaeEncoder> {
    const { zDim } = cfg, plan = await halfPlan(r, cfg, "encoder");
    const stages = [...plan.stages, ...(await loadMiddle(r, "encoder", plan.top))];
    const trunk = await Trunk.load(r, "encoder", plan.pixels, plan.width, stages, plan.top, 2 * zDim);
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

  /** Video [3, 1 + 4k, H, W] in [−1, 1] → normalised latent μ [zDim, 1 + k, H/s, W/s] (s = 8, Wan2.2:
   *  16; a new stream). */
  async encode(video: Tensor): Promise<Tensor> {
    const b = this.b;
    const patched = this.config.wan22 ? patchify(b, video) : null;
    try {
      return await this.#encode(patched ?? video);
    } finally {
      if (patched) b.free(patched);
    }
  }

  async #encode(pixels: Tensor): Promise<Tensor> {
    const b = this.b, [C, T, H, W] = pixels.shape as [number, number, number, number];
    this.reset();
    const x = pixels.reshape([1, ...pixels.shape]);
    const parts: Tensor[] = [];
    try {
      for (let start = 0; start < T; start += start === 0 ? 1 : 4) {
        const n = Math.min(start === 0 ? 1 : 4, T - start);
        const chunk = b.alloc([1, C, n, H, W]);
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
