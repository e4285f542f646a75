// The chunked causal forward of a Wan DiT trained block-causally (CausVid / Self-Forcing procedure,
// reference/wan-models.md §2): the video is generated in chunks of N latent frames; attention is full
// within a chunk and causal across chunks; each frame has its own timestep. Denoising forwards attend
// over the cached K/V of earlier chunks plus the chunk itself; once the chunk is clean, one more
// forward at t = 0 (the context pass) writes its K/V into the cache. The cross-attention K/V of the
// conditioning are computed by the caller and kept until the conditioning changes.
//
// `forwardBlockCausal` runs several chunks in one pass under the block-causal mask instead — the
// training-time view, and the reference the cached path is tested against.
import type { Tensor } from "../runtime/tensor.ts";
import { KvCache } from "./kv-cache.ts";
import type { CrossAttnKV, SelfAttention, WanDiT } from "./wan-dit.ts";

export interface CausalOptions {
  /** Latent frames per chunk (a multiple of the DiT's time patch). */
  chunkFrames: number;
  /** Attention window in latent frames, current chunk included: the cache's capacity. */
  windowFrames: number;
  /** Latent frames at the stream start that stay in the window (attention sink). */
  sinkFrames: number;
  /** Latent height and width the cache is sized for. */
  height: number;
  width: number;
}

export class CausalWanDiT {
  readonly cache: KvCache;
  readonly chunkTokens: number;

  constructor(readonly dit: WanDiT, readonly opts: CausalOptions) {
    const [pt, ph, pw] = dit.config.patch;
    if (opts.chunkFrames % pt) throw new Error(`chunk of ${opts.chunkFrames} latent frames is not a multiple of the time patch ${pt}`);
    if (opts.height % ph || opts.width % pw) throw new Error(`latent ${opts.height}x${opts.width} is not a multiple of the patch ${ph}x${pw}`);
    const tokensPerFrame = (opts.height / ph) * (opts.width / pw);
    this.chunkTokens = (opts.chunkFrames / pt) * tokensPerFrame;
    this.cache = new KvCache(dit.backend, {
      layers: dit.config.numLayers,
      heads: dit.config.numHeads,
      headDim: dit.headDim,
      tokensPerFrame,
      windowFrames: Math.ceil(opts.windowFrames / pt),
      sinkFrames: Math.ceil(opts.sinkFrames / pt),
    });
  }

  /**
   * Flow prediction for the next chunk [C, N, H, W] at timestep(s) t, attending to the cache. With
   * `commit` the chunk's K/V join the cache (the context pass) and no prediction is computed (null).
   */
  async forwardChunk(latent: Tensor, t: number | readonly number[], cross: CrossAttnKV, commit = false): Promise<Tensor | null> {
    const dit = this.dit, grid = dit.grid(latent.shape);
    if (grid[0] * grid[1] * grid[2] !== this.chunkTokens) throw new Error(`chunk [${latent.shape}] does not match the cache's chunk of ${this.chunkTokens} tokens`);
    this.cache.begin(grid[0]);
    const time = await dit.timeEmbedding(tokenFrameTimesteps(t, latent.shape[1]!, dit.config.patch[0]));
    const x = await dit.patchify(latent);
    const scale = 1 / Math.sqrt(dit.headDim);
    const self: SelfAttention = {
      store: (layer, k, v) => this.cache.store(layer, k, v),
      attend: (layer, out, q) => this.cache.attend(layer, out, q, scale),
    };
    try {
      await dit.blocks(x, grid, this.cache.nextFrame, time, cross, self, { kvOnly: commit });
      if (commit) {
        this.cache.commit();
        return null;
      }
      return await dit.head(x, grid, time);
    } finally {
      dit.backend.free(x);
      dit.freeTime(time);
    }
  }

  /** A new stream (the next chunk is frame `startFrame`, in latent frames). */
  reset(startFrame = 0): void {
    this.cache.reset(startFrame / this.dit.config.patch[0]);
  }

  free(): void {
    this.cache.free();
  }
}

/**
 * Several chunks [C, k·N, H, W] in one pass with the block-causal mask (chunk j sees chunks ≤ j),
 * per-latent-frame timesteps: what chunk-by-chunk generation with committed chunks computes.
 */
export function forwardBlockCausal(dit: WanDiT, latent: Tensor, timesteps: readonly number[], chunkFrames: number, cross: CrossAttnKV): Promise<Tensor> {
  const grid = dit.grid(latent.shape), pt = dit.config.patch[0];
  const blockSize = (chunkFrames / pt) * grid[1] * grid[2];
  return dit.forwardSequence(latent, tokenFrameTimesteps(timesteps, latent.shape[1]!, pt), cross, { blockCausal: { blockSize, qOffset: 0 } });
}

/** One timestep per token frame from one per latent frame, or one for all (frames sharing a time patch agree). */
function tokenFrameTimesteps(t: number | readonly number[], latentFrames: number, pt: number): number[] {
  const per = typeof t === "number" ? new Array<number>(latentFrames).fill(t) : [...t];
  if (per.length !== latentFrames) throw new Error(`${per.length} timesteps for ${latentFrames} latent frames`);
  return Array.from({ length: latentFrames / pt }, (_, g) => per[g * pt]!);
}
