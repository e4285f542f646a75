// The WanModel / WanTransformer3DModel parameters, by their Wan-original names (key-maps.ts maps the
// diffusers names onto these). Matrices keep the checkpoint's dtype (or the weightDtype policy);
// norms, biases and modulation tables are f32 because the ops (and Wan's fp32 modulation) need them.
//
// Projections that read the same input are joined at load, on the device, once: the self-attention's
// q|k|v, the cross-attention's k|v over the text and (i2v) k_img|v_img over the image tokens, each one
// matrix [parts·dim, dim] that one GEMM with a split epilogue (backend.ts) runs instead of two or
// three. Each part is loaded by its own name first, so a LoRA merges into it as before; the parts stay
// reachable as views of the joined matrix (`q`, `k`, `v`).
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { WanDitConfig } from "./configs.ts";
import type { WeightSource } from "./weights.ts";

export interface Linear {
  w: Tensor;
  b: Tensor | null;
}

export interface AttentionWeights {
  /** Views of `joined`'s rows (q, k and v of the self-attention; q alone is its own for the cross-attention). */
  q: Linear; k: Linear; v: Linear; o: Linear;
  /** The joined projection: q|k|v [3·dim, dim] (self-attention) or k|v [2·dim, dim] (cross-attention). */
  joined: Linear;
  normQ: Tensor | null;
  normK: Tensor | null;
}

/** Wan2.1 i2v: a cross-attention's keys/values for the image tokens (k_img with its own RMSNorm,
 *  v_img), joined as k|v [2·dim, dim]; k and v are views of it. */
export interface ImageAttentionWeights {
  k: Linear;
  v: Linear;
  joined: Linear;
  normK: Tensor | null;
}

/** Wan2.1 i2v: MLPProj from CLIP features to the model width: LayerNorm, Linear, GELU, Linear, LayerNorm. */
export interface ImageEmbeddingWeights {
  norm1: { w: Tensor; b: Tensor };
  fc1: Linear;
  fc2: Linear;
  norm2: { w: Tensor; b: Tensor };
}

export interface BlockWeights {
  /** [6, 1, dim]: shift/scale/gate for self-attention, then for the FFN. */
  modulation: Tensor;
  selfAttn: AttentionWeights;
  /** Affine LayerNorm before cross-attention (Wan "norm3"); null without cross_attn_norm. */
  norm3: { w: Tensor; b: Tensor } | null;
  crossAttn: AttentionWeights;
  /** i2v only. */
  imageAttn: ImageAttentionWeights | null;
  ffn1: Linear;
  ffn2: Linear;
}

export interface DitWeights {
  patch: Linear; // conv kernel [dim, in, pt, ph, pw]
  textEmb1: Linear; textEmb2: Linear;
  timeEmb1: Linear; timeEmb2: Linear;
  timeProj: Linear;
  /** i2v only. */
  imageEmb: ImageEmbeddingWeights | null;
  blocks: BlockWeights[];
  /** [2, 1, dim]: shift, scale of the output norm. */
  headModulation: Tensor;
  head: Linear;
}

async function linear(r: WeightSource, name: string, out: number, inp: number): Promise<Linear> {
  return { w: await r.matrix(`${name}.weight`, [out, inp]), b: await r.vector(`${name}.bias`, [out]) };
}

/**
 * One matrix [Σ N_i, K] (and bias) from linear layers over the same input, their weights and biases
 * freed; the parts come back as views of it, in order. Weights of one dtype are copied as they are;
 * mixed dtypes (a checkpoint that stores one projection wider) are joined as f32. A part without a
 * bias gets zeros where the others have one.
 */
export function joinLinears(b: Backend, parts: readonly Linear[]): { joined: Linear; views: Linear[] } {
  const K = parts[0]!.w.shape[1]!, rows = parts.map((l) => l.w.shape[0]!);
  const N = rows.reduce((a, n) => a + n, 0);
  const dtype = parts.every((l) => l.w.dtype === parts[0]!.w.dtype) ? parts[0]!.w.dtype : "f32";
  const w = b.alloc([N, K], dtype);
  const withBias = parts.some((l) => l.b);
  const bias = withBias ? b.alloc([N]) : null;
  try {
    let at = 0;
    for (const [i, l] of parts.entries()) {
      if (l.w.dtype === dtype) b.writeSlice(w, l.w, 0, at);
      else b.cast(w.view([rows[i]!, K], at * K), l.w);
      if (bias) {
        if (l.b) b.writeSlice(bias, l.b, 0, at);
        else b.fill(bias.view([rows[i]!], at), 0);
      }
      at += rows[i]!;
    }
  } catch (err) {
    b.free(w, ...(bias ? [bias] : []));
    throw err;
  }
  b.free(...new Set(parts.flatMap((l) => [l.w, l.b]).filter((t): t is Tensor => t !== null).map((t) => t.owner)));
  let at = 0;
  const views = parts.map((_, i) => {
    const n = rows[i]!, view = { w: w.view([n, K], at * K), b: bias ? bias.view([n], at) : null };
    at += n;
    return view;
  });
  return { joined: { w, b: bias }, views };
}

