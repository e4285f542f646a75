// A stream's fragmenter on the worker process's encoder thread (encoder-thread-host.ts), so the H.264
// encode of chunk i runs while the pipeline generates chunk i + 1 on the calling thread. Requests are
// posted at once and answered in order. The frames' buffers are transferred to the thread, so the
// caller must not touch a chunk's frames after handing them over.
//
// Failure is sticky: the first error — a refused frame, the encoder failing to open, the thread dying —
// rejects that request and every one after it with the same message, since the stream's encoder state
// is no longer known. close() frees the stream's encoder in the thread (which stays for the next
// stream) and rejects what is pending.
import { nativeLibraryFile } from "../h264/core-native.ts";
import { EncoderThread } from "./encoder-thread-host.ts";
import type { ChunkFragmenter, FragmenterOptions } from "./fragmenter.ts";
import type { FromEncoderThread, NativeLibraryFile, ToEncoderThread } from "./thread-messages.ts";

interface Pending {
  resolve(bytes: Uint8Array): void;
  reject(err: Error): void;
}

export class ThreadedFragmenter implements ChunkFragmenter {
  readonly #thread: EncoderThread;
  readonly #stream: number;
  readonly #pending = new Map<number, Pending>();
  #seq = 0;
  #failure: Error | null = null;
  #closed = false;
  #backend: "wasm" | "native" = "wasm";
  /** Which build of the encoder the thread runs for this stream, once it has opened. */
  readonly ready: Promise<"wasm" | "native">;

  /** Opens a stream on `thread` (the process's shared one by default); a chunk may be given at once. */
  static async start(options: FragmenterOptions, thread?: EncoderThread): Promise<ThreadedFragmenter> {
    // the main thread writes out an embedded library once per process and removes it at exit
    const nativeLibrary = await nativeLibraryFile();
    return new ThreadedFragmenter(options, nativeLibrary, thread ?? EncoderThread.shared());
  }

  private constructor(options: FragmenterOptions, nativeLibrary: NativeLibraryFile, thread: EncoderThread) {
    this.#thread = thread;
    this.#stream = thread.open({ answer: (reply) => this.#answer(reply), fail: (err) => this.#fail(err) });
    const open = new Promise<Uint8Array>((resolve, reject) =>
      this.#post({ type: "open", stream: this.#stream, seq: this.#seq++, options, nativeLibrary }, { resolve, reject }),
    );
    this.ready = open.then(() => this.#backend);
    // the first fragment reports a failed open too; this copy of it needs no handler of its own
    this.ready.catch(() => {});
  }

  fragment(frames: Uint8Array[]): Promise<Uint8Array> {
    return new Promise((resolve, reject) =>
      this.#post({ type: "fragment", stream: this.#stream, seq: this.#seq++, frames }, { resolve, reject }, transferable(frames)),
    );
  }

  finish(): Promise<Uint8Array> {
    return new Promise((resolve, reject) => this.#post({ type: "finish", stream: this.#stream, seq: this.#seq++ }, { resolve, reject }));
  }

  close(): void {
    if (this.#closed) return;
    this.#fail(new Error("the stream's encoder was closed"));
    this.#closed = true;
    this.#thread.release(this.#stream);
  }

  #post(request: ToEncoderThread & { seq: number }, pending: Pending, transfer: Transferable[] = []): void {
    if (this.#failure) return pending.reject(this.#failure);
    this.#pending.set(request.seq, pending);
    try {
      this.#thread.post(request, transfer);
    } catch (err) {
      this.#fail(err instanceof Error ? err : new Error(String(err)));
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
    } else if (reply.type === "opened") {
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

/**
 * Starts the process's encoder thread and opens (then closes) a small stream on it, so the first
 * session's first chunk finds the thread's modules loaded and the encoder compiled. A failure here is
 * ignored: a session that meets it reports it.
 */
export async function prewarmStreamEncoder(): Promise<void> {
  const fragmenter = await ThreadedFragmenter.start({ width: 16, height: 16, fps: 16, qp: 23, input: "i420" });
  await fragmenter.ready.catch(() => {});
  fragmenter.close();
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
