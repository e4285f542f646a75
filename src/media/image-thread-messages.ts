// Messages between the server's main thread and the reference-image thread (structured clone; the
// image bytes and the PNG are transferred, not copied). Every request gets one reply with its id.

export interface ToImageThread {
  id: number;
  bytes: Uint8Array;
  maxPixels: number;
  /** The request field the image came in, for the error that names it. */
  param: string;
}

export type FromImageThread =
  | { id: number; type: "png"; png: Uint8Array; width: number; height: number }
  /** The client's image is bad: an InvalidMediaError to rethrow as it was. */
  | { id: number; type: "invalid"; message: string; param: string }
  | { id: number; type: "failed"; message: string };