async function attention(r: WeightSource, p: string, cfg: WanDitConfig, join: "qkv" | "kv"): Promise<AttentionWeights> {
  const d = cfg.dim;
  const q = await linear(r, `${p}.q`, d, d), k = await linear(r, `${p}.k`, d, d), v = await linear(r, `${p}.v`, d, d);
  const o = await linear(r, `${p}.o`, d, d);
  const normQ = cfg.qkNorm ? await r.vector(`${p}.norm_q.weight`, [d]) : null;
  const normK = cfg.qkNorm ? await r.vector(`${p}.norm_k.weight`, [d]) : null;
  if (join === "qkv") {
    const { joined, views } = joinLinears(r.backend, [q, k, v]);
    return { q: views[0]!, k: views[1]!, v: views[2]!, o, joined, normQ, normK };
  }
  const { joined, views } = joinLinears(r.backend, [k, v]);
  return { q, k: views[0]!, v: views[1]!, o, joined, normQ, normK };
}

const norm = async (r: WeightSource, name: string, n: number) => ({ w: await r.vector(`${name}.weight`, [n]), b: await r.vector(`${name}.bias`, [n]) });

async function imageAttention(r: WeightSource, p: string, cfg: WanDitConfig): Promise<ImageAttentionWeights> {
  const d = cfg.dim;
  const k = await linear(r, `${p}.k_img`, d, d), v = await linear(r, `${p}.v_img`, d, d);
  const normK = cfg.qkNorm ? await r.vector(`${p}.norm_k_img.weight`, [d]) : null;
  const { joined, views } = joinLinears(r.backend, [k, v]);
  return { k: views[0]!, v: views[1]!, joined, normK };
}

async function imageEmbedding(r: WeightSource, imageDim: number, dim: number): Promise<ImageEmbeddingWeights> {
  return {
    norm1: await norm(r, "img_emb.proj.0", imageDim),
    fc1: await linear(r, "img_emb.proj.1", imageDim, imageDim),
    fc2: await linear(r, "img_emb.proj.3", dim, imageDim),
    norm2: await norm(r, "img_emb.proj.4", dim),
  };
}

export async function loadDitWeights(r: WeightSource, cfg: WanDitConfig): Promise<DitWeights> {
  const { dim, ffnDim, freqDim, textDim, inDim, outDim, patch } = cfg;
  const image = cfg.imageDim !== null; // Wan2.1 I2V's CLIP branch or kino-tiny's latent-patch branch
  if (cfg.kind === "i2v" && !image) throw new Error("an i2v DiT config needs imageDim");
  const blocks: BlockWeights[] = [];
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `blocks.${i}`;
    blocks.push({
      modulation: (await r.vector(`${p}.modulation`, [1, 6, dim])).reshape([6, 1, dim]),
      selfAttn: await attention(r, `${p}.self_attn`, cfg, "qkv"),
      norm3: cfg.crossAttnNorm ? await norm(r, `${p}.norm3`, dim) : null,
      crossAttn: await attention(r, `${p}.cross_attn`, cfg, "kv"),
      imageAttn: image ? await imageAttention(r, `${p}.cross_attn`, cfg) : null,
      ffn1: await linear(r, `${p}.ffn.0`, ffnDim, dim),
      ffn2: await linear(r, `${p}.ffn.2`, dim, ffnDim),
    });
  }
  return {
    patch: { w: await r.matrix("patch_embedding.weight", [dim, inDim, ...patch]), b: await r.vector("patch_embedding.bias", [dim]) },
    textEmb1: await linear(r, "text_embedding.0", dim, textDim),
    textEmb2: await linear(r, "text_embedding.2", dim, dim),
    timeEmb1: await linear(r, "time_embedding.0", dim, freqDim),
    timeEmb2: await linear(r, "time_embedding.2", dim, dim),
    timeProj: await linear(r, "time_projection.1", 6 * dim, dim),
    imageEmb: image ? await imageEmbedding(r, cfg.imageDim!, dim) : null,
    blocks,
    headModulation: (await r.vector("head.modulation", [1, 2, dim])).reshape([2, 1, dim]),
    head: await linear(r, "head.head", outDim * patch[0] * patch[1] * patch[2], dim),
  };
}

/** Every tensor, once (views resolved to the tensors that own their memory). */
export function freeDitWeights(backend: Backend, w: DitWeights): void {
  const all: (Tensor | null)[] = [];
  const lin = (l: Linear) => all.push(l.w, l.b);
  const att = (a: AttentionWeights) => (lin(a.q), lin(a.joined), lin(a.o), all.push(a.normQ, a.normK));
  [w.patch, w.textEmb1, w.textEmb2, w.timeEmb1, w.timeEmb2, w.timeProj, w.head].forEach(lin);
  all.push(w.headModulation);
  if (w.imageEmb) {
    const e = w.imageEmb;
    all.push(e.norm1.w, e.norm1.b, e.norm2.w, e.norm2.b);
    lin(e.fc1);
    lin(e.fc2);
  }
  for (const b of w.blocks) {
    all.push(b.modulation, b.norm3?.w ?? null, b.norm3?.b ?? null);
    att(b.selfAttn);
    att(b.crossAttn);
    if (b.imageAttn) (lin(b.imageAttn.joined), all.push(b.imageAttn.normK));
    lin(b.ffn1);
    lin(b.ffn2);
  }
  backend.free(...new Set(all.filter((t): t is Tensor => t !== null).map((t) => t.owner)));
}
