// The body of a worker process's stream encoder thread (a Bun Worker, encoder-thread-host.ts): one
// StreamFragmenter per open stream, fed chunk by chunk. Requests are handled strictly one after another
// in arrival order — opening a stream's encoder is asynchronous, and chunks may arrive before it is
// ready — and every request but `close` gets exactly one reply: the bytes, or the error's message.
import { adoptNativeLibraryFile } from "../h264/core-native.ts";
import { StreamFragmenter } from "./fragmenter.ts";
import type { FromEncoderThread, ToEncoderThread } from "./thread-messages.ts";

declare const self: Worker;

const streams = new Map<number, StreamFragmenter>();
let queue: Promise<void> = Promise.resolve();

function reply(message: FromEncoderThread): void {
  // the bytes are this thread's own: hand their buffer over instead of copying it
  self.postMessage(message, message.type === "bytes" ? [message.bytes.buffer as ArrayBuffer] : []);
}

async function handle(request: ToEncoderThread): Promise<void> {
  if (request.type === "close") {
    streams.get(request.stream)?.close();
    streams.delete(request.stream);
    return;
  }
  const { stream, seq } = request;
  try {
    switch (request.type) {
      case "open": {
        adoptNativeLibraryFile(request.nativeLibrary);
        const fragmenter = await StreamFragmenter.create(request.options);
        streams.set(stream, fragmenter);
        return reply({ type: "opened", stream, seq, backend: fragmenter.backend });
      }
      case "fragment":
        return reply({ type: "bytes", stream, seq, bytes: opened(stream).fragment(request.frames) });
      case "finish":
        return reply({ type: "bytes", stream, seq, bytes: opened(stream).trailer() });
    }
  } catch (err) {
    reply({ type: "failed", stream, seq, message: err instanceof Error ? err.message : String(err) });
  }
}

function opened(stream: number): StreamFragmenter {
  const fragmenter = streams.get(stream);
  if (!fragmenter) throw new Error("the stream's encoder was not created");
  return fragmenter;
}

self.onmessage = (event: MessageEvent<ToEncoderThread>) => {
  const request = event.data;
  queue = queue.then(() => handle(request));
};
