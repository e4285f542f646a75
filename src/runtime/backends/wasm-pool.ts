// Runs a kernel of the CPU module on several threads: the calling thread plus Bun Workers, each with
// its own instance of the same compiled module over one shared WebAssembly.Memory. Every kernel takes
// (slice, slices, ...args) and computes its own part of the work from those two numbers
// (kernels/cpu/common.h), so a dispatch is: publish the function id and arguments in a shared control
// block, wake the workers, and let every thread claim slices until none is left. Calls are synchronous
// — the wasm backend's ops finish before they return — and the main thread blocks in Atomics.wait
// (allowed in Bun, and cheap next to the kernels we split).
//
// Slices are claimed, not assigned: an op is cut into SLICES_PER_THREAD slices per thread, each with a
// control word that a thread takes with a compare-exchange, and the calling thread takes whatever is
// still unclaimed once its own slices are done. On a machine whose cores are busy with other work, a
// worker that is not scheduled in time just claims nothing, instead of holding the op back until the
// kernel gets its core again (with a fixed split, 2 threads were slower than 1 on a loaded 2-core
// machine). A slice word holds 2·seq while it is open for op `seq`, 2·seq + 1 while a worker runs
// it, DONE once finished: a worker that wakes late, after its op is over, cannot claim a slice of a
// later op with the arguments it read for the earlier one.

import { type WorkerInit, workerSource } from "./wasm-worker.ts";

const SEQ = 0, FN = 2, NARGS = 3, NSLICES = 4, FAILED = 5, SLOT = 8;
const MAX_ARGS = 32;
const SPINS = 20000;
/** Slices per pool thread: enough to rebalance when a thread is late, few enough that per-slice work
 *  (a GEMM slice packs its own rows of A) stays small. */
const SLICES_PER_THREAD = 2;
const MAX_SLICES = 64;
const DONE = -1;
/** Op sequence numbers wrap here, so 2·seq + 1 stays a positive int32. */
const SEQ_MASK = 0x3fffffff;

/** Most slices an op on `threads` threads is cut into: kernels index their scratch memory by slice. */
export function slicesFor(threads: number): number {
  return threads === 1 ? 1 : Math.min(MAX_SLICES, threads * SLICES_PER_THREAD);
}

type Kernel = (...args: number[]) => void;

export class WasmPool {
  readonly threads: number;
  readonly #fns: Kernel[];
  readonly #ids = new Map<string, number>();
  readonly #workers: Worker[];
  readonly #ctrl: Int32Array;
  readonly #args: Float64Array;
  #stopped = false;
  #seq = 0;

  private constructor(names: string[], fns: Kernel[], workers: Worker[], ctrl: SharedArrayBuffer, args: SharedArrayBuffer) {
    names.forEach((n, i) => this.#ids.set(n, i));
    this.#fns = fns;
    this.#workers = workers;
    this.#ctrl = new Int32Array(ctrl);
    this.#args = new Float64Array(args);
    this.threads = workers.length + 1;
  }

  /**
   * `exports`: the calling thread's instance. `stackTops`: one stack (top address) per worker, carved
   * out of the shared memory by the caller. With no stacks this is a single-threaded pool.
   */
  static async start(
    module: WebAssembly.Module,
    memory: WebAssembly.Memory,
    exports: Record<string, unknown>,
    names: string[],
    stackTops: number[],
  ): Promise<WasmPool> {
    const fns = names.map((n) => {
      const f = exports[n];
      if (typeof f !== "function") throw new Error(`wasm backend: kernel ${n} missing from the module`);
      return f as Kernel;
    });
    const ctrl = new SharedArrayBuffer((SLOT + MAX_SLICES) * 4);
    const args = new SharedArrayBuffer(MAX_ARGS * 8);
    const url = stackTops.length ? URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" })) : "";
    const workers = stackTops.map(() => new Worker(url));
    try {
      await Promise.all(
        workers.map((w, i) => {
          const ready = new Promise<void>((resolve, reject) => {
            w.onmessage = () => resolve();
            w.onerror = (e) => reject(new Error(`wasm worker ${i + 1} failed to start: ${e.message}`));
          });
          const init: WorkerInit = { module, memory, ctrl, args, names, tid: i + 1, stackTop: stackTops[i]! };
          w.postMessage(init);
          return ready;
        }),
      );
    } catch (e) {
      for (const w of workers) w.terminate();
      throw e;
    } finally {
      if (url) URL.revokeObjectURL(url);
    }
    // an idle pool never keeps the process alive (Bun's Worker has unref; the DOM typings lack it)
    for (const w of workers) (w as Worker & { unref(): void }).unref();
    return new WasmPool(names, fns, workers, ctrl, args);
  }

  /** Runs kernel `name`(slice, slices, ...args) on up to `nth` threads (clamped to the pool) and waits for all. */
  run(name: string, args: number[], nth = this.threads): void {
    if (this.#stopped) throw new Error("wasm backend: used after dispose()");
    const id = this.#ids.get(name);
    if (id === undefined) throw new Error(`wasm backend: unknown kernel ${name}`);
    const fn = this.#fns[id]!;
    const n = Math.max(1, Math.min(nth, this.threads));
    if (n === 1) {
      fn(0, 1, ...args);
      return;
    }
    if (args.length > MAX_ARGS) throw new Error(`wasm backend: ${name} has too many arguments`);
    const ctrl = this.#ctrl, slices = slicesFor(n);
    const seq = (this.#seq = (this.#seq + 1) & SEQ_MASK), open = 2 * seq;
    this.#args.set(args);
    ctrl[FN] = id;
    ctrl[NARGS] = args.length;
    ctrl[NSLICES] = slices;
    ctrl[FAILED] = 0;
    for (let i = 0; i < slices; i++) Atomics.store(ctrl, SLOT + i, open);
    Atomics.store(ctrl, SEQ, seq);
    Atomics.notify(ctrl, SEQ);
    let failed = false;
    try {
      // the calling thread claims from the front, workers from the back
      for (let i = 0; i < slices; i++) if (Atomics.compareExchange(ctrl, SLOT + i, open, DONE) === open) fn(i, slices, ...args);
    } catch (e) {
      failed = true;
      throw e;
    } finally {
      if (failed) for (let i = 0; i < slices; i++) Atomics.compareExchange(ctrl, SLOT + i, open, DONE);
      this.#waitForWorkers(slices, open + 1);
    }
    if (ctrl[FAILED]) throw new Error(`wasm backend: kernel ${name} failed on a worker thread`);
  }

  /** Waits until no slice is still held by a worker (word `running`). */
  #waitForWorkers(slices: number, running: number): void {
    const ctrl = this.#ctrl;
    for (let i = 0; i < slices; i++) {
      for (let k = 0; k < SPINS && Atomics.load(ctrl, SLOT + i) === running; k++);
      while (Atomics.load(ctrl, SLOT + i) === running) Atomics.wait(ctrl, SLOT + i, running);
    }
  }

  stop(): void {
    this.#stopped = true;
    if (!this.#workers.length) return;
    this.#ctrl[FN] = -1;
    Atomics.store(this.#ctrl, SEQ, (this.#seq = (this.#seq + 1) & SEQ_MASK));
    Atomics.notify(this.#ctrl, SEQ);
    this.#workers.length = 0;
  }
}
