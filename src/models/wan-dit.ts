// WanTransformer3D (wan/modules/model.py WanModel, t2v) on the Backend ops, with the original's exact
// semantics (goldens/README.md §1 lists the traps): sinusoidal time embedding [cos, sin] in float64;
// fp32 modulation `LN(x)·(1 + scale) + shift` and gated residuals; q/k RMSNorm over the full width
// before the head split; 3D RoPE on adjacent pairs; context zero-padded to text_len and attended
// without a mask; affine LayerNorm before the (unmodulated, ungated) cross-attention; a head that adds
// its table to the time embedding e itself (no SiLU).
//
// The Wan2.1 image-to-video DiT (kind "i2v", §7) adds a second set of cross-attention keys/values over
// the CLIP image tokens (wan-dit-image.ts); each layer attends to text and image separately and adds
// the two results before its output projection. The Wan2.2 text-image-to-video DiT (kind "ti2v", §10)
// is the t2v structure driven by one timestep per token (forwardPerToken).
//
// The forward is split into stages the chunked causal model (wan-dit-causal.ts) reuses: time
// embedding (one timestep per token frame), text embedding + per-layer cross-attention K/V (cached
// by the caller while the conditioning does not change), patchify, the blocks with a pluggable
// self-attention (plain here; KV cache there), head and unpatchify.
//
// The elementwise steps run inside the ops around them (backend.ts): LN + modulation as one
// layerNormModulate, the q/k RMSNorm + RoPE as one rmsNormRope, the FFN's GELU and every residual
// (gated or not) in the epilogue of the GEMM before it.
//
// Activations (`activations`, backend.ts "Activations"): the tensors whose only consumers are
// tensor-core ops — the LayerNorm outputs (into the QKV, cross-Q, FFN-up and head GEMMs), q/k/v after
// RMSNorm + RoPE and the cross-attention's K/V (into attention), the attention outputs (into the O
// projections), the FFN hidden after GELU (into FFN-down) and the KV cache — are stored in this dtype:
// bf16 on CUDA, where the tensor cores round them to bf16 anyway, f32 on the CPU. The residual stream
// x, every statistic (norms, softmax), the time embedding and modulation tables, and the latent in
// and out stay f32. With f32 the forward is exactly what it was (the goldens hold bit for bit).
import type { ActivationDtype, AttentionOptions, Backend } from "../runtime/backend.ts";
import { type Tensor, numelOf } from "../runtime/tensor.ts";
import type { WanDitConfig } from "./configs.ts";
import { DeviceRope, type FrameOffsetAt } from "./rope.ts";
import { type Steps, drain, drive } from "./tap-steps.ts";
import type { Tap } from "./umt5.ts";
import { type ImageKV, imageAttnKV } from "./wan-dit-image.ts";
import { type DitWeights, type Linear, freeDitWeights, loadDitWeights } from "./wan-dit-weights.ts";
import type { WeightSource } from "./weights.ts";

/** Per-layer cross-attention K/V of one conditioning, [1, text_len, heads, head_dim] each, or of
 *  several stacked for a batched forward ([B, ...], stackCross). An i2v model also has the image
 *  tokens' K/V ([1, n, heads, head_dim] per layer). */
export interface CrossAttnKV {
  k: Tensor[];
  v: Tensor[];
  image?: ImageKV;
}

/** Time embeddings of one forward: e [G, dim] and the per-block modulation input e0 as [6, G, dim].
 *  A batched forward over B streams has B·G rows, stream-major (each stream's G token frames). */
export interface TimeEmbedding {
  e: Tensor;
  e0: Tensor;
  groups: number;
}

/** What the blocks read of the time embedding (e feeds the head alone). */
export type BlockTime = Pick<TimeEmbedding, "e0" | "groups">;

/** How a block's self-attention finds its keys: the chunk itself, or a KV cache around it. */
export interface SelfAttention {
  /** Receives the layer's rotated keys and values [B, L, H, D] (a cache writes them). */
  store(layer: number, k: Tensor, v: Tensor): void;
  /** out ← attention of q over the stored keys. */
  attend(layer: number, out: Tensor, q: Tensor): void;
}

/** The token grid of a latent: (frames, height, width) after patching. */
export type Grid = [number, number, number];

