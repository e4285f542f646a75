// The self-attention KV cache of a chunked causal Wan DiT (Self-Forcing / CausVid / LongLive):
// per layer, keys (already RoPE-rotated at their absolute frame) and values of the frames generated so
// far, laid out [1, capacity, heads, head_dim] so attention reads the prefix [0, kvLen).
//
// A forward writes the chunk's own K/V right after the committed prefix and attends over prefix +
// chunk; only a committing forward (the context pass at t = 0 over the clean chunk) advances the
// prefix. The capacity is the attention window in token frames (the current chunk included); when a
// chunk would not fit, the oldest frames after the first `sink` ones are dropped and the rest move
// down. Keys keep their absolute rotation, and attention only sees position differences, so moving
// them is exact. Once the window is full the write position and the length attention reads are the
// same for every chunk, which is what lets one recorded graph serve them all (wan-dit-causal.ts).
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
  /** Attention window in token frames, the current chunk included. */
  windowFrames: number;
  /** Token frames at the start of the stream that are never evicted. */
  sinkFrames: number;
  /** Streams held side by side (default 1). */
  batch?: number;
  /** The DiT's activation dtype (the keys and values are attention inputs); default f32. */
  dtype?: ActivationDtype;
}

export class KvCache {
  readonly k: Tensor[] = [];
  readonly v: Tensor[] = [];
  /** Committed token frames held (≤ windowFrames). */
  heldFrames = 0;
  /** Committed token frames since the stream started: the absolute frame of the next chunk. */
  nextFrame = 0;
  /** Token frames of the chunk being run (written after the held prefix, not committed yet). */
  #pendingFrames = 0;
  #moveBuffer: Tensor | null = null;

  constructor(private readonly b: Backend, readonly shape: KvCacheShape) {
    if (shape.sinkFrames >= shape.windowFrames) throw new Error(`sink of ${shape.sinkFrames} frames leaves no room in a ${shape.windowFrames}-frame window`);
    const cap = shape.windowFrames * shape.tokensPerFrame, batch = shape.batch ?? 1;
    for (let i = 0; i < shape.layers; i++) {
      this.k.push(b.alloc([batch, cap, shape.heads, shape.headDim], shape.dtype ?? "f32"));
      this.v.push(b.alloc([batch, cap, shape.heads, shape.headDim], shape.dtype ?? "f32"));
    }
  }

  /** Makes room for a chunk of `frames` token frames (evicting after the sink) and stages it. */
  begin(frames: number): void {
    const { windowFrames, sinkFrames, tokensPerFrame } = this.shape;
    if (frames > windowFrames - sinkFrames) throw new Error(`a chunk of ${frames} frames does not fit a ${windowFrames}-frame window with a ${sinkFrames}-frame sink`);
    const over = this.heldFrames + frames - windowFrames;
    if (over > 0) {
      const keepFrom = sinkFrames + over, keep = this.heldFrames - keepFrom;
      if (keep > 0) this.#moveFrames(keepFrom, sinkFrames, keep);
      this.heldFrames -= over;
    }
    this.#pendingFrames = frames;
  }

  /** Copies `frames` token frames of every layer's K and V from frame `from` to frame `to`, through a
   *  buffer kept for the next move: a stream's evictions move the same number of frames every chunk,
   *  so its steady state allocates nothing here. */
  #moveFrames(from: number, to: number, frames: number): void {
    const { tokensPerFrame } = this.shape;
    const shape = [this.shape.batch ?? 1, frames * tokensPerFrame, this.shape.heads, this.shape.headDim];
    if (this.#moveBuffer?.shape.join() !== shape.join()) {
      if (this.#moveBuffer) this.b.free(this.#moveBuffer);
      this.#moveBuffer = null;
      this.#moveBuffer = this.b.alloc(shape, this.shape.dtype ?? "f32");
    }
    const tmp = this.#moveBuffer;
    for (const t of [...this.k, ...this.v]) {
      this.b.slice(tmp, t, 1, from * tokensPerFrame);
      this.b.writeSlice(t, tmp, 1, to * tokensPerFrame);
    }
  }

  /** Writes a layer's chunk K/V [batch, L, H, D] after the held prefix. */
  store(layer: number, k: Tensor, v: Tensor): void {
    const at = this.heldFrames * this.shape.tokensPerFrame;
    this.b.writeSlice(this.k[layer]!, k, 1, at);
    this.b.writeSlice(this.v[layer]!, v, 1, at);
  }

  /** out ← attention of the chunk's queries over held + chunk keys. */
  attend(layer: number, out: Tensor, q: Tensor, scale: number): void {
    const kvLen = (this.heldFrames + this.#pendingFrames) * this.shape.tokensPerFrame;
    this.b.attention(out, q, this.k[layer]!, this.v[layer]!, { scale, kvLen });
  }

  /**
   * The staged chunk becomes part of the context. `asSink` (a prompt cut): it replaces the sink
   * frames instead of joining the window, so the chunks after a cut are anchored on the new scene
   * rather than the stream's first one. Attention does not depend on the order of the keys, and each
   * keeps its own rotation, so the sink slot may hold a later frame than the window's. (A chunk of
   * another size than the sink, or one before the sink is filled, joins the window as usual.)
   */
  commit(asSink = false): void {
    const { sinkFrames } = this.shape;
    if (asSink && sinkFrames > 0 && this.#pendingFrames === sinkFrames && this.heldFrames >= sinkFrames) {
      this.#moveFrames(this.heldFrames, 0, sinkFrames);
      this.nextFrame += this.#pendingFrames;
      this.#pendingFrames = 0;
      return;
    }
    this.heldFrames += this.#pendingFrames;
    this.nextFrame += this.#pendingFrames;
    this.#pendingFrames = 0;
  }

  /** Empties the cache; the next chunk starts at absolute token frame `startFrame`. */
  reset(startFrame = 0): void {
    this.heldFrames = 0;
    this.nextFrame = startFrame;
    this.#pendingFrames = 0;
  }

  free(): void {
    this.b.free(...this.k, ...this.v, ...(this.#moveBuffer ? [this.#moveBuffer] : []));
    this.#moveBuffer = null;
    this.k.length = this.v.length = 0;
  }
}
