// OpGraphs (../backend.ts) for the wasm backend: recording keeps each op call (the method and its
// arguments) instead of running it, and a launch makes the same calls again in order. The CPU gains
// nothing from it; it exists so that code written for CUDA graphs (src/models/dit-graph.ts) runs, and
// is tested, on every backend with the same rules: nothing runs while recording, host copies and
// waits are refused, and the memory a recording allocates stays the graph's (a pool reused by its own
// re-recordings, given back to the heap by free()) so a launch never writes memory that another
// tensor holds.
import { ENQUEUING_OPS, type GraphRecording, type OpGraph, type OpGraphs } from "../backend.ts";
import type { WasmHeap } from "./wasm-heap.ts";

/** The Backend methods that enqueue work: what a recording keeps instead of running. */
export const RECORDED_OPS = ENQUEUING_OPS;

type Call = () => void;
type OpHost = Record<string, unknown>;

const ALIGN = 64;

/** One level of copying, so a caller that reuses an options object or array does not change a recorded call. */
function snapshot(arg: unknown): unknown {
  if (ArrayBuffer.isView(arg)) return (arg as unknown as { slice(): unknown }).slice();
  if (Array.isArray(arg)) return [...arg];
  if (arg && typeof arg === "object" && Object.getPrototypeOf(arg) === Object.prototype) return { ...(arg as object) };
  return arg;
}

class WasmGraph implements OpGraph {
  calls: Call[] = [];
  /** Heap blocks the graph owns (offset → rounded size), and those of them not in use. */
  readonly blocks = new Map<number, number>();
  readonly pool: number[] = [];
  #freed = false;

  constructor(private readonly owner: WasmGraphs) {}

  launch(): void {
    if (this.#freed) throw new Error("wasm graph launched after free()");
    this.owner.refuse("a graph launch");
    this.owner.launching = true;
    try {
      for (const call of this.calls) call();
    } finally {
      this.owner.launching = false;
    }
    this.owner.counts.launches++;
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.owner.release(this);
  }
}

export class WasmGraphs implements OpGraphs {
  #recording: { graph: WasmGraph; allocated: Set<number> } | null = null;
  /** Heap offset → the graph that owns the block. */
  readonly #owners = new Map<number, WasmGraph>();
  readonly counts = { made: 0, updated: 0, launches: 0 };
  /** True while a launch replays its calls: they name tensors the recording freed into the graph's
   *  pool, whose memory the graph still holds. */
  launching = false;
  /** Blocks handed out again from a graph's pool (the heap counts the rest). */
  reused = 0;

  constructor(private readonly heap: WasmHeap, private readonly backend: OpHost) {}

  get recording(): boolean {
    return this.#recording !== null;
  }

  record<T>(body: () => T, previous?: OpGraph | null): GraphRecording<T> {
    if (this.#recording) throw new Error("wasm graphs: record() inside a recording");
    if (previous && !(previous instanceof WasmGraph)) throw new Error("wasm graphs: `previous` is not a graph of this backend");
    const graph = previous ?? new WasmGraph(this);
    const calls: Call[] = [];
    const proto = Object.getPrototypeOf(this.backend) as OpHost;
    for (const op of RECORDED_OPS) {
      const run = proto[op] as (...a: unknown[]) => void;
      this.backend[op] = (...args: unknown[]) => {
        const kept = args.map(snapshot);
        calls.push(() => run.apply(this.backend, kept));
      };
    }
    this.#recording = { graph, allocated: new Set() };
    let result: T;
    try {
      result = body();
      if (result instanceof Promise) throw new Error("wasm graphs: a recorded body must enqueue its ops synchronously, not return a promise");
    } catch (e) {
      graph.free();
      throw e;
    } finally {
      for (const op of RECORDED_OPS) delete this.backend[op];
      this.#recording = null;
    }
    graph.calls = calls;
    this.counts[previous ? "updated" : "made"]++;
    return { graph, result: result!, made: previous ? "updated" : "new" };
  }

  /** A heap block for a tensor: while recording, from the graph's pool (or new, and the graph's). */
  alloc(bytes: number): number {
    const rec = this.#recording;
    if (!rec) return this.heap.alloc(bytes);
    const size = Math.ceil(Math.max(bytes, 1) / ALIGN) * ALIGN, pool = rec.graph.pool;
    const i = pool.findIndex((off) => rec.graph.blocks.get(off) === size);
    if (i >= 0) this.reused++;
    const off = i >= 0 ? pool.splice(i, 1)[0]! : this.heap.alloc(bytes);
    if (i < 0) {
      rec.graph.blocks.set(off, size);
      this.#owners.set(off, rec.graph);
    }
    rec.allocated.add(off);
    return off;
  }

  /** Throws while recording when the block was allocated before the recording. */
  freeing(off: number): void {
    if (this.#recording && !this.#recording.allocated.has(off)) {
      throw new Error("wasm graphs: cannot free a tensor allocated before the recording while recording: a recorded op may read it at a launch");
    }
  }

  /** Gives a tensor's block back: to its graph's pool when a graph owns it, else to the heap. */
  free(off: number): void {
    const graph = this.#owners.get(off);
    if (graph) graph.pool.push(off);
    else this.heap.free(off);
  }

  /** Throws while recording: `what` cannot be part of a graph. */
  refuse(what: string): void {
    if (this.#recording) throw new Error(`wasm graphs: ${what} cannot be recorded into a graph (host data or a wait); do it before or after the recording`);
  }

  /** A graph was freed: its unused blocks go back to the heap, its live ones when they are freed. */
  release(graph: WasmGraph): void {
    for (const off of graph.pool) this.heap.free(off);
    for (const off of graph.blocks.keys()) this.#owners.delete(off);
    graph.pool.length = 0;
    graph.blocks.clear();
    graph.calls = [];
  }
}
