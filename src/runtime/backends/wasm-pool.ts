// Runs a kernel of the CPU module on several threads: the calling thread (tid 0) plus Bun Workers
// (tid 1..n-1), each with its own instance of the same compiled module over one shared
// WebAssembly.Memory. Every kernel takes (tid, nth, ...args) and picks its slice of the work itself
// (kernels/cpu/common.h), so a dispatch is: publish the function id and arguments in a shared control
// block, wake the workers, do slice 0 here, wait until the workers report done. Calls are synchronous
// — the wasm backend's ops finish before they return — and the main thread blocks in Atomics.wait
// (allowed in Bun, and cheap next to the kernels we split).

import { type WorkerInit, workerSource } from "./wasm-worker.ts";

const SEQ = 0, PENDING = 1, FN = 2, NARGS = 3, NTH = 4, FAILED = 5;
const MAX_ARGS = 32;
const SPINS = 20000;

type Kernel = (...args: number[]) => void;

export class WasmPool {
  readonly threads: number;
  readonly #fns: Kernel[];
  readonly #ids = new Map<string, number>();
  readonly #workers: Worker[];
  readonly #ctrl: Int32Array;
  readonly #args: Float64Array;
  #stopped = false;

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
    const ctrl = new SharedArrayBuffer(64);
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

  /** Runs kernel `name`(tid, nth, ...args) on `nth` threads (clamped to the pool) and waits for all. */
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
    const ctrl = this.#ctrl;
    this.#args.set(args);
    ctrl[FN] = id;
    ctrl[NARGS] = args.length;
    ctrl[NTH] = n;
    ctrl[FAILED] = 0;
    Atomics.store(ctrl, PENDING, this.#workers.length);
    Atomics.add(ctrl, SEQ, 1);
    Atomics.notify(ctrl, SEQ);
    try {
      fn(0, n, ...args);
    } finally {
      this.#waitForWorkers();
    }
    if (ctrl[FAILED]) throw new Error(`wasm backend: kernel ${name} failed on a worker thread`);
  }

  #waitForWorkers(): void {
    const ctrl = this.#ctrl;
    for (let i = 0; i < SPINS && Atomics.load(ctrl, PENDING) !== 0; i++);
    for (let p = Atomics.load(ctrl, PENDING); p !== 0; p = Atomics.load(ctrl, PENDING)) Atomics.wait(ctrl, PENDING, p);
  }

  stop(): void {
    this.#stopped = true;
    if (!this.#workers.length) return;
    this.#ctrl[FN] = -1;
    Atomics.add(this.#ctrl, SEQ, 1);
    Atomics.notify(this.#ctrl, SEQ);
    this.#workers.length = 0;
  }
}
