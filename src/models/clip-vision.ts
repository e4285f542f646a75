// The CLIP visual tower Wan2.1 I2V conditions on (wan/modules/clip.py `CLIPModel.visual` →
// VisionTransformer with `use_31_block=True`): the input image resized to the tower's square with
// PyTorch's bicubic (no antialiasing, aspect ratio not kept), normalised with CLIP's mean/std, cut
// into patches, a class token in front, position embeddings added, `pre_norm`, then every block but
// the last — those hidden states, class token included, are what the DiT's image embedding takes.
// No post-norm, no head.
//
// Blocks are pre-norm: x + proj(attention(LN1(x))), x + fc2(GELU(fc1(LN2(x)))), LayerNorm eps 1e-5,
// exact (erf) GELU, fused qkv laid out [q | k | v] × heads × head_dim, scale 1/√head_dim.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { ClipVisionConfig } from "./clip-vision-config.ts";
import { CheckpointError } from "./safetensors.ts";
import type { Tap } from "./umt5.ts";
import { type WeightReader, readAsF32 } from "./weights.ts";

interface Linear { w: Tensor; b: Tensor }
interface Norm { w: Tensor; b: Tensor }

interface ClipBlock {
  norm1: Norm;
  qkv: Linear;
  proj: Linear;
  norm2: Norm;
  fc1: Linear;
  fc2: Linear;
}

async function linear(r: WeightReader, name: string, nOut: number, nIn: number): Promise<Linear> {
  return { w: await r.matrix(`${name}.weight`, [nOut, nIn]), b: await r.vector(`${name}.bias`, [nOut]) };
}

async function norm(r: WeightReader, name: string, c: number): Promise<Norm> {
  return { w: await r.vector(`${name}.weight`, [c]), b: await r.vector(`${name}.bias`, [c]) };
}

/** Wan's fused to_qkv, or transformers' three projections joined on the device in the same layout. */
async function qkvProjection(r: WeightReader, p: string, d: number): Promise<Linear> {
  if (r.has(`${p}.to_qkv.weight`)) return linear(r, `${p}.to_qkv`, 3 * d, d);
  const b = r.backend, parts: Linear[] = [];
  try {
    for (const x of ["q", "k", "v"]) parts.push(await linear(r, `${p}.to_${x}`, d, d));
    const w = b.alloc([3 * d, d], parts[0]!.w.dtype), bias = b.alloc([3 * d]);
    parts.forEach((part, i) => {
      b.writeSlice(w, part.w, 0, i * d);
      b.writeSlice(bias, part.b, 0, i * d);
    });
    return { w, b: bias };
  } finally {
    b.free(...parts.flatMap((x) => [x.w, x.b]));
  }
}

/** A tensor Wan and transformers store with different leading ones ([1, 1, D] vs [D]), as f32. */
async function embeddingTable(r: WeightReader, name: string, numel: number): Promise<Float32Array> {
  const info = r.info(name);
  const n = info.shape.reduce((a, b) => a * b, 1);
  if (n !== numel) throw new CheckpointError(`${r.component}: tensor '${info.name}' has shape [${info.shape.join(", ")}], expected ${numel} values`);
  return readAsF32(info);
}

export class ClipVisionEncoder {
  private constructor(
    private readonly b: Backend,
    readonly config: ClipVisionConfig,
    /** 1×1 conv: (x·0.5 + 0.5 − mean) / std per channel, from the [−1, 1] image. */
    private readonly normalize: Linear,
    /** Patch embedding as a matrix over flattened [3, p, p] patches (no bias: pre-norm towers have none). */
    private readonly patch: Tensor,
    /** Row 0: class embedding + position 0; rows 1…: positions (added to the patch tokens). */
    private readonly embedBase: Tensor,
    private readonly preNorm: Norm,
    private readonly blocks: ClipBlock[],
  ) {}

  /** The tower's weights; the blocks past `usedLayers`, post_norm, head and the text tower are skipped. */
  static async load(r: WeightReader, cfg: ClipVisionConfig): Promise<ClipVisionEncoder> {
    const b = r.backend, { dim: d, patchSize: p, ffnDim } = cfg, grid = cfg.imageSize / p, tokens = grid * grid + 1;
    const scale = cfg.std.map((s) => 0.5 / s), shift = cfg.std.map((s, c) => (0.5 - cfg.mean[c]!) / s);
    const normW = new Float32Array(9);
    for (let c = 0; c < 3; c++) normW[c * 4] = scale[c]!;
    const normalize = { w: b.upload(normW, [3, 3, 1, 1, 1]), b: b.upload(Float32Array.from(shift), [3]) };
    const patch = (await r.matrix("visual.patch_embedding.weight", [d, 3, p, p])).reshape([d, 3 * p * p]);
    const cls = await embeddingTable(r, "visual.cls_embedding", d);
    const pos = await embeddingTable(r, "visual.pos_embedding", tokens * d);
    for (let i = 0; i < d; i++) pos[i] += cls[i]!;
    const embedBase = b.upload(pos, [1, tokens, d]);
    const preNorm = await norm(r, "visual.pre_norm", d);
    const blocks: ClipBlock[] = [];
    for (let i = 0; i < cfg.usedLayers; i++) {
      const q = `visual.transformer.${i}`;
      blocks.push({
        norm1: await norm(r, `${q}.norm1`, d),
        qkv: await qkvProjection(r, `${q}.attn`, d),
        proj: await linear(r, `${q}.attn.proj`, d, d),
        norm2: await norm(r, `${q}.norm2`, d),
        fc1: await linear(r, `${q}.mlp.0`, ffnDim, d),
        fc2: await linear(r, `${q}.mlp.2`, d, ffnDim),
      });
    }
    const used = (n: string) => /^visual\.transformer\.(\d+)\./.exec(n);
    r.ignore((n) => !n.startsWith("visual.") || n.startsWith("visual.post_norm.") || n === "visual.head" || Number(used(n)?.[1] ?? -1) >= cfg.usedLayers);
    return new ClipVisionEncoder(b, cfg, normalize, patch, embedBase, preNorm, blocks);
  }

