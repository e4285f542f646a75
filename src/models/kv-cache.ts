// The self-attention KV cache of a chunked causal Wan DiT (Self-Forcing / CausVid / LongLive):
// per layer, keys (already RoPE-rotated at their absolute frame) and values of the frames generated so
// far, laid out [1, capacity, heads, head_dim] so attention reads the prefix [0, kvLen).
//
// A forward writes the chunk's own K/V right after the committed prefix and attends over prefix +
// chunk; only a committing forward (the context pass at t = 0 over the clean chunk) advances the
// prefix. The capacity is the attention window in token frames (the current chunk included). Chunks
// have one size, so the commit makes the next chunk's room at once: when the window is full, the
// oldest frames after the first `sink` ones are dropped and the rest move down. Keys keep their
// absolute rotation, and attention only sees position differences, so moving them is exact. Once the
// window is full the write position, the length attention reads and the commit's move are the same
// for every chunk, which is what lets one recorded graph serve them all (wan-dit-causal.ts) — the move
// included: a commit is planned on the host (`planCommit`), its copies are enqueued inside the context
// pass's graph (`enqueueCommit`) and its bookkeeping is done after the launch (`applyCommit`).
//
// Every layer's K and V live in one tensor [layers, 2, batch, capacity, heads, head_dim] (k[i] and v[i]
// are views of it), so the move is one copyWithin over all of them: ⌈kept / chunk⌉ copies of disjoint
// ranges in a safe order (op-params.ts copyWithinCopies), no buffer — rather than a slice out to a
// buffer and a writeSlice back per tensor (120 launches and twice the traffic at Wan-1.3B's 30 layers).
//
// With `batch` > 1 the cache holds several streams that run in lockstep ([batch, capacity, heads,
// head_dim]): classifier-free guidance keeps the conditional and the unconditional stream's keys side
// by side, each filled by its own context pass, so both run as one batched forward.
import type { ActivationDtype, Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";

export interface KvCacheShape {
  layers: number;
  heads: number;
  headDim: number;
  /** Tokens of one token frame (latent height × width / patch). */
  tokensPerFrame: number;
  /** Token frames of every chunk. */
  chunkFrames: number;
  /** Attention window in token frames, the current chunk included. */
  windowFrames: number;
  /** Token frames at the start of the stream that are never evicted. */
  sinkFrames: number;
  /** Streams held side by side (default 1). */
  batch?: number;
  /** The DiT's activation dtype (the keys and values are attention inputs); default f32. */
  dtype?: ActivationDtype;
}

/** A move of token frames within the cache (every layer's K and V). */
export interface FrameMove {
  from: number;
  to: number;
  frames: number;
}

/** What a commit does: its moves (enqueued with the forward that stored the chunk) and the lengths it leaves. */
export interface CommitPlan {
  moves: FrameMove[];
  heldFrames: number;
  nextFrame: number;
}

export class KvCache {
  readonly k: Tensor[] = [];
  readonly v: Tensor[] = [];
  /** Committed token frames held (≤ windowFrames − chunkFrames after a commit: room for the next chunk). */
  heldFrames = 0;
  /** Committed token frames since the stream started: the absolute frame of the next chunk. */
  nextFrame = 0;
  /** Token frames of the chunk being run (written after the held prefix, not committed yet). */
  #pendingFrames = 0;
  /** Every layer's K and V: [layers, 2, batch, capacity, heads, head_dim]. */
  readonly #all: Tensor;

  constructor(private readonly b: Backend, readonly shape: KvCacheShape) {
    const { windowFrames, sinkFrames, chunkFrames } = shape;
    if (chunkFrames > windowFrames - sinkFrames) throw new Error(`a chunk of ${chunkFrames} frames does not fit a ${windowFrames}-frame window with a ${sinkFrames}-frame sink`);
    const cap = windowFrames * shape.tokensPerFrame, batch = shape.batch ?? 1;
    const one = [batch, cap, shape.heads, shape.headDim], n = one.reduce((a, x) => a * x, 1);
    this.#all = b.alloc([shape.layers, 2, ...one], shape.dtype ?? "f32");
    for (let i = 0; i < shape.layers; i++) {
      this.k.push(this.#all.view(one, 2 * i * n));
      this.v.push(this.#all.view(one, (2 * i + 1) * n));
    }
  }

  /** Stages the next chunk after the held prefix (the last commit made its room). */
  begin(): void {
    this.#pendingFrames = this.shape.chunkFrames;
  }

  /** Writes a layer's chunk K/V [batch, L, H, D] after the held prefix. */
  store(layer: number, k: Tensor, v: Tensor): void {
    const at = this.heldFrames * this.shape.tokensPerFrame;
    this.b.writeSlice(this.k[layer]!, k, 1, at);
    this.b.writeSlice(this.v[layer]!, v, 1, at);
  }

  /** out ← attention of the chunk's queries over held + chunk keys. */
  attend(layer: number, out: Tensor, q: Tensor, scale: number, bias?: Tensor): void {
    this.b.attention(out, q, this.k[layer]!, this.v[layer]!, { scale, kvLen: this.attendLength, ...(bias ? { bias } : {}) });
  }

  /** The keys attention reads: the held frames and the chunk being stored. */
  get attendLength(): number {
    return (this.heldFrames + this.#pendingFrames) * this.shape.tokensPerFrame;
  }

  /**
   * What committing the staged chunk does: it joins the context, and when the window then has no room
   * for another chunk, the oldest frames after the sink are dropped (the rest move down over them).
   * `asSink` (a prompt cut): the chunk replaces the sink frames instead of joining the window, so the
   * chunks after a cut are anchored on the new scene rather than the stream's first one; the window
   * keeps its length. Attention does not depend on the order of the keys, and each keeps its own
   * rotation, so the sink slot may hold a later frame than the window's. (A chunk of another size than
   * the sink, or one before the sink is filled, joins the window as usual.)
   */
  planCommit(asSink = false): CommitPlan {
    const { sinkFrames, windowFrames, chunkFrames } = this.shape, pending = this.#pendingFrames;
    const nextFrame = this.nextFrame + pending;
    if (asSink && sinkFrames > 0 && pending === sinkFrames && this.heldFrames >= sinkFrames) {
      return { moves: [{ from: this.heldFrames, to: 0, frames: sinkFrames }], heldFrames: this.heldFrames, nextFrame };
    }
    const held = this.heldFrames + pending, over = held + chunkFrames - windowFrames;
    if (over <= 0) return { moves: [], heldFrames: held, nextFrame };
    const keepFrom = sinkFrames + over, keep = held - keepFrom;
    return { moves: keep > 0 ? [{ from: keepFrom, to: sinkFrames, frames: keep }] : [], heldFrames: held - over, nextFrame };
  }

  /** Enqueues a commit's moves (inside a context pass's graph, or eagerly after its forward). */
  enqueueCommit(plan: CommitPlan): void {
    const { tokensPerFrame: t, layers, batch = 1, heads, headDim } = this.shape;
    const rows = this.#all.reshape([layers * 2 * batch, this.#all.shape[3]!, heads, headDim]);
    for (const m of plan.moves) this.b.copyWithin(rows, 1, m.to * t, m.from * t, m.frames * t);
  }

  /** The commit's bookkeeping, once its moves are enqueued. */
  applyCommit(plan: CommitPlan): void {
    this.heldFrames = plan.heldFrames;
    this.nextFrame = plan.nextFrame;
    this.#pendingFrames = 0;
  }

  /** planCommit, enqueueCommit and applyCommit in one. */
  commit(asSink = false): void {
    const plan = this.planCommit(asSink);
    this.enqueueCommit(plan);
    this.applyCommit(plan);
  }

  /** Empties the cache; the next chunk starts at absolute token frame `startFrame`. */
  reset(startFrame = 0): void {
    this.heldFrames = 0;
    this.nextFrame = startFrame;
    this.#pendingFrames = 0;
  }

  free(): void {
    if (this.k.length === 0) return;
    this.b.free(this.#all);
    this.k.length = this.v.length = 0;
  }
}
