// Messages between a stream task and its encoder thread (structured clone; frame and fragment buffers
// are transferred, not copied). Every request carries a sequence number its reply repeats.
import type { FragmenterOptions } from "./fragmenter.ts";

export type ToEncoderThread =
  /** `nativeLibrary`: the process's H.264 library file as its main thread found it (core-native.ts). */
  | { type: "init"; seq: number; options: FragmenterOptions; nativeLibrary: { path: string } | { missing: string } }
  | { type: "fragment"; seq: number; frames: Uint8Array[] }
  | { type: "finish"; seq: number };

export type FromEncoderThread =
  | { type: "ready"; seq: number; backend: "wasm" | "native" }
  | { type: "bytes"; seq: number; bytes: Uint8Array }
  | { type: "failed"; seq: number; message: string };