  get tokens(): number {
    const g = this.config.imageSize / this.config.patchSize;
    return g * g + 1;
  }

  /**
   * image [3, H, W] RGB in [−1, 1] (pixel / 127.5 − 1), any size → hidden states [1, tokens, dim]
   * after `usedLayers` blocks (the caller frees). Taps: resized, normalized ([1, 3, S, S]),
   * patch_tokens ([patches, dim], row-major over the grid), embed_in, pre_norm_out, block{i}_out.
   */
  async encode(image: Tensor, tap?: Tap): Promise<Tensor> {
    const b = this.b, cfg = this.config, S = cfg.imageSize, p = cfg.patchSize, g = S / p, d = cfg.dim, L = this.tokens;
    if (image.rank !== 3 || image.shape[0] !== 3) throw new Error(`CLIP encode: image must be [3, H, W], got ${image}`);
    const hd = d / cfg.numHeads, heads = cfg.numHeads;
    const resized = b.alloc([1, 3, 1, S, S]), normed = b.alloc([1, 3, 1, S, S]), patches = b.alloc([g, g, 3, p, p]);
    const x = b.alloc([1, L, d]), h = b.alloc([1, L, d]), qkv = b.alloc([1, L, 3 * d]);
    const q = b.alloc([1, L, heads, hd]), k = b.alloc([1, L, heads, hd]), v = b.alloc([1, L, heads, hd]), a = b.alloc([1, L, heads, hd]);
    const f = b.alloc([1, L, cfg.ffnDim]);
    try {
      b.resize(resized.reshape([3, S, S]), image, { filter: "torch" });
      await tap?.("resized", resized.reshape([1, 3, S, S]));
      b.conv3d(normed, resized, this.normalize.w, this.normalize.b, { timePad: 0 });
      await tap?.("normalized", normed.reshape([1, 3, S, S]));
      // im2col: [3, g, p, g, p] → [g, g, 3, p, p], so one GEMM embeds every patch into rows 1… of x
      b.permute(patches, normed.reshape([3, g, p, g, p]), [1, 3, 0, 2, 4]);
      const patchRows = x.view([g * g, d], d);
      b.gemm(patchRows, patches.reshape([g * g, 3 * p * p]), this.patch);
      await tap?.("patch_tokens", patchRows);
      b.fill(x.view([1, d]), 0);
      b.axpby(x, x, this.embedBase, 1, 1);
      await tap?.("embed_in", x);
      b.layerNorm(x, x, cfg.eps, this.preNorm.w, this.preNorm.b);
      await tap?.("pre_norm_out", x);
      const qkv3 = qkv.reshape([1, L, 3, d]);
      for (const [i, blk] of this.blocks.entries()) {
        b.layerNorm(h, x, cfg.eps, blk.norm1.w, blk.norm1.b);
        b.gemm(qkv, h, blk.qkv.w, blk.qkv.b);
        for (const [j, t] of [q, k, v].entries()) b.slice(t.reshape([1, L, 1, d]), qkv3, 2, j);
        b.attention(a, q, k, v, { scale: 1 / Math.sqrt(hd) });
        b.gemm(x, a.reshape([1, L, d]), blk.proj.w, blk.proj.b, { kind: "residual", residual: x });
        b.layerNorm(h, x, cfg.eps, blk.norm2.w, blk.norm2.b);
        b.gemm(f, h, blk.fc1.w, blk.fc1.b);
        b.geluExact(f, f);
        b.gemm(x, f, blk.fc2.w, blk.fc2.b, { kind: "residual", residual: x });
        await tap?.(`block${i}_out`, x);
      }
      return x;
    } catch (err) {
      b.free(x);
      throw err;
    } finally {
      b.free(resized, normed, patches, h, qkv, q, k, v, a, f);
    }
  }

  free(): void {
    const ts = [this.normalize, { w: this.patch, b: this.embedBase }, this.preNorm, ...this.blocks.flatMap((x) => [x.norm1, x.qkv, x.proj, x.norm2, x.fc1, x.fc2])];
    this.b.free(...new Set(ts.flatMap((x) => [x.w.owner, x.b.owner])));
  }
}
