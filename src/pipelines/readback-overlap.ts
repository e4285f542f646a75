// The readback of chunk i's frames overlapped with the DiT of chunk i + 1 (Backend.readbackRaw: on
// CUDA a copy on a second stream whose event Bun's thread polls). Without it the worker waits in a
// synchronous download for chunk i's VAE decode to finish and its bytes to arrive before it enqueues
// anything of chunk i + 1, so the GPU idles while the chunk is handed on and encoded; with it the
// streaming pipeline (wan-streaming.ts) starts the copy, goes on enqueuing chunk i + 1's denoising
// steps, and hands chunk i on at the first step boundary after its bytes have landed (at the latest
// before chunk i + 1's own readback starts). The first chunk, which a session's start waits on, is
// still read back at once. The bytes are the synchronous path's.
//
// Opt-in (KINO_READBACK_OVERLAP=1 in the worker's environment) until tools/gpu-check.sh has shown on
// an H200 that the bytes match the synchronous readback and the chunk time drops; then
// READBACK_OVERLAP_VERIFIED makes it the default (=0 turns it off). Backends without readbackRaw (the
// CPU, whose ops run as they are called) always read back synchronously.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { FrameFormat, GenerationChunk } from "./pipeline.ts";

/** Set once a device run of tools/gpu-check.sh ("readback overlapped with the next chunk") passed on an H200. */
export const READBACK_OVERLAP_VERIFIED = false;

/** Whether chunk readbacks overlap the next chunk on a backend that can (see above). */
export function readbackOverlapWanted(b: Backend, env: Record<string, string | undefined> = process.env): boolean {
  if (!b.readbackRaw) return false;
  return READBACK_OVERLAP_VERIFIED ? env.KINO_READBACK_OVERLAP !== "0" : env.KINO_READBACK_OVERLAP === "1";
}

/**
 * A chunk whose frames are on their way back: `bytes` is T frames of `frameBytes` each, read from a
 * device tensor that `release` frees once the copy has ended (landed or failed) — never earlier, since
 * the copy reads it.
 */
export class PendingChunk {
  #settled = false;
  readonly #frames: Promise<Uint8Array[]>;

  constructor(
    readonly index: number,
    readonly format: FrameFormat,
    bytes: Promise<Uint8Array>,
    frameBytes: number,
    /** How many of the frames the chunk hands on (the last chunk of a clip may keep fewer). */
    readonly keep: number,
    release: () => void,
  ) {
    this.#frames = bytes
      .then((all) => Array.from({ length: keep }, (_, t) => all.subarray(t * frameBytes, (t + 1) * frameBytes)))
      .finally(() => {
        this.#settled = true;
        release();
      });
    this.#frames.catch(() => {}); // a run that stops before taking the chunk still drains it (below)
  }

  /** Whether the bytes have landed (or the copy failed): taking the chunk now does not wait. */
  get settled(): boolean {
    return this.#settled;
  }

  /** The chunk, once its bytes have landed (rejects with the copy's error). */
  async chunk(): Promise<GenerationChunk> {
    return { generation_chunk_index: this.index, format: this.format, frames: await this.#frames };
  }

  /** Waits until the copy has ended and its tensor is freed, whatever the outcome: what a run that
   *  stops early does before it gives up the memory it holds. */
  async drain(): Promise<void> {
    await this.#frames.catch(() => {});
  }
}

/** Starts the readback of `yuv` (T I420 frames of `frameBytes`); the chunk frees `yuv` when it ends. */
export function startReadback(b: Backend, yuv: Tensor, index: number, format: FrameFormat, frameBytes: number, keep: number): PendingChunk {
  let bytes: Promise<Uint8Array>;
  try {
    bytes = b.readbackRaw!(yuv);
  } catch (e) {
    b.free(yuv);
    throw e;
  }
  return new PendingChunk(index, format, bytes, frameBytes, keep, () => b.free(yuv));
}
