// Building blocks of the Wan-VAE (wan/modules/vae.py) with the original's streaming feature cache.
// The VAE runs chunk by chunk in time (decode: one latent frame per call; encode: 1, 4, 4, ... frames),
// and every causal 3×3×3 conv remembers the last two frames of its input so the next chunk sees them
// as its causal padding. A fresh cache is two zero frames — exactly Wan's first call, which pads with
// zeros — so the whole clip decoded chunk by chunk equals one full-sequence causal pass.
//
// Activations are [1, C, T, H, W].
import type { Backend, ConvNormSilu } from "../runtime/backend.ts";
import { conv3dOutputShape } from "../runtime/op-params.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { WeightSource } from "./weights.ts";

/** Wan's RMS_norm: L2-normalise over channels (eps 1e-12), × √C × gamma. */
export class ChannelNorm {
  constructor(private readonly gamma: Tensor, private readonly channels: number) {}
  static async load(r: WeightSource, name: string, c: number, images = false): Promise<ChannelNorm> {
    const g = await r.vector(name, images ? [c, 1, 1] : [c, 1, 1, 1]);
    return new ChannelNorm(g.reshape([c]), c);
  }
  run(b: Backend, out: Tensor, x: Tensor): void {
    b.l2NormChannels(out, x, 1e-12, Math.sqrt(this.channels), this.gamma);
  }
  /** This norm, then SiLU, as the conv that reads their output does them (Conv3dOptions.normSilu). */
  thenSilu(): ConvNormSilu {
    return { eps: 1e-12, scale: Math.sqrt(this.channels), gamma: this.gamma };
  }
  tensors(): Tensor[] {
    return [this.gamma];
  }
}

/**
 * A conv over [1, C, T, H, W] with kernel (kt, kh, kw), symmetric spatial padding and causal time
 * padding from a cache of the previous input frames (kt − 1 of them) when `cached`.
 */
export class CausalConv {
  #cache: Tensor | null = null;
  constructor(
    private readonly b: Backend,
    readonly w: Tensor,
    readonly bias: Tensor,
    private readonly spatialPad: number,
    private readonly cached: boolean,
    private readonly stride: [number, number, number] = [1, 1, 1],
  ) {}

  static async load(r: WeightSource, name: string, cin: number, cout: number, k: [number, number, number], opts: { pad?: number; cached?: boolean; stride?: [number, number, number] } = {}): Promise<CausalConv> {
    const w = await r.matrix(`${name}.weight`, [cout, cin, ...k]);
    const bias = await r.vector(`${name}.bias`, [cout]);
    return new CausalConv(r.backend, w, bias, opts.pad ?? 0, opts.cached ?? k[0] > 1, opts.stride);
  }

  get cout(): number {
    return this.w.shape[0]!;
  }