export interface WanDitOptions {
  /** The dtype of the activations between tensor-core ops (see the header). Default: the backend's
   *  `activationDtype`. */
  activations?: ActivationDtype;
}

export class WanDiT {
  readonly rope: DeviceRope;
  readonly headDim: number;
  /** The dtype of the activations between tensor-core ops (the header says which). */
  readonly activations: ActivationDtype;
  /** The model this one shares its weights with (withActivations), or null when it owns them. */
  readonly #owner: WanDiT | null;

  private constructor(readonly backend: Backend, readonly config: WanDitConfig, readonly weights: DitWeights, activations: ActivationDtype, owner: WanDiT | null = null) {
    this.headDim = config.dim / config.numHeads;
    this.rope = owner ? owner.rope : new DeviceRope(backend, this.headDim, config.ropeMaxSeqLen);
    this.activations = activations;
    this.#owner = owner;
  }

  static async load(reader: WeightSource, config: WanDitConfig, opts: WanDitOptions = {}): Promise<WanDiT> {
    return new WanDiT(reader.backend, config, await loadDitWeights(reader, config), opts.activations ?? reader.backend.activationDtype);
  }

  /** The same model (the same weights, no copy) with its activations in another dtype: benchmarks and
   *  tests compare the two. It owns nothing; freeing it is a no-op and the model it came from must
   *  outlive it. Its cross-attention K/V and KV caches are its own dtype's. */
  withActivations(activations: ActivationDtype): WanDiT {
    return new WanDiT(this.backend, this.config, this.weights, activations, this.#owner ?? this);
  }

  free(): void {
    if (this.#owner) return;
    this.rope.free();
    freeDitWeights(this.backend, this.weights);
  }

  #linear(out: Tensor, x: Tensor, l: Linear): void {
    this.backend.gemm(out, x, l.w, l.b);
  }

  /** Token grid of a latent [C, F, H, W]. */
  grid(latentShape: readonly number[]): Grid {
    const [pt, ph, pw] = this.config.patch;
    const [, F, H, W] = latentShape as [number, number, number, number];
    if (F % pt || H % ph || W % pw) throw new Error(`latent [${latentShape}] is not a multiple of the patch ${this.config.patch}`);
    return [F / pt, H / ph, W / pw];
  }

  /** e and e0 for one timestep per token frame (or one for all: groups = 1). */
  async timeEmbedding(timesteps: readonly number[], tap?: Tap): Promise<TimeEmbedding> {
    const b = this.backend, { dim, freqDim } = this.config, G = timesteps.length;
    const half = freqDim / 2;
    const sin = new Float32Array(G * freqDim);
    timesteps.forEach((t, g) => {
      for (let i = 0; i < half; i++) {
        const arg = t * 10000 ** (-i / half); // float64, like Wan
        sin[g * freqDim + i] = Math.cos(arg);
        sin[g * freqDim + half + i] = Math.sin(arg);
      }
    });
    const sinEmb = b.upload(sin, [G, freqDim]);
    const h = b.alloc([G, dim]), e = b.alloc([G, dim]), e0 = b.alloc([G, 6 * dim]), e0p = b.alloc([6, G, dim]);
    try {
      await tap?.("sin_emb", sinEmb);
      this.#linear(h, sinEmb, this.weights.timeEmb1);
      b.silu(h, h);
      this.#linear(e, h, this.weights.timeEmb2);
      await tap?.("e", e);
      b.silu(h, e);
      this.#linear(e0, h, this.weights.timeProj);
      await tap?.("e0", e0);
      b.permute(e0p, e0.reshape([G, 6, dim]), [1, 0, 2]);
      return { e, e0: e0p, groups: G };
    } finally {
      b.free(sinEmb, h, e0);
    }
  }

  freeTime(t: TimeEmbedding): void {
    this.backend.free(t.e, t.e0);
  }

  /**
   * Cross-attention K/V of every layer for a context given as host rows [rows, text_dim] (rows ≤
   * text_len; the rest are zeros, as Wan pads). An i2v model needs the CLIP image features too (host
   * rows [n, image_dim] or a device tensor [1, n, image_dim]); a DiT with kino's latent-patch branch
   * takes a given first frame's patches (latentPatches) or nothing; the others take none.
   */
  async crossAttnKV(context: Float32Array, tap?: Tap, image?: Float32Array | Tensor): Promise<CrossAttnKV> {
    const b = this.backend, { dim, textDim, textLen, numHeads, eps } = this.config;
    if (context.length % textDim || context.length / textDim > textLen) {
      throw new Error(`context of ${context.length} values is not at most ${textLen} rows of ${textDim}`);
    }
    const imageEmb = this.weights.imageEmb;
    if (imageEmb && !image && this.config.imageFeatures === "clip") throw new Error("an image-to-video DiT needs the CLIP features of the conditioning image");
    if (!imageEmb && image) throw new Error(`a ${this.config.kind} DiT without an image branch takes no image features`);
    const padded = new Float32Array(textLen * textDim);
    padded.set(context);
    const ctx = b.upload(padded, [1, textLen, textDim]);
    const h = b.alloc([1, textLen, dim]), emb = b.alloc([1, textLen, dim]);
    const out: CrossAttnKV = { k: [], v: [] };
    try {
      await tap?.("context_padded", ctx);
      b.gemm(h, ctx, this.weights.textEmb1.w, this.weights.textEmb1.b, { kind: "gelu" });
      this.#linear(emb, h, this.weights.textEmb2);
      await tap?.("context_emb", emb);
      for (const block of this.weights.blocks) {
        // k|v in one GEMM (a split epilogue): k and v are the two halves of one allocation, attention
        // inputs, so in the activation dtype
        const kv = b.alloc([2, 1, textLen, dim], this.activations);
        const [k, v] = [0, 1].map((i) => kv.view([1, textLen, numHeads, this.headDim], i * textLen * dim)) as [Tensor, Tensor];
        out.k.push(k);
        out.v.push(v);
        b.gemm(kv, emb, block.crossAttn.joined.w, block.crossAttn.joined.b, { kind: "split", parts: 2 });
        const k3 = k.reshape([1, textLen, dim]);
        if (block.crossAttn.normK) b.rmsNorm(k3, k3, eps, block.crossAttn.normK);
      }
      if (imageEmb && image) out.image = await imageAttnKV(b, this.config, imageEmb, this.weights.blocks, image, this.activations, tap);
      return out;
    } catch (err) {
      this.freeCross(out);
      throw err;
    } finally {
      b.free(ctx, h, emb);
    }
  }

  /** The K/V of several conditionings stacked along the batch ([B, text_len, H, D] per layer): the
   *  cross-attention of a batched forward whose stream i attends to parts[i]. */
  stackCross(parts: readonly CrossAttnKV[]): CrossAttnKV {
    const b = this.backend, out: CrossAttnKV = { k: [], v: [] };
    const withImage = parts.filter((p) => p.image).length;
    if (withImage !== 0 && withImage !== parts.length) throw new Error("cannot stack conditionings with and without image tokens");
    const stack = (ts: Tensor[]) => {
      const [, L, H, D] = ts[0]!.shape as [number, number, number, number];
      const t = b.alloc([ts.length, L, H, D], ts[0]!.dtype);
      b.concat(t, ts, 0);
      return t;
    };
    for (let i = 0; i < this.weights.blocks.length; i++) {
      out.k.push(stack(parts.map((p) => p.k[i]!)));
      out.v.push(stack(parts.map((p) => p.v[i]!)));
      if (withImage) {
        out.image ??= { k: [], v: [] };
        out.image.k.push(stack(parts.map((p) => p.image!.k[i]!)));
        out.image.v.push(stack(parts.map((p) => p.image!.v[i]!)));
      }
    }
    return out;
  }

  freeCross(c: CrossAttnKV): void {
    // k and v may be views of one allocation (a layer's k|v): each allocation is freed once
    this.backend.free(...new Set([...c.k, ...c.v, ...(c.image?.k ?? []), ...(c.image?.v ?? [])].map((t) => t.owner)));
    c.k.length = c.v.length = 0;
    c.image = undefined;
  }

  /** The i2v model's input [in_dim, F, H, W]: the noisy latent [out_dim, ...] followed by the
   *  conditioning y [4 mask + out_dim latent channels, ...] (Wan concatenates noise first). */
  withCondition(latent: Tensor, y: Tensor): Tensor {
    const { inDim, outDim, kind } = this.config, [c, ...rest] = latent.shape;
    if (kind !== "i2v") throw new Error(`a ${kind} DiT takes no channel conditioning`);
    if (c !== outDim || y.shape.length !== 4 || y.shape[0] !== inDim - outDim || y.shape.slice(1).join() !== rest.join()) {
      throw new Error(`latent [${latent.shape}] and condition [${y.shape}] do not make the [${inDim}, F, H, W] input (noise ${outDim} + condition ${inDim - outDim} channels)`);
    }
    const x = this.backend.alloc([inDim, ...rest]);
    this.backend.concat(x, [latent, y], 0);
    return x;
  }

  /** Latent [C, F, H, W] → tokens [1, L, dim] (patch embedding conv, flattened f-major). */
  patchify(latent: Tensor, tap?: Tap): Promise<Tensor> {
    return drive(this.#patchify(latent), tap);
  }

  /** `patchify` without taps, enqueued before it returns. */
  patchifyNow(latent: Tensor): Tensor {
    return drain(this.#patchify(latent));
  }

  *#patchify(latent: Tensor): Steps<Tensor> {
    const b = this.backend, { dim, patch } = this.config;
    const [f, h, w] = this.grid(latent.shape);
    if (latent.shape[0] !== this.config.inDim) throw new Error(`latent [${latent.shape}] has ${latent.shape[0]} channels; the DiT takes ${this.config.inDim}`);
    const conv = b.alloc([1, dim, f, h, w]);
    const tokens = b.alloc([1, f * h * w, dim]);
    try {
      b.conv3d(conv, latent.reshape([1, ...latent.shape]), this.weights.patch.w, this.weights.patch.b, { stride: patch, timePad: 0 });
      yield ["patch_conv_out", conv];
      b.permute(tokens.reshape([1, f, h, w, dim]), conv, [0, 2, 3, 4, 1]);
      yield ["tokens_in", tokens];
      return tokens;
    } catch (err) {
      b.free(tokens);
      throw err;
    } finally {
      b.free(conv);
    }
  }

  /**
   * Runs every block on tokens x [B, L, dim] in place: B streams of the same grid in one pass (the
   * linear layers see B·L rows; stream i attends to its own keys and to cross's item i). `frameOffset`
   * is the absolute token frame of the first token (RoPE): a number, or a tensor read when the ops run
   * (a causal stream's recorded graph, rope.ts). With `kvOnly` (a causal context pass, which only
   * fills the cache) the last block computes its keys and values alone — its modulation's shift and
   * scale, the normed input, the k|v rows of the projection, k's norm and rotation — and stops once
   * they are stored; x is then left as it was before that block. The earlier blocks run whole: the
   * next block's keys come from a block's full output.
   */
  blocks(x: Tensor, grid: Grid, frameOffset: number | FrameOffsetAt, time: BlockTime, cross: CrossAttnKV, self: SelfAttention, opts: { tap?: Tap; kvOnly?: boolean } = {}): Promise<void> {
    return drive(this.#blocks(x, grid, frameOffset, time, cross, self, !!opts.tap, opts.kvOnly ?? false), opts.tap);
  }

  /** `blocks` without taps, enqueued before it returns. */
  blocksNow(x: Tensor, grid: Grid, frameOffset: number | FrameOffsetAt, time: BlockTime, cross: CrossAttnKV, self: SelfAttention, kvOnly = false): void {
    drain(this.#blocks(x, grid, frameOffset, time, cross, self, false, kvOnly));
  }

  *#blocks(x: Tensor, grid: Grid, frameOffset: number | FrameOffsetAt, time: BlockTime, cross: CrossAttnKV, self: SelfAttention, tapping: boolean, kvOnly: boolean): Steps<void> {
    const b = this.backend, { dim, ffnDim, numHeads, eps } = this.config;
    const [B, L] = x.shape as [number, number], G = time.groups, D = this.headDim;
    if (G % B) throw new Error(`${G} time embedding rows for ${B} streams`);
    const heads = (t: Tensor) => t.reshape([B, t.shape[1]!, numHeads, D]);
    const rope = this.rope.options(grid, frameOffset);
    const image = cross.image;
    if (image ? !this.weights.imageEmb : this.config.imageFeatures === "clip") throw new Error(`cross-attention K/V ${image ? "with" : "without"} image tokens for a ${this.config.kind} DiT`);
    const act = this.activations;
    if (cross.k[0] && cross.k[0].dtype !== act) throw new Error(`cross-attention K/V in ${cross.k[0].dtype} for a DiT with ${act} activations (make them with this model's crossAttnKV)`);
    // q, k, v come out of one GEMM as the three parts of qkv (a split epilogue); the cross-attention's
    // queries reuse q's part. Every buffer here but x and the modulation table feeds a tensor-core op
    // only: the activation dtype.
    const h = b.alloc([B, L, dim], act), qkv = b.alloc([3, B, L, dim], act);
    const [q, k, v] = [0, 1, 2].map((i) => qkv.view([B, L, dim], i * B * L * dim)) as [Tensor, Tensor, Tensor];
    const att = b.alloc([B, L, dim], act), ffn = b.alloc([B, L, ffnDim], act), mod = b.alloc([6, G, dim]);
    const attImg = image ? b.alloc([B, L, dim], act) : null;
    // a tapped sub-layer's output alone (before its residual) is f32, as the residual stream it joins
    const tapOut = tapping ? b.alloc([B, L, dim]) : null;
    const part = (i: number) => mod.view([B, G / B, dim], i * G * dim); // shift_sa, scale_sa, gate_sa, shift_ff, scale_ff, gate_ff
    // q/k RMSNorm across heads fused with RoPE (without qk_norm: RoPE alone)
    const normRope = (t: Tensor, norm: Tensor | null) => (norm ? b.rmsNormRope(heads(t), heads(t), eps, norm, rope) : b.rope3d(heads(t), heads(t), rope));
    try {
      for (const [i, w] of this.weights.blocks.entries()) {
        // x ← x + gate · (input · l): the residual in the GEMM's epilogue. The goldens store each
        // sub-layer's output before its residual, so a tapped block 0 also computes that alone.
        const tapped = i === 0 && tapping;
        const residual = (input: Tensor, l: Linear, gate: Tensor | null) => b.gemm(x, input, l.w, l.b, { kind: "residual", residual: x, gate });
        const alone = (input: Tensor, l: Linear) => (this.#linear(tapOut!, input, l), tapOut!);
        if (kvOnly && i === this.weights.blocks.length - 1) {
          // the K/V alone: the same ops on the rows they need (elementwise ops, and a GEMM's outputs
          // do not depend on which other rows of w it computes), so the same bits
          const shiftScale = mod.view([2, G, dim], 0);
          b.upsampleNearest(shiftScale, w.modulation.view([2, 1, dim], 0));
          b.axpby(shiftScale, shiftScale, time.e0.view([2, G, dim], 0), 1, 1);
          b.layerNormModulate(h, x, eps, part(1), part(0));
          const kv = kvRows(w.selfAttn.joined, dim);
          b.gemm(qkv.view([2, B, L, dim], B * L * dim), h, kv.w, kv.b, { kind: "split", parts: 2 });
          normRope(k, w.selfAttn.normK);
          self.store(i, heads(k), heads(v));
          return;
        }
        b.upsampleNearest(mod, w.modulation);
        b.axpby(mod, mod, time.e0, 1, 1);
        // self-attention
        b.layerNormModulate(h, x, eps, part(1), part(0));
        b.gemm(qkv, h, w.selfAttn.joined.w, w.selfAttn.joined.b, { kind: "split", parts: 3 });
        normRope(q, w.selfAttn.normQ);
        normRope(k, w.selfAttn.normK);
        self.store(i, heads(k), heads(v));
        self.attend(i, heads(att), heads(q));
        if (tapped) yield ["block0_self_attn_out", alone(att, w.selfAttn.o)];
        residual(att, w.selfAttn.o, part(2));
        // cross-attention over the (cached) context keys
        if (w.norm3) b.layerNorm(h, x, eps, w.norm3.w, w.norm3.b);
        else b.layerNorm(h, x, eps);
        this.#linear(q, h, w.crossAttn.q);
        if (w.crossAttn.normQ) b.rmsNorm(q, q, eps, w.crossAttn.normQ);
        b.attention(heads(att), heads(q), cross.k[i]!, cross.v[i]!, { scale: 1 / Math.sqrt(D) });
        if (image && attImg) {
          // an image branch: the same queries over the image tokens, a softmax of their own, summed before `o`
          b.attention(heads(attImg), heads(q), image.k[i]!, image.v[i]!, { scale: 1 / Math.sqrt(D) });
          if (tapped) {
            yield ["block0_cross_attn_in", h]; // the i2v goldens record these three too
            yield ["block0_cross_attn_txt", heads(att)];
            yield ["block0_cross_attn_img", heads(attImg)];
          }
          b.axpby(att, att, attImg, 1, 1);
        }
        if (tapped) yield ["block0_cross_attn_out", alone(att, w.crossAttn.o)];
        residual(att, w.crossAttn.o, null);
        // feed-forward
        b.layerNormModulate(h, x, eps, part(4), part(3));
        b.gemm(ffn, h, w.ffn1.w, w.ffn1.b, { kind: "gelu" });
        if (tapped) yield ["block0_ffn_out", alone(ffn, w.ffn2)];
        residual(ffn, w.ffn2, part(5));
        if (tapping) yield [`block${i}_out`, x];
      }
    } finally {
      b.free(h, qkv, att, ffn, mod, ...(attImg ? [attImg] : []), ...(tapOut ? [tapOut] : []));
    }
  }

  /**
   * Output norm + projection, then unpatchify: tokens [1, L, dim] → flow prediction [C, F, H, W]
   * (B streams [B, L, dim] → [B, C, F, H, W]).
   */
  head(x: Tensor, grid: Grid, time: TimeEmbedding, tap?: Tap): Promise<Tensor> {
    return drive(this.#head(x, grid, time), tap);
  }

  /** `head` without taps, enqueued before it returns. */
  headNow(x: Tensor, grid: Grid, time: TimeEmbedding): Tensor {
    return drain(this.#head(x, grid, time));
  }

  *#head(x: Tensor, grid: Grid, time: TimeEmbedding): Steps<Tensor> {
    const b = this.backend, { dim, outDim, patch, eps } = this.config;
    const [f, gh, gw] = grid, [pt, ph, pw] = patch, G = time.groups, [B, L] = x.shape as [number, number];
    const table = b.alloc([2, G, dim]), e2 = b.alloc([2, G, dim]);
    const h = b.alloc([B, L, dim], this.activations), out = b.alloc([B, L, outDim * pt * ph * pw]);
    const frame = [outDim, f * pt, gh * ph, gw * pw], n = numelOf(frame);
    const video = b.alloc(B === 1 ? frame : [B, ...frame]);
    try {
      b.upsampleNearest(table, this.weights.headModulation);
      b.upsampleNearest(e2, time.e.reshape([1, G, dim]));
      b.axpby(table, table, e2, 1, 1);
      b.layerNormModulate(h, x, eps, table.view([B, G / B, dim], G * dim), table.view([B, G / B, dim], 0));
      this.#linear(out, h, this.weights.head);
      yield ["head_out", out];
      // features [pt, ph, pw, C] per token (C fastest) → video [C, f·pt, h·ph, w·pw], per stream
      for (let i = 0; i < B; i++) {
        b.permute(video.view([outDim, f, pt, gh, ph, gw, pw], i * n), out.view([f, gh, gw, pt, ph, pw, outDim], i * n), [6, 0, 3, 1, 4, 2, 5]);
      }
      yield ["out", video];
      return video;
    } catch (err) {
      b.free(video);
      throw err;
    } finally {
      b.free(table, e2, h, out);
    }
  }

  /** The bidirectional forward: flow prediction for a whole latent [C, F, H, W] at timestep t. */
  forward(latent: Tensor, t: number, cross: CrossAttnKV, tap?: Tap): Promise<Tensor> {
    return this.forwardSequence(latent, [t], cross, {}, tap);
  }

  /**
   * The forward with one timestep per token (Wan2.2 TI2V: the first frame's tokens at t = 0, the rest
   * at the step's t; tokens f-major, then h, w): time embedding and adaLN modulation per token, as the
   * original computes them. Runs of equal timesteps are embedded once (timestepGroups): the same
   * values, at the cost of one row per frame rather than per token when whole frames agree.
   */
  async forwardPerToken(latent: Tensor, tokenTimesteps: readonly number[], cross: CrossAttnKV, tap?: Tap): Promise<Tensor> {
    return this.forwardSequence(latent, this.tokenTimestepGroups(latent, tokenTimesteps), cross, {}, tap);
  }

  /** forwardPerToken's timesteps, one per token of the latent's grid, as forwardSequence takes them. */
  tokenTimestepGroups(latent: Tensor, tokenTimesteps: readonly number[]): number[] {
    const [f, h, w] = this.grid(latent.shape);
    if (tokenTimesteps.length !== f * h * w) throw new Error(`${tokenTimesteps.length} timesteps for the ${f * h * w} tokens of a ${f}x${h}x${w} grid`);
    return timestepGroups(tokenTimesteps);
  }

  /**
   * A forward over a whole latent without a cache: G timesteps for G equal runs of consecutive tokens
   * (one for all, one per token frame, one per token), the self-attention restricted by `attention`
   * (a block-causal mask, a bias) or full.
   */
  async forwardSequence(latent: Tensor, timesteps: readonly number[], cross: CrossAttnKV, attention: Pick<AttentionOptions, "blockCausal" | "bias">, tap?: Tap): Promise<Tensor> {
    const grid = this.grid(latent.shape);
    const time = await this.timeEmbedding(timesteps, tap);
    try {
      if (!tap) return this.sequenceNow(latent, time, cross, attention);
      const x = await this.patchify(latent, tap);
      try {
        await this.blocks(x, grid, 0, time, cross, this.#selfAttention(attention), { tap });
        return await this.head(x, grid, time, tap);
      } finally {
        this.backend.free(x);
      }
    } finally {
      this.freeTime(time);
    }
  }

  /**
   * `forwardSequence` for a time embedding made before (timeEmbedding), without taps, every op
   * enqueued before it returns: what a recorded graph replays (wan-dit-graphed.ts). The RoPE table
   * must already cover the grid (rope.options grows it with an upload).
   */
  sequenceNow(latent: Tensor, time: TimeEmbedding, cross: CrossAttnKV, attention: Pick<AttentionOptions, "blockCausal" | "bias"> = {}): Tensor {
    const grid = this.grid(latent.shape);
    const x = this.patchifyNow(latent);
    try {
      this.blocksNow(x, grid, 0, time, cross, this.#selfAttention(attention));
      return this.headNow(x, grid, time);
    } finally {
      this.backend.free(x);
    }
  }

  /** Self-attention over the forward's own keys (no cache): each layer attends to what it just stored. */
  #selfAttention(attention: Pick<AttentionOptions, "blockCausal" | "bias">): SelfAttention {
    const scale = 1 / Math.sqrt(this.headDim);
    const kv: Tensor[] = [];
    return {
      store: (_layer, k, v) => void kv.splice(0, 2, k, v),
      attend: (_layer, out, q) => this.backend.attention(out, q, kv[0]!, kv[1]!, { ...attention, scale }),
    };
  }
}

/**
 * The fewest equal runs of consecutive tokens that per-token timesteps are constant over: G values for
 * G runs of L/G tokens (G divides L) — one for all tokens, one per frame, ..., one per token. The
 * modulation ops broadcast a row over its run, so the result is the per-token forward's.
 */
export function timestepGroups(perToken: readonly number[]): number[] {
  const L = perToken.length;
  for (let G = 1; G < L; G++) {
    if (L % G) continue;
    const run = L / G;
    let uniform = true;
    for (let i = 0; uniform && i < L; i++) uniform = perToken[i] === perToken[i - (i % run)];
    if (uniform) return Array.from({ length: G }, (_, g) => perToken[g * run]!);
  }
  return [...perToken];
}

/** The k|v rows of a self-attention's joined q|k|v projection [3·dim, K], as views. */
function kvRows(l: Linear, dim: number): Linear {
  const K = l.w.shape[1]!;
  return { w: l.w.view([2 * dim, K], dim * K), b: l.b ? l.b.view([2 * dim], dim) : null };
}
