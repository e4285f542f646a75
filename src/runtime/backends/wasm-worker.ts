// The body of a wasm pool thread. It is turned into source text (`workerSource`) and started from a
// Blob URL, so it needs no file of its own in a `bun build --compile` executable; therefore this
// function must be self-contained: no imports, no outer variables.
//
// Protocol (see wasm-pool.ts): one Int32Array `ctrl` over a SharedArrayBuffer and a Float64Array of
// arguments. ctrl[SEQ] is bumped by the main thread for every op; each worker runs the kernel with
// its own tid if tid < ctrl[NTH], then decrements ctrl[PENDING] and wakes the main thread at 0.
// ctrl[FN] < 0 means "exit".

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
  const SEQ = 0, PENDING = 1, FN = 2, NARGS = 3, NTH = 4, FAILED = 5;
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
      const nth = ctrl[NTH]!;
      if (init.tid < nth) {
        try {
          const a = Array.from(args.subarray(0, ctrl[NARGS]!));
          fns[fn]!(init.tid, nth, ...a);
        } catch {
          Atomics.store(ctrl, FAILED, 1);
        }
      }
      if (Atomics.sub(ctrl, PENDING, 1) === 1) Atomics.notify(ctrl, PENDING);
    }
    self.close();
  };
}

/** JavaScript source of a worker running `workerMain`. */
export const workerSource = `(${workerMain.toString()})();`;
