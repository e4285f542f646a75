// The reference-image thread seen from the server's main thread: a Bun Worker running image-thread.ts,
// started on the first image and kept (unref'd: an idle thread never keeps the process alive). Requests
// queue on it one after another, so a burst of large pictures takes one core, not the event loop. A
// thread that dies fails what was waiting on it; the next image starts a new one.
import { InvalidMediaError } from "./errors.ts";
import type { FromImageThread, ToImageThread } from "./image-thread-messages.ts";
import { IMAGE_THREAD_ENTRY, threadModuleUrl } from "./thread-entries.ts";

const IMAGE_THREAD_URL = threadModuleUrl(IMAGE_THREAD_ENTRY);

export interface PreparedImage {
  png: Uint8Array;
  width: number;
  height: number;
}

interface Waiting {
  resolve(image: PreparedImage): void;
  reject(err: Error): void;
}

class ImageThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  dead = false;

  constructor() {
    this.#worker = new Worker(IMAGE_THREAD_URL);
    (this.#worker as Worker & { unref(): void }).unref();
    this.#worker.onmessage = (event: MessageEvent<FromImageThread>) => this.#answer(event.data);
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#die(new Error(`the image thread failed: ${event.message || "unknown error"}`));
    };
    this.#worker.addEventListener("close", () => this.#die(new Error("the image thread stopped")));
  }

  prepare(bytes: Uint8Array, maxPixels: number, param: string): Promise<PreparedImage> {
    const id = this.#nextId++;
    const done = Promise.withResolvers<PreparedImage>();
    this.#waiting.set(id, done);
    // a copy goes over: the caller's bytes stay the caller's
    const request: ToImageThread = { id, bytes: bytes.slice(), maxPixels, param };
    this.#worker.postMessage(request, [request.bytes.buffer as ArrayBuffer]);
    return done.promise;
  }

  #answer(reply: FromImageThread): void {
    const waiting = this.#waiting.get(reply.id);
    if (!waiting) return;
    this.#waiting.delete(reply.id);
    if (reply.type === "png") waiting.resolve({ png: reply.png, width: reply.width, height: reply.height });
    else if (reply.type === "invalid") waiting.reject(new InvalidMediaError(reply.message, reply.param));
    else waiting.reject(new Error(reply.message));
  }

  #die(err: Error): void {
    this.dead = true;
    for (const waiting of this.#waiting.values()) waiting.reject(err);
    this.#waiting.clear();
  }
}

let thread: ImageThread | null = null;

/**
 * A client's image decoded (at most `maxPixels`), composited over black and re-encoded as PNG, on the
 * image thread. Rejects with the InvalidMediaError naming `param` that decodeImage would have thrown.
 */
export function prepareImage(bytes: Uint8Array, maxPixels: number, param: string): Promise<PreparedImage> {
  if (!thread || thread.dead) thread = new ImageThread();
  return thread.prepare(bytes, maxPixels, param);
}
