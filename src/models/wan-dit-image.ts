// The image branch of the Wan2.1 image-to-video DiT (wan/modules/model.py MLPProj and
// WanI2VCrossAttention; goldens/README.md §7): CLIP features [n, image_dim] (the raw hidden states of
// the ViT's second-to-last block) become n image tokens through img_emb — LayerNorm (eps 1e-5,
// affine), Linear, exact (erf) GELU, Linear, LayerNorm (eps 1e-5, affine), not the DiT's eps 1e-6 and
// tanh GELU — and every layer projects those tokens to its own keys (k_img, then the RMSNorm
// norm_k_img) and values (v_img). Like the text's keys/values they are computed once per conditioning.
//
// The exact GELU runs on the host: the backends' GELU is the tanh form (3e-4 away here, past the
// goldens' tolerance), and this is a single elementwise pass over n × image_dim values once per
// request, between two device GEMMs.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { WanDitConfig } from "./configs.ts";
import type { Tap } from "./umt5.ts";
import type { BlockWeights, ImageEmbeddingWeights } from "./wan-dit-weights.ts";

/** MLPProj's LayerNorm epsilon (torch's default; the DiT's own norms use 1e-6). */
const IMAGE_EMB_EPS = 1e-5;

/** Per-layer keys/values of the image tokens, [B, n, heads, head_dim] each. */
export interface ImageKV {
  k: Tensor[];
  v: Tensor[];
}

/** erf in float64: its Maclaurin series near 0, the continued fraction of erfc further out. */
export function erf(x: number): number {
  const z = Math.abs(x);
  if (z < 2.5) {
    let term = z, sum = z;
    for (let n = 1; n < 60 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= (-z * z) / n;
      sum += term / (2 * n + 1);
    }
    return Math.sign(x) * sum * (2 / Math.sqrt(Math.PI));
  }
  if (z > 6) return Math.sign(x); // erfc(6) ≈ 2e-17
  let f = z; // erfc(z) = exp(−z²) / (√π · (z + ½/(z + 1/(z + 3⁄2/(z + …)))))
  for (let k = 60; k >= 1; k--) f = z + k / 2 / f;
  return Math.sign(x) * (1 - Math.exp(-z * z) / (Math.sqrt(Math.PI) * f));
}

/** x · Φ(x) = x/2 · (1 + erf(x/√2)), in place (torch's nn.GELU() default, approximate='none'). */
export function geluExact(values: Float32Array): void {
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    values[i] = 0.5 * x * (1 + erf(x * Math.SQRT1_2));
  }
}

/** Image tokens [1, n, dim] from CLIP features [1, n, image_dim]. */
async function embedImage(b: Backend, w: ImageEmbeddingWeights, features: Tensor, dim: number, tap?: Tap): Promise<Tensor> {
  const [, n, width] = features.shape as [number, number, number];
  const h = b.alloc([1, n, width]), mid = b.alloc([1, n, width]), emb = b.alloc([1, n, dim]);
  try {
    b.layerNorm(h, features, IMAGE_EMB_EPS, w.norm1.w, w.norm1.b);
    b.gemm(mid, h, w.fc1.w, w.fc1.b);
    const host = await b.download(mid);
    geluExact(host);
    b.write(mid, host);
    b.gemm(emb, mid, w.fc2.w, w.fc2.b);
    b.layerNorm(emb, emb, IMAGE_EMB_EPS, w.norm2.w, w.norm2.b);
    await tap?.("img_emb_out", emb);
    return emb;
  } catch (err) {
    b.free(emb);
    throw err;
  } finally {
    b.free(h, mid);
  }
}

/**
 * Every layer's image keys/values for CLIP features given as host rows [n, image_dim] or a device
 * tensor [1, n, image_dim] (e.g. the CLIP encoder's output, left where it is).
 */
export async function imageAttnKV(b: Backend, cfg: WanDitConfig, emb: ImageEmbeddingWeights, blocks: readonly BlockWeights[], features: Float32Array | Tensor, tap?: Tap): Promise<ImageKV> {
  const width = cfg.imageDim!, heads = cfg.numHeads, D = cfg.dim / heads;
  const host = features instanceof Float32Array;
  const n = host ? features.length / width : features.shape[features.shape.length - 2]!;
  const shapeOk = host ? Number.isInteger(n) && n > 0 : features.shape.length === 3 && features.shape[0] === 1 && features.shape[2] === width;
  if (!shapeOk) throw new Error(`image features ${host ? `of ${features.length} values` : `[${features.shape}]`} are not rows of the CLIP width ${width}`);
  const input = host ? b.upload(features, [1, n, width]) : features;
  const out: ImageKV = { k: [], v: [] };
  let tokens: Tensor | null = null;
  try {
    tokens = await embedImage(b, emb, input, cfg.dim, tap);
    for (const block of blocks) {
      const att = block.imageAttn!;
      const k = b.alloc([1, n, heads, D]), v = b.alloc([1, n, heads, D]);
      out.k.push(k);
      out.v.push(v);
      const k3 = k.reshape([1, n, cfg.dim]);
      b.gemm(k3, tokens, att.k.w, att.k.b);
      if (att.normK) b.rmsNorm(k3, k3, cfg.eps, att.normK);
      b.gemm(v.reshape([1, n, cfg.dim]), tokens, att.v.w, att.v.b);
    }
    return out;
  } catch (err) {
    b.free(...out.k, ...out.v);
    throw err;
  } finally {
    if (tokens) b.free(tokens);
    if (host) b.free(input);
  }
}
