// Messages between a worker process's stream tasks and its encoder thread (structured clone; frame and
// fragment buffers are transferred, not copied). Each stream on the thread has an id; every request but
// `close` carries a sequence number that its reply repeats.
import type { FragmenterOptions } from "./fragmenter.ts";

/** The process's H.264 library file as its main thread found it (core-native.ts). */
export type NativeLibraryFile = { path: string } | { missing: string };

export type ToEncoderThread =
  | { type: "open"; stream: number; seq: number; options: FragmenterOptions; nativeLibrary: NativeLibraryFile }
  | { type: "fragment"; stream: number; seq: number; frames: Uint8Array[] }
  | { type: "finish"; stream: number; seq: number }
  /** Frees the stream's encoder; no reply. */
  | { type: "close"; stream: number };

export type FromEncoderThread =
  | { type: "opened"; stream: number; seq: number; backend: "wasm" | "native" }
  | { type: "bytes"; stream: number; seq: number; bytes: Uint8Array }
  | { type: "failed"; stream: number; seq: number; message: string };
