// The image branch of the Wan2.1 image-to-video DiT (wan/modules/model.py MLPProj and
// WanI2VCrossAttention; goldens/README.md §7): CLIP features [n, image_dim] (the raw hidden states of
// the ViT's second-to-last block) become n image tokens through img_emb — LayerNorm (eps 1e-5,
// affine), Linear, exact (erf) GELU, Linear, LayerNorm (eps 1e-5, affine), not the DiT's eps 1e-6 and
// tanh GELU — and every layer projects those tokens to its own keys (k_img, then the RMSNorm
// norm_k_img) and values (v_img). Like the text's keys/values they are computed once per conditioning.
// kino-tiny has the same branch fed with its given first frame's latent patches (latentPatches).
import type { ActivationDtype, Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { WanDitConfig } from "./configs.ts";
import type { Tap } from "./umt5.ts";
import type { BlockWeights, ImageEmbeddingWeights } from "./wan-dit-weights.ts";

/** MLPProj's LayerNorm epsilon (torch's default; the DiT's own norms use 1e-6). */
const IMAGE_EMB_EPS = 1e-5;

/** Per-layer keys/values of the image tokens, [B, n, heads, head_dim] each (k and v may be views of
 *  one allocation: free their owners). */
export interface ImageKV {
  k: Tensor[];
  v: Tensor[];
}

/** Image tokens [1, n, dim] from CLIP features [1, n, image_dim]. */
async function embedImage(b: Backend, w: ImageEmbeddingWeights, features: Tensor, dim: number, tap?: Tap): Promise<Tensor> {
  const [, n, width] = features.shape as [number, number, number];
  const h = b.alloc([1, n, width]), mid = b.alloc([1, n, width]), emb = b.alloc([1, n, dim]);
  try {
    b.layerNorm(h, features, IMAGE_EMB_EPS, w.norm1.w, w.norm1.b);
    b.gemm(mid, h, w.fc1.w, w.fc1.b);
    b.geluExact(mid, mid);
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
 * kino's latent-patch image features (dit-kind.ts): a first frame's latent [C, 1, H, W] (host values)
 * cut into the DiT's ph × pw patches → rows [(H/ph)(W/pw), C·ph·pw], tokens in raster order, each
 * token's values in (channel, row, column) order — the order of the patch embedding's weights, and of
 * tools/train/image_branch.py's latent_patches, which the branch was trained on.
 */
export function latentPatches(latent: Float32Array, shape: readonly number[], patch: readonly [number, number, number]): Float32Array {
  const [C, T, H, W] = shape as [number, number, number, number];
  const [, ph, pw] = patch;
  if (shape.length !== 4 || T !== 1 || H % ph || W % pw || latent.length !== C * H * W) {
    throw new Error(`latent patches need one latent frame [C, 1, H, W] whose H and W divide by ${ph} × ${pw}, got [${shape}]`);
  }
  const gh = H / ph, gw = W / pw, width = C * ph * pw;
  const out = new Float32Array(gh * gw * width);
  for (let y = 0; y < gh; y++) {
    for (let x = 0; x < gw; x++) {
      const row = (y * gw + x) * width;
      for (let c = 0; c < C; c++) {
        for (let i = 0; i < ph; i++) {
          const from = c * H * W + (y * ph + i) * W + x * pw;
          out.set(latent.subarray(from, from + pw), row + (c * ph + i) * pw);
        }
      }
    }
  }
  return out;
}

/**
 * Every layer's image keys/values for image features (CLIP's, or latent patches) given as host rows
 * [n, image_dim] or a device tensor [1, n, image_dim] (e.g. the CLIP encoder's output, left where it
 * is), in the DiT's activation dtype (attention inputs).
 */
export async function imageAttnKV(b: Backend, cfg: WanDitConfig, emb: ImageEmbeddingWeights, blocks: readonly BlockWeights[], features: Float32Array | Tensor, activations: ActivationDtype, tap?: Tap): Promise<ImageKV> {
  const width = cfg.imageDim!, heads = cfg.numHeads, D = cfg.dim / heads;
  const host = features instanceof Float32Array;
  const n = host ? features.length / width : features.shape[features.shape.length - 2]!;
  const shapeOk = host ? Number.isInteger(n) && n > 0 : features.shape.length === 3 && features.shape[0] === 1 && features.shape[2] === width;
  if (!shapeOk) throw new Error(`image features ${host ? `of ${features.length} values` : `[${features.shape}]`} are not rows of the ${cfg.imageFeatures === "clip" ? "CLIP" : "latent patch"} width ${width}`);
  const input = host ? b.upload(features, [1, n, width]) : features;
  const out: ImageKV = { k: [], v: [] };
  let tokens: Tensor | null = null;
  try {
    tokens = await embedImage(b, emb, input, cfg.dim, tap);
    for (const block of blocks) {
      const att = block.imageAttn!;
      // k_img|v_img in one GEMM (a split epilogue): k and v are the two halves of one allocation
      const kv = b.alloc([2, 1, n, cfg.dim], activations);
      const [k, v] = [0, 1].map((i) => kv.view([1, n, heads, D], i * n * cfg.dim)) as [Tensor, Tensor];
      out.k.push(k);
      out.v.push(v);
      b.gemm(kv, tokens, att.joined.w, att.joined.b, { kind: "split", parts: 2 });
      const k3 = k.reshape([1, n, cfg.dim]);
      if (att.normK) b.rmsNorm(k3, k3, cfg.eps, att.normK);
    }
    return out;
  } catch (err) {
    b.free(...new Set([...out.k, ...out.v].map((t) => t.owner)));
    throw err;
  } finally {
    if (tokens) b.free(tokens);
    if (host) b.free(input);
  }
}
