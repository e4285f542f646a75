// A stream's fragmenter on its own thread (encoder-thread.ts in a Bun Worker), so the H.264 encode of
// chunk i runs while the pipeline generates chunk i + 1 on the calling thread. Requests are posted at
// once and answered in order. The frames' buffers are transferred to the thread, so the caller must
// not touch a chunk's frames after handing them over.
//
// Failure is sticky: the first error — a refused frame, the encoder failing to start, the thread
// dying — rejects that request and every one after it with the same message, since the stream's
// encoder state is no longer known. close() terminates the thread and rejects what is pending.
import { nativeLibraryFile } from "../h264/core-native.ts";
import type { ChunkFragmenter, FragmenterOptions } from "./fragmenter.ts";
import { ENCODER_THREAD_ENTRY } from "./thread-entry.ts";
import type { FromEncoderThread, ToEncoderThread } from "./thread-messages.ts";

/**
 * Where the thread's module is. In a `bun build --compile` executable (modules under Bun's /$bunfs/,
 * built with --root at the project root) a relative specifier names an embedded entrypoint by its path
 * from that root; run from source, the file beside this one.
 */
const ENCODER_THREAD_URL: URL | string = import.meta.url.includes("$bunfs") ? `./${ENCODER_THREAD_ENTRY}` : new URL("./encoder-thread.ts", import.meta.url);

interface Pending {
  resolve(bytes: Uint8Array): void;
  reject(err: Error): void;
}

export class ThreadedFragmenter implements ChunkFragmenter {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #seq = 0;
  #failure: Error | null = null;
  #closed = false;
  #backend: "wasm" | "native" = "wasm";
  /** Resolves once the thread has ended (after close(), or if it stops on its own). */
  readonly exited: Promise<void>;
  /** Which build of the encoder the thread runs, once it has started. */
  readonly ready: Promise<"wasm" | "native">;

  /** Starts the thread and creates the encoder there; a chunk may be given at once. `threadUrl` is for tests. */
  static async start(options: FragmenterOptions, threadUrl: URL | string = ENCODER_THREAD_URL): Promise<ThreadedFragmenter> {
    return new ThreadedFragmenter(options, await nativeLibraryFile(), threadUrl);
  }

  private constructor(options: FragmenterOptions, nativeLibrary: { path: string } | { missing: string }, threadUrl: URL | string) {
    this.#worker = new Worker(threadUrl);
    // a stream task always closes its fragmenter; unref keeps a forgotten one from holding the process
    (this.#worker as Worker & { unref(): void }).unref();
    this.#worker.onmessage = (event: MessageEvent<FromEncoderThread>) => this.#answer(event.data);
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#fail(new Error(`the stream's encoder thread failed: ${event.message || "unknown error"}`));
    };
    const exited = Promise.withResolvers<void>();
    this.exited = exited.promise;
    this.#worker.addEventListener("close", () => {
      this.#fail(new Error("the stream's encoder thread stopped unexpectedly"));
      exited.resolve();
    });
    this.ready = new Promise<Uint8Array>((resolve, reject) => this.#post({ type: "init", seq: this.#seq++, options, nativeLibrary }, { resolve, reject })).then(
      () => this.#backend,
    );
    // the first fragment reports a failed start too; this copy of it needs no handler of its own
    this.ready.catch(() => {});
  }

  fragment(frames: Uint8Array[]): Promise<Uint8Array> {
    return new Promise((resolve, reject) => this.#post({ type: "fragment", seq: this.#seq++, frames }, { resolve, reject }, transferable(frames)));
  }

  finish(): Promise<Uint8Array> {
    return new Promise((resolve, reject) => this.#post({ type: "finish", seq: this.#seq++ }, { resolve, reject }));
  }

  close(): void {
    if (this.#closed) return;
    this.#fail(new Error("the stream's encoder was closed"));
    this.#closed = true;
    this.#worker.terminate();
  }

  #post(request: ToEncoderThread, pending: Pending, transfer: Transferable[] = []): void {
    if (this.#failure) return pending.reject(this.#failure);
    this.#pending.set(request.seq, pending);
    try {
      this.#worker.postMessage(request, transfer);
    } catch (err) {
      this.#fail(new Error(`could not hand the frames to the stream's encoder thread: ${(err as Error).message}`));
    }
  }

  #answer(reply: FromEncoderThread): void {
    const pending = this.#pending.get(reply.seq);
    if (!pending || this.#failure) return;
    this.#pending.delete(reply.seq);
    if (reply.type === "failed") {
      const err = new Error(reply.message);
      pending.reject(err);
      this.#fail(err);
    } else if (reply.type === "ready") {
      this.#backend = reply.backend;
      pending.resolve(new Uint8Array(0));
    } else {
      pending.resolve(reply.bytes);
    }
  }

  /** Records the first failure and rejects everything still pending with it. */
  #fail(err: Error): void {
    if (this.#closed) return;
    this.#failure ??= err;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(this.#failure);
  }
}

/** The frames' buffers, each once, where handing them over cannot detach anything else. */
function transferable(frames: Uint8Array[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const frame of frames) {
    const buffer = frame.buffer;
    // a view on part of a larger buffer (or a shared one) is copied: moving it would take the rest too
    if (buffer instanceof ArrayBuffer && frame.byteOffset === 0 && frame.byteLength === buffer.byteLength) buffers.add(buffer);
  }
  return [...buffers];
}
