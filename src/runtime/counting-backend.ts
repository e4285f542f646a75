// A Backend that counts what the host enqueues: the ops it calls outside a graph recording (each one
// kernel launch on CUDA, or a few: a GEMM may convert its input first; copyWithin counts as the copies
// it makes, op-params.ts copyWithinCopies), the ops recorded into graphs, and the graph launches. Benchmarks and
// tests read it to see what a forward costs the host — a CUDA graph replaces a recorded forward's ops
// with one launch, so an op left outside the graph shows here as a launch of its own.
//
// The backend handed out is the one given, behind a Proxy: every method runs on the real backend (its
// private state intact), and an op is counted as it is called. A graph launch replays its ops inside
// the backend, past the Proxy, so those count once, as the launch.
import { type Backend, ENQUEUING_OPS } from "./backend.ts";
import { copyWithinCopies } from "./op-params.ts";
import type { Tensor } from "./tensor.ts";

export interface HostLaunches {
  /** Ops called outside a recording: each a launch of its own (copyWithin: each of its copies). */
  ops: number;
  /** Ops called while a graph recorded (they run as part of the graph's launches). */
  recorded: number;
  /** Graph launches. */
  graphLaunches: number;
  /** The names of the ops, in call order, while `trace` is on (for tests that look at a forward's ops). */
  trace: string[] | null;
}

export interface CountingBackend {
  backend: Backend;
  counts: HostLaunches;
  /** Launches by the host so far: ops outside graphs plus graph launches. */
  launches(): number;
}

const COUNTED = new Set<string>(ENQUEUING_OPS);

export function countingBackend(b: Backend): CountingBackend {
  const counts: HostLaunches = { ops: 0, recorded: 0, graphLaunches: 0, trace: null };
  const launchesBefore = b.graphs?.counts.launches ?? 0;
  const backend = new Proxy(b, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (typeof prop !== "string" || !COUNTED.has(prop)) return value.bind(target);
      return (...args: unknown[]) => {
        const n = prop === "copyWithin" ? copyWithinCopies(...(args as [Tensor, number, number, number, number])).length : 1;
        if (target.graphs?.recording) counts.recorded += n;
        else counts.ops += n;
        counts.trace?.push(prop);
        return value.apply(target, args);
      };
    },
  });
  const sync = () => {
    counts.graphLaunches = (b.graphs?.counts.launches ?? 0) - launchesBefore;
    return counts;
  };
  return {
    backend,
    get counts() {
      return sync();
    },
    launches: () => sync().ops + counts.graphLaunches,
  };
}