  /** New output tensor for input x (caller frees); with `normSilu` the conv reads silu(norm(x)), and
   *  caches x itself; `residual` is added to the output. */
  run(x: Tensor, fused: { normSilu?: ConvNormSilu; residual?: Tensor } = {}): Tensor {
    const b = this.b, [, cin, , H, W] = x.shape as [number, number, number, number, number];
    const kt = this.w.shape[2]!, p = this.spatialPad;
    const timePad = this.cached ? kt - 1 : 0;
    if (this.cached && !this.#cache) {
      this.#cache = b.alloc([1, cin, timePad, H, W]);
      b.fill(this.#cache, 0);
    }
    const opts = { pad: [p, p, p, p] as const, timePad, stride: this.stride, prev: this.cached ? this.#cache! : undefined, ...fused };
    const out = b.alloc(conv3dOutputShape(x.shape, this.w.shape, opts));
    b.conv3d(out, x, this.w, this.bias, opts);
    if (this.cached) this.#remember(x);
    return out;
  }

  /** Keep the last timePad frames of cat(cache, x). */
  #remember(x: Tensor): void {
    const b = this.b, cache = this.#cache!, n = cache.shape[2]!, T = x.shape[2]!;
    if (T >= n) {
      b.slice(cache, x, 2, T - n);
      return;
    }
    const keep = b.alloc([...cache.shape.slice(0, 2), n - T, ...cache.shape.slice(3)]);
    b.slice(keep, cache, 2, T);
    b.concat(cache, [keep, x], 2);
    b.free(keep);
  }

  reset(): void {
    if (this.#cache) this.b.free(this.#cache);
    this.#cache = null;
  }

  tensors(): Tensor[] {
    return [this.w, this.bias];
  }
}

/** [RMS, SiLU, conv3³, RMS, SiLU, (dropout), conv3³] + 1×1×1 shortcut when the width changes; each
 *  RMS and SiLU run inside the conv after them, and the residual add inside the second conv
 *  (Conv3dOptions.normSilu, .residual). */
export class ResidualBlock {
  private constructor(
    private readonly b: Backend,
    private readonly norm1: ChannelNorm,
    private readonly conv1: CausalConv,
    private readonly norm2: ChannelNorm,
    private readonly conv2: CausalConv,
    private readonly shortcut: CausalConv | null,
  ) {}

  static async load(r: WeightSource, p: string, cin: number, cout: number): Promise<ResidualBlock> {
    return new ResidualBlock(
      r.backend,
      await ChannelNorm.load(r, `${p}.residual.0.gamma`, cin),
      await CausalConv.load(r, `${p}.residual.2`, cin, cout, [3, 3, 3], { pad: 1 }),
      await ChannelNorm.load(r, `${p}.residual.3.gamma`, cout),
      await CausalConv.load(r, `${p}.residual.6`, cout, cout, [3, 3, 3], { pad: 1 }),
      cin !== cout ? await CausalConv.load(r, `${p}.shortcut`, cin, cout, [1, 1, 1]) : null,
    );
  }

  run(x: Tensor): Tensor {
    const b = this.b;
    const h1 = this.conv1.run(x, { normSilu: this.norm1.thenSilu() });
    const s = this.shortcut?.run(x);
    const out = this.conv2.run(h1, { normSilu: this.norm2.thenSilu(), residual: s ?? x });
    b.free(h1, ...(s ? [s] : []));
    return out;
  }

  reset(): void {
    this.conv1.reset();
    this.conv2.reset();
  }

  tensors(): Tensor[] {
    return [this.norm1, this.conv1, this.norm2, this.conv2, ...(this.shortcut ? [this.shortcut] : [])].flatMap((m) => m.tensors());
  }
}

/** Single-head self-attention over each frame's pixels (1×1 conv qkv, scale 1/√C), plus the input. */
export class FrameAttention {
  private constructor(
    private readonly b: Backend,
    private readonly norm: ChannelNorm,
    private readonly qkv: { w: Tensor; b: Tensor },
    private readonly proj: { w: Tensor; b: Tensor },
    private readonly c: number,
  ) {}

  static async load(r: WeightSource, p: string, c: number): Promise<FrameAttention> {
    return new FrameAttention(
      r.backend,
      await ChannelNorm.load(r, `${p}.norm.gamma`, c, true),
      { w: (await r.matrix(`${p}.to_qkv.weight`, [3 * c, c, 1, 1])).reshape([3 * c, c]), b: await r.vector(`${p}.to_qkv.bias`, [3 * c]) },
      { w: (await r.matrix(`${p}.proj.weight`, [c, c, 1, 1])).reshape([c, c]), b: await r.vector(`${p}.proj.bias`, [c]) },
      c,
    );
  }

  run(x: Tensor): Tensor {
    const b = this.b, c = this.c, [, , T, H, W] = x.shape as [number, number, number, number, number];
    const n = b.alloc(x.shape), pix = b.alloc([T, H * W, c]), qkv = b.alloc([T, H * W, 3 * c]);
    const q = b.alloc([T, H * W, 1, c]), k = b.alloc([T, H * W, 1, c]), v = b.alloc([T, H * W, 1, c]), a = b.alloc([T, H * W, 1, c]);
    this.norm.run(b, n, x);
    b.permute(pix.reshape([T, H, W, c]), n.reshape([c, T, H, W]), [1, 2, 3, 0]);
    b.gemm(qkv, pix, this.qkv.w, this.qkv.b);
    const q3 = qkv.reshape([T, H * W, 3, c]);
    for (const [i, t] of [q, k, v].entries()) b.slice(t.reshape([T, H * W, 1, c]), q3, 2, i);
    b.attention(a, q, k, v, { scale: 1 / Math.sqrt(c) });
    b.gemm(pix, a.reshape([T, H * W, c]), this.proj.w, this.proj.b);
    const out = b.alloc(x.shape);
    b.permute(out.reshape([c, T, H, W]), pix.reshape([T, H, W, c]), [3, 0, 1, 2]);
    b.axpby(out, out, x, 1, 1);
    b.free(n, pix, qkv, q, k, v, a);
    return out;
  }

  tensors(): Tensor[] {
    return [...this.norm.tensors(), this.qkv.w, this.qkv.b, this.proj.w, this.proj.b];
  }
}
