// The body of a stream's encoder thread (a Bun Worker started by threaded-fragmenter.ts): one
// StreamFragmenter, fed chunk by chunk. Requests are handled strictly one after another in arrival
// order — creating the encoder is asynchronous, and chunks may arrive before it is ready — and every
// request gets exactly one reply with its sequence number: the bytes, or the error's message.
import { adoptNativeLibraryFile } from "../h264/core-native.ts";
import { StreamFragmenter } from "./fragmenter.ts";
import type { FromEncoderThread, ToEncoderThread } from "./thread-messages.ts";

declare const self: Worker;

let fragmenter: StreamFragmenter | null = null;
let queue: Promise<void> = Promise.resolve();

function reply(message: FromEncoderThread): void {
  // the bytes are this thread's own: hand their buffer over instead of copying it
  self.postMessage(message, message.type === "bytes" ? [message.bytes.buffer as ArrayBuffer] : []);
}

async function handle(request: ToEncoderThread): Promise<void> {
  const { seq } = request;
  try {
    switch (request.type) {
      case "init":
        adoptNativeLibraryFile(request.nativeLibrary);
        fragmenter = await StreamFragmenter.create(request.options);
        return reply({ type: "ready", seq, backend: fragmenter.backend });
      case "fragment":
        return reply({ type: "bytes", seq, bytes: opened().fragment(request.frames) });
      case "finish":
        return reply({ type: "bytes", seq, bytes: opened().trailer() });
    }
  } catch (err) {
    reply({ type: "failed", seq, message: err instanceof Error ? err.message : String(err) });
  }
}

function opened(): StreamFragmenter {
  if (!fragmenter) throw new Error("the stream encoder was not created");
  return fragmenter;
}

self.onmessage = (event: MessageEvent<ToEncoderThread>) => {
  const request = event.data;
  queue = queue.then(() => handle(request));
};
