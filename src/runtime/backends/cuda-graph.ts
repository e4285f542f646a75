// CUDA graphs for the CUDA backend (Backend.graphs, OpGraphs in ../backend.ts) over
// kernels/cuda/graph.cu: a `record` body's ops are captured from the context's stream into a graph
// instead of running, and the graph is launched as one unit. Each graph owns an allocator pool
// (kernels/cuda/alloc.cu), so the blocks its kernels address — intermediates, scratch, outputs — are
// never handed to other work while the graph may still be launched; a re-recording into a previous
// graph reuses that pool (the same blocks, in the same order) and updates the executable graph in
// place when only addresses and scalars changed.
//
// While a body runs, the backend refuses what a capture cannot hold (CudaBackend calls `refuse`):
// host↔device copies and waits, and freeing a tensor allocated before the recording, which a
// recorded kernel may read at a later launch.
import type { Pointer } from "bun:ffi";
import type { GraphRecording, OpGraph, OpGraphs } from "../backend.ts";
import type { Tensor } from "../tensor.ts";
import type { CudaGraphLibrary } from "./cuda-library.ts";

/** What the graph code needs of the backend: its context and its error check. */
interface CudaContext {
  readonly ctx: Pointer;
  check(rc: number, op: string): void;
}

class CudaGraph implements OpGraph {
  #freed = false;

  constructor(private readonly owner: CudaGraphs, readonly pool: Pointer, public exec: bigint) {}

  launch(): void {
    if (this.#freed) throw new Error("cuda graph launched after free()");
    this.owner.launch(this);
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.owner.destroy(this);
  }

  get freed(): boolean {
    return this.#freed;
  }
}

export class CudaGraphs implements OpGraphs {
  #recording: Set<Tensor> | null = null;
  readonly #live = new Set<CudaGraph>();
  /** Graphs made and updated in place, and launches: for benchmarks and tests. */
  readonly counts = { made: 0, updated: 0, launches: 0 };

  constructor(private readonly backend: CudaContext, private readonly lib: CudaGraphLibrary) {}

  get recording(): boolean {
    return this.#recording !== null;
  }

  record<T>(body: () => T, previous?: OpGraph | null): GraphRecording<T> {
    if (this.#recording) throw new Error("cuda graphs: record() inside a recording");
    const prev = previous ?? null;
    if (prev && (!(prev instanceof CudaGraph) || !this.#live.has(prev))) throw new Error("cuda graphs: `previous` is not a live graph of this backend");
    const k = this.lib.symbols, ctx = this.backend.ctx;
    const pool = prev?.pool ?? (k.kc_pool_create(ctx) as Pointer);
    const fail = (e: unknown): never => {
      if (prev) prev.free();
      else k.kc_pool_destroy(ctx, pool);
      throw e;
    };
    try {
      this.backend.check(k.kc_capture_begin(ctx, pool), "graph capture");
    } catch (e) {
      fail(e);
    }
    this.#recording = new Set();
    let result: T;
    try {
      result = body();
      if (result instanceof Promise) throw new Error("cuda graphs: a recorded body must enqueue its ops synchronously, not return a promise");
    } catch (e) {
      k.kc_capture_abort(ctx);
      this.#recording = null;
      return fail(e);
    } finally {
      this.#recording = null;
    }
    const exec = new BigUint64Array([prev?.exec ?? 0n]), how = new Int32Array(1);
    try {
      this.backend.check(k.kc_capture_end(ctx, exec, how), "graph capture");
    } catch (e) {
      if (prev) prev.exec = exec[0]!; // what the library left: destroyed (0) or untouched
      fail(e);
    }
    const made = how[0] === 1 ? "updated" : "new";
    this.counts[made === "updated" ? "updated" : "made"]++;
    let graph = prev;
    if (graph) graph.exec = exec[0]!;
    else {
      graph = new CudaGraph(this, pool, exec[0]!);
      this.#live.add(graph);
    }
    return { graph, result: result!, made };
  }

  launch(graph: CudaGraph): void {
    this.refuse("a graph launch");
    this.backend.check(this.lib.symbols.kc_graph_launch(this.backend.ctx, graph.exec), "graph launch");
    this.counts.launches++;
  }

  destroy(graph: CudaGraph): void {
    if (!this.#live.delete(graph)) return;
    this.lib.symbols.kc_graph_destroy(this.backend.ctx, graph.exec);
    this.lib.symbols.kc_pool_destroy(this.backend.ctx, graph.pool);
  }

  /** Throws while recording: `what` cannot be part of a graph. */
  refuse(what: string): void {
    if (this.#recording) throw new Error(`cuda graphs: ${what} cannot be recorded into a graph (host data or a wait); do it before or after the recording`);
  }

  /** The backend allocated `t`: while recording it is the graph's. */
  allocated(t: Tensor): void {
    this.#recording?.add(t);
  }

  /** The backend is about to free `t`. */
  freeing(t: Tensor): void {
    if (this.#recording && !this.#recording.has(t.owner)) {
      throw new Error(`cuda graphs: cannot free ${t} while recording: it was allocated before, and a recorded op may read it at a launch`);
    }
  }

  /** Frees every graph (the backend is closing). */
  dispose(): void {
    for (const g of [...this.#live]) g.free();
  }

  get live(): number {
    return this.#live.size;
  }
}
