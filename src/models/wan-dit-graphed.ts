// The bidirectional forwards of one clip (wan-t2v / wan-i2v / wan-ti2v through pipelines/wan-clips.ts)
// as one recorded graph (dit-graph.ts): every guided step runs the DiT on a latent of the same shape,
// once with the prompt's cross-attention K/V and once with the negative prompt's, so the forward is
// recorded at the clip's first call and launched for every later one.
//
// The conditioning is an input of the graph like the latent and the time embedding, copied into the
// graph's own tensors at every call, rather than a part of its key: with the key alone the conditional
// and the unconditional calls would re-record the graph at every call (or need a graph each, and
// twice the activations' memory held). The copy is small beside a forward — Wan2.1-1.3B's K/V are
// 30 layers × 2 × 512 × 1536 values — and one recording then serves the whole clip.
//
// Only the ops that hold no host data are recorded: the time embedding (its sinusoid is uploaded) is
// made eagerly at every call, and the RoPE table is grown, when it must be, before the recording.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { ForwardGraph } from "./dit-graph.ts";
import type { CrossAttnKV, TimeEmbedding, WanDiT } from "./wan-dit.ts";

/** The calls a bidirectional pipeline makes of its DiT: a WanDiT itself, or a GraphedForwards over it. */
export interface DitForwards {
  readonly backend: Backend;
  forward(latent: Tensor, t: number, cross: CrossAttnKV): Promise<Tensor>;
  forwardPerToken(latent: Tensor, tokenTimesteps: readonly number[], cross: CrossAttnKV): Promise<Tensor>;
}

/** The tensors of a conditioning in a fixed order: text K, text V, then the image's K and V (i2v). */
function crossTensors(c: CrossAttnKV): Tensor[] {
  return [...c.k, ...c.v, ...(c.image?.k ?? []), ...(c.image?.v ?? [])];
}

/** The conditioning `like` has, made of `kept` (crossTensors' order). */
function crossFrom(like: CrossAttnKV, kept: Tensor[]): CrossAttnKV {
  const n = like.k.length, take = (i: number) => kept.slice(i * n, (i + 1) * n);
  return like.image ? { k: take(0), v: take(1), image: { k: take(2), v: take(3) } } : { k: take(0), v: take(1) };
}

/**
 * A clip's forwards, recorded once and launched for the rest when `graphs` is on and the backend has
 * graphs; otherwise (or once a recording failed) the DiT's own eager forwards. free() at the clip's end.
 */
export class GraphedForwards implements DitForwards {
  /** The recorded forward, or null without `graphs`. */
  readonly graph: ForwardGraph | null;

  constructor(readonly dit: WanDiT, opts: { graphs: boolean }) {
    this.graph = opts.graphs ? new ForwardGraph(dit.backend) : null;
  }

  get backend(): Backend {
    return this.dit.backend;
  }

  forward(latent: Tensor, t: number, cross: CrossAttnKV): Promise<Tensor> {
    return this.#forward(latent, [t], cross);
  }

  forwardPerToken(latent: Tensor, tokenTimesteps: readonly number[], cross: CrossAttnKV): Promise<Tensor> {
    return this.#forward(latent, this.dit.tokenTimestepGroups(latent, tokenTimesteps), cross);
  }

  async #forward(latent: Tensor, timesteps: readonly number[], cross: CrossAttnKV): Promise<Tensor> {
    const dit = this.dit;
    if (!this.graph?.enabled) return dit.forwardSequence(latent, timesteps, cross, {});
    // outside the recording: the sinusoid's upload, and the RoPE table's growth (the key names the
    // table, so a regrown one is recorded again)
    const rope = dit.rope.options(dit.grid(latent.shape), 0);
    const time = await dit.timeEmbedding(timesteps);
    try {
      const key = `${rope.cos.ptr}:${time.groups}:${cross.image ? "image" : "text"}`;
      const inputs = [latent, time.e, time.e0, ...crossTensors(cross)];
      const out = this.graph.run(key, inputs, ([l, e, e0, ...kv]) => dit.sequenceNow(l!, { e: e!, e0: e0!, groups: time.groups } satisfies TimeEmbedding, crossFrom(cross, kv)));
      return out ?? dit.sequenceNow(latent, time, cross);
    } finally {
      dit.freeTime(time);
    }
  }

  free(): void {
    this.graph?.free();
  }
}
