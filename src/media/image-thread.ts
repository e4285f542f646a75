// The body of the reference-image thread (a Bun Worker, image-thread-host.ts): decodes a client's
// image, composites it over black and re-encodes it as PNG, one request after another. Decoding a
// 16-megapixel picture and encoding it again costs over a second of CPU in the codecs' wasm, which
// on the server's main thread would stall every other request and every realtime stream meanwhile.
import { compositeOverBlack, decodeImage, encodeImage } from "./images.ts";
import { InvalidMediaError } from "./errors.ts";
import type { FromImageThread, ToImageThread } from "./image-thread-messages.ts";

declare const self: Worker;

let queue: Promise<void> = Promise.resolve();

async function handle({ id, bytes, maxPixels, param }: ToImageThread): Promise<void> {
  try {
    const image = await decodeImage(bytes, { maxPixels, param });
    const png = await encodeImage(compositeOverBlack(image), image.width, image.height, "png");
    const reply: FromImageThread = { id, type: "png", png, width: image.width, height: image.height };
    self.postMessage(reply, [png.buffer as ArrayBuffer]);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const reply: FromImageThread = err instanceof InvalidMediaError ? { id, type: "invalid", message, param: err.param } : { id, type: "failed", message };
    self.postMessage(reply);
  }
}

self.onmessage = (event: MessageEvent<ToImageThread>) => {
  queue = queue.then(() => handle(event.data));
};
