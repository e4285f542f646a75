// The transition scheduler against the spec, on hand-written cases and on random interaction
// schedules (fast-check): every event is accounted for exactly once, progress is always k/N, and the
// conditioning follows the linear interpolation from the state at the takeover boundary.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { TransitionScheduler, lerp, type ChunkPlan } from "../../src/worker/transitions.ts";

const vec = (...v: number[]) => new Float32Array(v);

describe("hand-written cases", () => {
  test("nothing queued: the initial conditioning, no events", () => {
    const s = new TransitionScheduler(vec(1, 2));
    const plan = s.resolve();
    expect([...plan.conditioning]).toEqual([1, 2]);
    expect(plan).toMatchObject({ started_event_ids: [], active_event_ids: [], completed_event_ids: [], superseded_event_ids: [], progress: null });
  });

  test("N = 3 from 0 to 3: thirds, then the target stays", () => {
    const s = new TransitionScheduler(vec(0));
    s.enqueue("e", vec(3), 3);
    const plans = [s.resolve(), s.resolve(), s.resolve(), s.resolve()];
    expect(plans.map((p) => p.conditioning[0])).toEqual([1, 2, 3, 3]);
    expect(plans.map((p) => p.progress?.k ?? null)).toEqual([1, 2, 3, null]);
    expect(plans[3]!.active_event_ids).toEqual([]);
  });

  test("an interrupting target starts from the state resolved at its boundary", () => {
    const s = new TransitionScheduler(vec(0));
    s.enqueue("a", vec(4), 4);
    s.resolve(); // 1
    s.resolve(); // 2
    s.enqueue("b", vec(10), 2);
    const takeover = s.resolve();
    expect(takeover.superseded_event_ids).toEqual(["a"]);
    expect(takeover.conditioning[0]).toBe(6); // halfway from 2 to 10
    expect(s.resolve().conditioning[0]).toBe(10);
  });
});

type Step = { enqueue: { chunks: number; target: number }[] };

/** A direct reading of the spec, kept separate from the implementation. */
function expectedOutcome(steps: Step[]) {
  let current = 0;
  let active: { id: string; from: number; to: number; n: number; k: number } | null = null;
  let nextId = 0;
  const chunks: { started: string[]; active: string[]; completed: string[]; superseded: string[]; value: number; k: number | null; n: number | null }[] = [];
  let lost: string[] = [];
  for (const step of steps) {
    let pending: { id: string; to: number; n: number } | null = null;
    for (const e of step.enqueue) {
      if (pending) lost.push(pending.id);
      pending = { id: `e${nextId++}`, to: e.target, n: Math.max(1, e.chunks) };
    }
    const chunk = { started: [] as string[], active: [] as string[], completed: [] as string[], superseded: [] as string[], value: current, k: null as number | null, n: null as number | null };
    if (pending) {
      if (active) lost.push(active.id);
      active = { id: pending.id, from: current, to: pending.to, n: pending.n, k: 0 };
      chunk.started.push(active.id);
      chunk.superseded = lost;
      lost = [];
    }
    if (active) {
      active.k++;
      current = active.k === active.n ? active.to : active.from + ((active.to - active.from) * active.k) / active.n;
      chunk.value = current;
      chunk.active.push(active.id);
      chunk.k = active.k;
      chunk.n = active.n;
      if (active.k === active.n) {
        chunk.completed.push(active.id);
        active = null;
      }
    }
    chunks.push(chunk);
  }
  return chunks;
}

describe("random schedules", () => {
  const schedule = fc.array(
    fc.record({ enqueue: fc.array(fc.record({ chunks: fc.integer({ min: 0, max: 5 }), target: fc.integer({ min: -100, max: 100 }) }), { maxLength: 3 }) }),
    { minLength: 1, maxLength: 30 },
  );

  test("bookkeeping, progress k/N and conditioning match the spec model", () => {
    fc.assert(
      fc.property(schedule, (steps) => {
        const s = new TransitionScheduler(vec(0));
        let nextId = 0;
        const plans: ChunkPlan[] = steps.map((step) => {
          for (const e of step.enqueue) s.enqueue(`e${nextId++}`, vec(e.target), e.chunks);
          return s.resolve();
        });
        const expected = expectedOutcome(steps);
        plans.forEach((plan, i) => {
          const want = expected[i]!;
          expect(plan.started_event_ids).toEqual(want.started);
          expect(plan.active_event_ids).toEqual(want.active);
          expect(plan.completed_event_ids).toEqual(want.completed);
          expect(plan.superseded_event_ids).toEqual(want.superseded);
          expect(plan.conditioning[0]).toBeCloseTo(want.value, 4);
          if (want.k !== null) expect(plan.progress).toMatchObject({ k: want.k, n: want.n });
          else expect(plan.progress).toBeNull();
        });
        // Every event is started at most once, completed at most once, and never both completed and superseded.
        const started = plans.flatMap((p) => p.started_event_ids);
        const completed = plans.flatMap((p) => p.completed_event_ids);
        const superseded = plans.flatMap((p) => p.superseded_event_ids);
        expect(new Set(started).size).toBe(started.length);
        expect(new Set(completed).size).toBe(completed.length);
        expect(completed.filter((id) => superseded.includes(id))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  test("lerp is exact at the ends", () => {
    fc.assert(
      fc.property(fc.float({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), fc.float({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), (a, b) => {
        // == not Object.is: −0 and +0 are the same conditioning.
        expect(lerp(vec(a), vec(b), 0)[0] === Math.fround(a)).toBe(true);
        expect(lerp(vec(a), vec(b), 1)[0] === Math.fround(b)).toBe(true);
      }),
    );
  });
});
