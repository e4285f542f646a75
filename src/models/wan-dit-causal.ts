// The chunked causal forward of a Wan DiT trained block-causally (the CausVid / Self-Forcing
// procedure): the video is generated in chunks of N latent frames; attention is full
// within a chunk and causal across chunks; each frame has its own timestep. Denoising forwards attend
// over the cached K/V of earlier chunks plus the chunk itself; once the chunk is clean, one more
// forward at t = 0 (the context pass) writes its K/V into the cache. The cross-attention K/V of the
// conditioning are computed by the caller and kept until the conditioning changes.
//
// With `batch` > 1 the model runs several streams over the same latent in lockstep, each with its own
// KV cache and its own cross-attention K/V (stacked, WanDiT.stackCross): classifier-free guidance's
// conditional and unconditional streams as one forward, whose linear layers see twice the rows.
//
// `forwardBlockCausal` runs several chunks in one pass under the block-causal mask instead — the
// training-time view, and the reference the cached path is tested against.
//
// With `graphs`, the denoising forwards run as one recorded graph and the context passes as another
// (dit-graph.ts), and in a stream's steady state each is recorded once and launched for every later
// chunk. What differs between chunks once the attention window is full is only where the chunk sits
// in time: the KV cache keeps the window at a fixed place (its commit moves the kept frames down over
// the evicted ones, kv-cache.ts — a part of the context pass's graph, so a steady chunk enqueues no
// copy of its own), so the cache's write position, the length attention reads and the commit's move
// are the same every chunk, and the RoPE frame offset — the one scalar that grows — lives in a device tensor
// (`#frameAt`, f32 [1]) that rope3d / rmsNormRope read when they run, rewritten by one `fill` when a
// chunk starts (a kernel on the stream, where a host write would wait for the stream to drain). The
// eager forwards read the same tensor, so both ways run the same kernels on the same values.
//
// A graph's key is what its ops still depend on: the cache's held length (it grows while the window
// fills: one recording per distinct length, ⌈window / chunk⌉ at most, the last of them the steady
// state's), for the context pass the commit's moves (an eviction, or a cut's move into the sink: the
// context pass after a cut is recorded again), the conditioning (a new prompt's K/V are new tensors: recorded again, an in-place update
// on CUDA, rather than copied into kept ones, which would hold another conditioning's worth of
// memory — hundreds of MB at 14B — for a change that comes once per prompt), and the RoPE tables
// (regrown, doubling, when a stream passes their rows). So a stream of n chunks records each graph
// ⌈window / chunk⌉ times, plus twice for each conditioning it switches to, plus once per table growth,
// and the context pass twice more for each cut.
//
// The context pass computes only what the cache keeps: its last block stops once its keys and values
// are stored, and of that block only the modulation's shift and scale, the normed input and the K/V
// projection run (WanDiT.blocks' kvOnly) — every earlier block runs whole, since the next block's K/V
// come from its full output. It reads no time embedding but e0, so its graph copies no `e` in.
//
// Rejected, the cheaper-looking alternative: a ring-buffer cache whose attention reads a device-
// resident start and length. It saves the per-chunk move of the kept frames, but it changes the order
// of the keys attention sums over (and so its bits, against the eager path and the goldens) and needs
// a wrapped window in both attention kernels, wgmma's TMA descriptors included.
import type { Tensor } from "../runtime/tensor.ts";
import { type AttentionReach, reachBias, reachMasks } from "./attention-reach.ts";
import { ForwardGraph } from "./dit-graph.ts";
import { KvCache } from "./kv-cache.ts";
import type { FrameOffsetAt } from "./rope.ts";
import type { BlockTime, CrossAttnKV, Grid, SelfAttention, TimeEmbedding, WanDiT } from "./wan-dit.ts";

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
  /** Streams run together over the same latent, each with its own cache (default 1). */
  batch?: number;
  /** Run the denoising forwards and the context passes as recorded graphs where the backend has them
   *  (dit-graph.ts). */
  graphs?: boolean;
  /** Self-attention only within this many token rows and columns (attention-reach.ts); absent or
   *  null: everywhere. */
  reach?: AttentionReach | null;
}

/** A number per conditioning object, for graph keys (a new prompt's K/V are new tensors). */
const crossIds = new WeakMap<CrossAttnKV, number>();
let nextCrossId = 0;
const crossId = (c: CrossAttnKV) => crossIds.get(c) ?? (crossIds.set(c, ++nextCrossId), nextCrossId);

/** Time embeddings kept per model (a schedule has a handful of distinct timesteps). */
const MAX_CACHED_TIMES = 32;

