// The body of a wasm pool thread. It is turned into source text (`workerSource`) and started from a
// Blob URL, so it needs no file of its own in a `bun build --compile` executable; therefore this
// function must be self-contained: no imports, no outer variables.
//
// Protocol (see wasm-pool.ts): one Int32Array `ctrl` over a SharedArrayBuffer and a Float64Array of
// arguments. ctrl[SEQ] is set by the main thread for every op; a worker that sees it change copies the
// op, then claims open slices (word 2·seq → 2·seq + 1) from the back, runs each and marks it DONE.
// A claim can only succeed while the op is still the one it read, so a late worker never runs a
// slice with another op's arguments. ctrl[FN] < 0 means "exit".

export interface WorkerInit {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  ctrl: SharedArrayBuffer;
  args: SharedArrayBuffer;
  names: string[];
  tid: number;
  stackTop: number;
}

function workerMain(): void {
  const SEQ = 0, FN = 2, NARGS = 3, NSLICES = 4, FAILED = 5, SLOT = 8, DONE = -1;
  const SPINS = 20000; // ~tens of µs of polling before sleeping: back-to-back ops skip the futex
  self.onmessage = (ev: MessageEvent) => {
    const init = ev.data as WorkerInit;
    const instance = new WebAssembly.Instance(init.module, { env: { memory: init.memory } });
    const exports = instance.exports as Record<string, unknown>;
    // every instance starts with the same stack pointer; give this thread its own stack
    (exports.__stack_pointer as WebAssembly.Global).value = init.stackTop;
    const fns = init.names.map((n) => exports[n] as (...a: number[]) => void);
    const ctrl = new Int32Array(init.ctrl);
    const args = new Float64Array(init.args);
    postMessage("ready");
    let seen = Atomics.load(ctrl, SEQ);
    for (;;) {
      for (let i = 0; i < SPINS && Atomics.load(ctrl, SEQ) === seen; i++);
      Atomics.wait(ctrl, SEQ, seen);
      seen = Atomics.load(ctrl, SEQ);
      const fn = ctrl[FN]!;
      if (fn < 0) break;
      const slices = ctrl[NSLICES]!, open = 2 * seen;
      const a = Array.from(args.subarray(0, ctrl[NARGS]!));
      for (let s = slices - 1; s >= 0; s--) {
        if (Atomics.compareExchange(ctrl, SLOT + s, open, open + 1) !== open) continue;
        try {
          fns[fn]!(s, slices, ...a);
        } catch {
          Atomics.store(ctrl, FAILED, 1);
        } finally {
          Atomics.store(ctrl, SLOT + s, DONE);
          Atomics.notify(ctrl, SLOT + s);
        }
      }
    }
    self.close();
  };
}

/** JavaScript source of a worker running `workerMain`. */
export const workerSource = `(${workerMain.toString()})();`;
