// Wall-clock time per stage of a pipeline, measured from outside: `wrap` replaces a method of an object
// (or a class prototype) with a timed copy that books its duration under the label `label(args)`
// gives, and `restore` puts the originals back. Only meaningful where the wrapped calls finish their
// work before they return (the WebAssembly backend's ops are synchronous); nested wrapped calls are
// booked to both stages.

type AnyFn = (...args: any[]) => any;

export class StageTimer {
  /** Seconds per stage since the last `take`. */
  #totals = new Map<string, number>();
  #restore: (() => void)[] = [];

  wrap<T extends object>(target: T, method: keyof T & string, label: (args: any[]) => string): void {
    const original = target[method] as unknown as AnyFn;
    const had = Object.prototype.hasOwnProperty.call(target, method);
    const book = (name: string, started: number) => this.add(name, (performance.now() - started) / 1000);
    const timed = function (this: unknown, ...args: any[]) {
      const started = performance.now(), name = label(args);
      const result = original.apply(this, args);
      if (result instanceof Promise) return result.finally(() => book(name, started));
      book(name, started);
      return result;
    };
    (target as Record<string, unknown>)[method] = timed;
    this.#restore.push(() => {
      if (had) (target as Record<string, unknown>)[method] = original;
      else delete (target as Record<string, unknown>)[method];
    });
  }

  add(name: string, seconds: number): void {
    this.#totals.set(name, (this.#totals.get(name) ?? 0) + seconds);
  }

  /** The totals so far (then zero again). */
  take(): Map<string, number> {
    const t = this.#totals;
    this.#totals = new Map();
    return t;
  }

  restore(): void {
    for (const r of this.#restore.reverse()) r();
    this.#restore = [];
  }
}