export class CausalWanDiT {
  readonly cache: KvCache;
  readonly chunkTokens: number;
  readonly #times = new Map<string, TimeEmbedding>();
  /** The denoising forward as a graph, with `graphs`. */
  readonly graph: ForwardGraph | null;
  /** The context pass as a graph, with `graphs`. */
  readonly contextGraph: ForwardGraph | null;
  /** The token frame of the chunk's first token, read by the RoPE kernels when they run. */
  readonly #frameAt: Tensor;
  /** What `#frameAt` was last set to (NaN: not yet). */
  #frameAtValue = Number.NaN;
  /** The reach's attention bias per key count (the window fills, then stays one length), made outside
   *  any recording and kept until free(), so a recorded graph always reads the same tensor. */
  readonly #reachBiases = new Map<number, Tensor>();

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
      chunkFrames: opts.chunkFrames / pt,
      windowFrames: Math.ceil(opts.windowFrames / pt),
      sinkFrames: Math.ceil(opts.sinkFrames / pt),
      batch: this.batch,
      dtype: dit.activations,
    });
    this.graph = opts.graphs ? new ForwardGraph(dit.backend) : null;
    this.contextGraph = opts.graphs ? new ForwardGraph(dit.backend) : null;
    this.#frameAt = dit.backend.alloc([1]);
  }

  get batch(): number {
    return this.opts.batch ?? 1;
  }

  /**
   * Flow prediction for the next chunk [C, N, H, W] at timestep(s) t, attending to the cache (with
   * batch B: every stream on the same latent, [B, C, N, H, W], stream i using cross's item i). With
   * `commit` the chunk's K/V join the cache (the context pass) and no prediction is computed (null);
   * with `asSink` too they replace the cache's sink (KvCache.commit).
   */
  async forwardChunk(latent: Tensor, t: number | readonly number[], cross: CrossAttnKV, commit = false, asSink = false): Promise<Tensor | null> {
    const dit = this.dit, grid = dit.grid(latent.shape), B = this.batch;
    if (grid[0] * grid[1] * grid[2] !== this.chunkTokens || grid[1] * grid[2] !== this.cache.shape.tokensPerFrame) {
      throw new Error(`chunk [${latent.shape}] does not match the cache's chunk of ${this.cache.shape.chunkFrames} frames of ${this.cache.shape.tokensPerFrame} tokens`);
    }
    if (cross.k[0]?.shape[0] !== B) throw new Error(`cross-attention K/V for ${cross.k[0]?.shape[0]} streams, the model runs ${B}`);
    this.cache.begin();
    const frames = tokenFrameTimesteps(t, latent.shape[1]!, dit.config.patch[0]);
    const time = await this.#timeEmbedding(B === 1 ? frames : Array.from({ length: B }, () => frames).flat());
    const at = this.#frameOffset();
    const bias = this.#reachBias();
    const graph = commit ? this.contextGraph : this.graph;
    const plan = commit ? this.cache.planCommit(asSink) : null;
    let key = "";
    if (graph?.enabled) {
      // what the recorded ops depend on besides the inputs: the cache's held length, the commit's
      // moves, the conditioning's K/V and the RoPE tables (grown here, outside the recording, if the
      // offset passed them)
      const rope = dit.rope.options(grid, at);
      const moves = plan?.moves.map((m) => `${m.from}>${m.to}x${m.frames}`).join(",") ?? "";
      key = [this.cache.heldFrames, moves, crossId(cross), rope.cos.ptr, rope.cos.shape[0]].join(":");
    }
    if (plan) {
      // the context pass: the K/V only, then the commit's moves, in the graph where there is one
      const pass = (l: Tensor, e0: Tensor) => {
        this.#contextNow(l, grid, { e0, groups: time.groups }, cross, at, bias);
        this.cache.enqueueCommit(plan);
      };
      if (!graph?.runForEffect(key, [latent, time.e0], ([l, e0]) => pass(l!, e0!))) pass(latent, time.e0);
      this.cache.applyCommit(plan);
      return null;
    }
    const forward = (l: Tensor, e: Tensor, e0: Tensor) => this.#forwardNow(l, grid, { e, e0, groups: time.groups }, cross, at, bias);
    return graph?.run(key, [latent, time.e, time.e0], ([l, e, e0]) => forward(l!, e!, e0!)) ?? forward(latent, time.e, time.e0);
  }

  /** The device frame offset of the chunk about to run: `#frameAt` rewritten (one fill, enqueued
   *  before the chunk's forwards) when the chunk starts at another frame than the last forward's. */
  #frameOffset(): FrameOffsetAt {
    const value = this.cache.nextFrame;
    // an f32 holds every whole number up to 2^24: that many token frames is months of video
    if (value > 2 ** 24) throw new Error(`token frame ${value} is past what the RoPE offset tensor holds exactly (2^24)`);
    if (value !== this.#frameAtValue) {
      this.dit.backend.fill(this.#frameAt, value);
      this.#frameAtValue = value;
    }
    return { tensor: this.#frameAt, value };
  }

  /** The denoising forward, every op enqueued before it returns: the prediction. */
  #forwardNow(latent: Tensor, grid: Grid, time: TimeEmbedding, cross: CrossAttnKV, at: FrameOffsetAt, bias: Tensor | undefined): Tensor {
    const x = this.#tokens(latent);
    try {
      this.dit.blocksNow(x, grid, at, time, cross, this.#selfAttention(bias), false);
      return this.dit.headNow(x, grid, time);
    } finally {
      this.dit.backend.free(x);
    }
  }

  /** The context pass's forward, every op enqueued before it returns: the chunk's K/V into the cache. */
  #contextNow(latent: Tensor, grid: Grid, time: BlockTime, cross: CrossAttnKV, at: FrameOffsetAt, bias: Tensor | undefined): void {
    const x = this.#tokens(latent);
    try {
      this.dit.blocksNow(x, grid, at, time, cross, this.#selfAttention(bias), true);
    } finally {
      this.dit.backend.free(x);
    }
  }

  #selfAttention(bias: Tensor | undefined): SelfAttention {
    const scale = 1 / Math.sqrt(this.dit.headDim);
    return {
      store: (layer, k, v) => this.cache.store(layer, k, v),
      attend: (layer, out, q) => this.cache.attend(layer, out, q, scale, bias),
    };
  }

  /** The bias that holds this chunk's self-attention to the reach (undefined where the reach covers the
   *  grid, and for a stream's first chunk, which lays out the scene: attention-reach.ts). */
  #reachBias(): Tensor | undefined {
    const [, ph, pw] = this.dit.config.patch, rows = this.opts.height / ph, columns = this.opts.width / pw;
    const reach = this.opts.reach ?? null;
    if (!reach || !reachMasks(reach, rows, columns) || this.cache.heldFrames === 0) return undefined;
    const keys = this.cache.attendLength;
    let bias = this.#reachBiases.get(keys);
    if (!bias) {
      const queries = this.chunkTokens, heads = this.dit.config.numHeads;
      bias = this.dit.backend.upload(reachBias(reach, heads, rows, columns, queries, keys), [heads, queries, keys]);
      this.#reachBiases.set(keys, bias);
    }
    return bias;
  }

  /** Time embeddings depend on the timesteps only, and a stream repeats the same few every chunk
   *  (its denoising steps and 0): each is computed once and kept until free(). */
  async #timeEmbedding(timesteps: number[]): Promise<TimeEmbedding> {
    const key = timesteps.join(",");
    let time = this.#times.get(key);
    if (!time) {
      if (this.#times.size >= MAX_CACHED_TIMES) this.#freeTimes();
      time = await this.dit.timeEmbedding(timesteps);
      this.#times.set(key, time);
    }
    return time;
  }

  #freeTimes(): void {
    for (const t of this.#times.values()) this.dit.freeTime(t);
    this.#times.clear();
  }

  /** The latent's tokens, repeated for every stream: [B, L, dim]. */
  #tokens(latent: Tensor): Tensor {
    const one = this.dit.patchifyNow(latent);
    if (this.batch === 1) return one;
    const b = this.dit.backend, [, L, dim] = one.shape as [number, number, number];
    const all = b.alloc([this.batch, L, dim]);
    b.upsampleNearest(all, one);
    b.free(one);
    return all;
  }

  /** A new stream (the next chunk is frame `startFrame`, in latent frames). */
  reset(startFrame = 0): void {
    this.cache.reset(startFrame / this.dit.config.patch[0]);
  }

  free(): void {
    this.graph?.free();
    this.contextGraph?.free();
    this.dit.backend.free(this.#frameAt, ...this.#reachBiases.values());
    this.#reachBiases.clear();
    this.cache.free();
    this.#freeTimes();
  }
}

