// Between a stream's generator and the IPC channel: each generated chunk is handed to the fragmenter
// at once and sent the moment its fragment is ready, strictly in generation order, while the
// generator goes on with the next chunk. The generator asks `waitUntilAtMost(n)` before each next
// chunk, so a slow encoder holds generation back (at most n chunks wait for it) instead of letting
// frames pile up in memory.
//
// The first encoder failure is kept: no chunk is sent after it, `onFailure` is told once (the task
// stops generating), and `drain()` rethrows it.
import type { ChunkFragmenter } from "../media/stream/fragmenter.ts";

export class ChunkSender {
  /** Sends happen one after another on this chain, in submission order. */
  #tail: Promise<void> = Promise.resolve();
  #unsent = 0;
  #failure: Error | null = null;
  #waiters: (() => void)[] = [];

  constructor(
    private readonly fragmenter: ChunkFragmenter,
    private readonly onFailure: (err: Error) => void,
  ) {}

  /** Chunks handed over and not yet sent (or failed). */
  get unsent(): number {
    return this.#unsent;
  }

  get failure(): Error | null {
    return this.#failure;
  }

  /** Starts encoding `frames` now; `send` gets the fragment once it and every earlier one are ready. */
  submit(frames: Uint8Array[], send: (bytes: Uint8Array) => void): void {
    this.#unsent++;
    const encoded = this.fragmenter.fragment(frames);
    // a rejection is taken up by the chain below; this keeps it from counting as unhandled meanwhile
    encoded.catch(() => {});
    this.#tail = this.#tail
      .then(async () => {
        const bytes = await encoded;
        if (!this.#failure) send(bytes);
      })
      .catch((err: unknown) => this.#fail(err instanceof Error ? err : new Error(String(err))))
      .finally(() => {
        this.#unsent--;
        this.#wake();
      });
  }

  /** Resolves once at most `n` chunks are unsent, or the encoder has failed. */
  async waitUntilAtMost(n: number): Promise<void> {
    while (this.#unsent > n && !this.#failure) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Waits for every submitted chunk to be sent; throws the encoder's failure if there was one. */
  async drain(): Promise<void> {
    await this.#tail;
    if (this.#failure) throw this.#failure;
  }

  #fail(err: Error): void {
    if (this.#failure) return;
    this.#failure = err;
    this.onFailure(err);
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
