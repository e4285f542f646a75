// Prompt-transition scheduling at chunk boundaries (spec: realtime-video-protocol.md, "Transition
// Semantics" and "Idempotency and Replacement"). Pure logic: the worker asks resolve() once per
// generation chunk, in order, and gets that chunk's conditioning and event bookkeeping.
import type { Conditioning } from "../pipelines/pipeline.ts";

export interface ChunkPlan {
  conditioning: Conditioning;
  started_event_ids: string[];
  active_event_ids: string[];
  completed_event_ids: string[];
  /** kino's extension: events replaced while pending, or interrupted mid-transition, at this chunk. */
  superseded_event_ids: string[];
  /** The active transition's progress k/N in this chunk (1 for a hard switch), or null. */
  progress: { event_id: string; k: number; n: number } | null;
}

interface Target {
  eventId: string;
  conditioning: Conditioning;
  chunks: number;
}

interface Transition extends Target {
  source: Conditioning;
  /** Chunks of this transition already resolved (k of k/N). */
  done: number;
}

export class TransitionScheduler {
  private current: Conditioning;
  private pending: Target | null = null;
  private active: Transition | null = null;
  /** Events that lost their place since the last boundary, reported with the next takeover. */
  private superseded: string[] = [];

  constructor(initial: Conditioning) {
    this.current = initial;
  }

  /** A validated prompt target; it takes effect at the next boundary and replaces any pending one. */
  enqueue(eventId: string, conditioning: Conditioning, chunks: number): void {
    if (this.pending) this.superseded.push(this.pending.eventId);
    this.pending = { eventId, conditioning, chunks };
  }

  resolve(): ChunkPlan {
    const plan: ChunkPlan = {
      conditioning: this.current,
      started_event_ids: [],
      active_event_ids: [],
      completed_event_ids: [],
      superseded_event_ids: [],
      progress: null,
    };
    if (this.pending) {
      // The newer target takes over: an unfinished transition is interrupted, and the new one starts
      // from the conditioning resolved at this boundary (what the last chunk used).
      if (this.active) this.superseded.push(this.active.eventId);
      this.active = { ...this.pending, source: this.current, done: 0 };
      this.pending = null;
      plan.started_event_ids.push(this.active.eventId);
      plan.superseded_event_ids = this.superseded;
      this.superseded = [];
    }
    const t = this.active;
    if (!t) return plan;
    t.done += 1;
    const n = Math.max(1, t.chunks); // 0 chunks = a hard switch, complete in its first chunk
    this.current = t.done >= n ? t.conditioning : lerp(t.source, t.conditioning, t.done / n);
    plan.conditioning = this.current;
    plan.active_event_ids.push(t.eventId);
    plan.progress = { event_id: t.eventId, k: Math.min(t.done, n), n };
    if (t.done >= n) {
      plan.completed_event_ids.push(t.eventId);
      this.active = null;
    }
    return plan;
  }
}

/** (1 − α)·source + α·target, element-wise. */
export function lerp(source: Conditioning, target: Conditioning, alpha: number): Conditioning {
  if (source.length !== target.length) throw new Error(`conditioning sizes differ: ${source.length} vs ${target.length}`);
  const out = new Float32Array(source.length);
  for (let i = 0; i < out.length; i++) out[i] = (1 - alpha) * source[i]! + alpha * target[i]!;
  return out;
}
