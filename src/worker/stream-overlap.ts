// Whether a stream's H.264 encode runs on a thread of its own (src/media/stream/encoder-thread.ts:
// chunk i encoded while chunk i + 1 is generated) or inline after each chunk (StreamTask).
//
// Inline, the worker's main thread encodes between chunks, and on a GPU nothing of chunk i + 1 is
// enqueued meanwhile: the device idles for the encode (12 frames at 832x480: 10–17 ms of the native
// encoder). On the thread, a finished fragment waits for the main thread's next pause to be sent (a
// worker thread cannot use the IPC channel), which on the CPU backend — the main thread computing —
// costs more than the encode it hides (docs/BENCHMARKS.md). So KINO_STREAM_OVERLAP=1 or =0 decides;
// unset, the thread runs where the model runs on CUDA once tools/gpu-check.sh has measured there that
// it sends the same bytes and the steady chunk interval drops (STREAM_OVERLAP_VERIFIED, which
// tools/gpu-verdicts.ts --apply sets), and never on the CPU.
import type { DeviceKind } from "../runtime/tensor.ts";

/** Set once a device run of tools/gpu-check.sh (the encoder thread beside inline encoding) passed on an H200. */
export const STREAM_OVERLAP_VERIFIED = false;

export function streamOverlap(device: DeviceKind, env: Record<string, string | undefined> = process.env): boolean {
  const set = env.KINO_STREAM_OVERLAP;
  if (set === "1" || set === "0") return set === "1";
  return STREAM_OVERLAP_VERIFIED && device === "cuda";
}
