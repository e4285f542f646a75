// A worker process's stream encoder thread, seen from the process's main thread: a Bun Worker running
// encoder-thread.ts, started once and kept for the streams that follow, since starting one (a fresh
// JavaScript heap, the encoder's modules, the wasm module compiled) costs 60–150 ms that would
// otherwise land on every session's first chunk. Streams register by id and get their own replies.
// A thread that dies fails every stream open on it; the next stream starts a new one.
import { ENCODER_THREAD_ENTRY, threadModuleUrl } from "../thread-entries.ts";
import type { FromEncoderThread, ToEncoderThread } from "./thread-messages.ts";

const ENCODER_THREAD_URL = threadModuleUrl(ENCODER_THREAD_ENTRY);

/** What a stream on the thread is told: its replies, and the thread's failure. */
export interface ThreadStream {
  answer(reply: FromEncoderThread): void;
  fail(err: Error): void;
}

export class EncoderThread {
  readonly #worker: Worker;
  readonly #streams = new Map<number, ThreadStream>();
  #nextStream = 1;
  #dead: Error | null = null;
  /** Resolves once the thread has ended (stop(), or on its own). */
  readonly exited: Promise<void>;

  /** A thread of its own (tests, or a module other than encoder-thread.ts); streams use shared(). */
  constructor(url: URL | string = ENCODER_THREAD_URL) {
    this.#worker = new Worker(url);
    // an idle thread never keeps the process alive
    (this.#worker as Worker & { unref(): void }).unref();
    this.#worker.onmessage = (event: MessageEvent<FromEncoderThread>) => this.#streams.get(event.data.stream)?.answer(event.data);
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#die(new Error(`the stream encoder thread failed: ${event.message || "unknown error"}`));
    };
    const exited = Promise.withResolvers<void>();
    this.exited = exited.promise;
    this.#worker.addEventListener("close", () => {
      this.#die(new Error("the stream encoder thread stopped"));
      exited.resolve();
    });
  }

  /** The process's thread, started on first use (or by prewarm) and restarted after it died. */
  static shared(): EncoderThread {
    if (!shared || shared.#dead) shared = new EncoderThread();
    return shared;
  }

  /** Streams open on this thread. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** Registers a stream; its id goes into every message it posts. Throws if the thread has died. */
  open(stream: ThreadStream): number {
    if (this.#dead) throw this.#dead;
    const id = this.#nextStream++;
    this.#streams.set(id, stream);
    return id;
  }

  /** Posts to the thread; a post the thread cannot take fails only the stream that made it. */
  post(request: ToEncoderThread, transfer: Transferable[] = []): void {
    if (this.#dead) throw this.#dead;
    this.#worker.postMessage(request, transfer);
  }

  /** Frees a stream's encoder in the thread; replies still on their way to it are dropped. */
  release(id: number): void {
    if (!this.#streams.delete(id) || this.#dead) return;
    this.#worker.postMessage({ type: "close", stream: id } satisfies ToEncoderThread);
  }

  /** Ends the thread; every stream still open on it fails. */
  stop(): void {
    this.#die(new Error("the stream encoder thread was stopped"));
    this.#worker.terminate();
  }

  #die(err: Error): void {
    if (this.#dead) return;
    this.#dead = err;
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const stream of streams) stream.fail(err);
  }
}

let shared: EncoderThread | null = null;