/**
 * Several chunks [C, k·N, H, W] in one pass with the block-causal mask (chunk j sees chunks ≤ j),
 * per-latent-frame timesteps: what chunk-by-chunk generation with committed chunks computes.
 */
export async function forwardBlockCausal(dit: WanDiT, latent: Tensor, timesteps: readonly number[], chunkFrames: number, cross: CrossAttnKV,
  reach: AttentionReach | null = null): Promise<Tensor> {
  const grid = dit.grid(latent.shape), pt = dit.config.patch[0];
  const blockSize = (chunkFrames / pt) * grid[1] * grid[2];
  const tokens = grid[0] * grid[1] * grid[2], heads = dit.config.numHeads;
  const bias = reachMasks(reach, grid[1], grid[2]) ? dit.backend.upload(reachBias(reach!, heads, grid[1], grid[2], tokens, tokens, blockSize), [heads, tokens, tokens]) : undefined;
  try {
    return await dit.forwardSequence(latent, tokenFrameTimesteps(timesteps, latent.shape[1]!, pt), cross, { blockCausal: { blockSize, qOffset: 0 }, ...(bias ? { bias } : {}) });
  } finally {
    if (bias) dit.backend.free(bias);
  }
}

/** One timestep per token frame from one per latent frame, or one for all (frames sharing a time patch agree). */
function tokenFrameTimesteps(t: number | readonly number[], latentFrames: number, pt: number): number[] {
  const per = typeof t === "number" ? new Array<number>(latentFrames).fill(t) : [...t];
  if (per.length !== latentFrames) throw new Error(`${per.length} timesteps for ${latentFrames} latent frames`);
  return Array.from({ length: latentFrames / pt }, (_, g) => per[g * pt]!);
}
