// Binding for kino's own H.264 encoder (kernels/h264, compiled to build/h264.wasm by
// tools/build/h264.ts): Constrained Baseline, CAVLC, I and P pictures, one slice per picture.
// Each encoder gets its own WebAssembly instance (own memory), so several can run at once; the
// compiled module is shared per process.
import wasmPath from "../../../build/h264.wasm" with { type: "file" };

export interface H264EncoderOptions {
  /** Any even size >= 16; coded as whole macroblocks and cropped back in the SPS. */
  width: number;
  height: number;
  /** Pixel layout of the frames passed to encode(); default rgb24. */
  input?: "rgb24" | "rgba";
  /**
   * Constant quantiser 0..51 (lower is better quality, more bits); default 26. P pictures use it
   * as given, IDR pictures 3 steps lower (like x264's ipratio 1.4), since the whole GOP predicts from them.
   */
  qp?: number;
  /** An IDR every N frames counted from the last IDR (forced ones included); 0 = only the first frame. */
  keyframeInterval?: number;
  /** Frames per second: picks the level and is written into the VUI timing; default 24. */
  fps?: number;
}

export interface EncodedFrame {
  /** NAL units of this access unit without start codes, each starting with its header byte; no SPS/PPS. */
  nals: Uint8Array[];
  /** True when this access unit is an IDR. */
  keyframe: boolean;
}

interface EncoderExports {
  memory: WebAssembly.Memory;
  h264_create(width: number, height: number, qp: number, keyint: number, fpsMilli: number, rgba: number): number;
  h264_encode(handle: number, forceIdr: number): number;
  h264_input(handle: number): number;
  h264_nal_data(handle: number): number;
  h264_nal_size(handle: number): number;
  h264_sps_data(handle: number): number;
  h264_sps_size(handle: number): number;
  h264_pps_data(handle: number): number;
  h264_pps_size(handle: number): number;
  h264_source_plane(handle: number, plane: number): number;
  h264_source_stride(handle: number, plane: number): number;
  h264_recon_plane(handle: number, plane: number): number;
  h264_recon_stride(handle: number, plane: number): number;
  h264_selftest(seed: number): number;
}

/** MaxFS of level 6.2 (H.264 Table A-1), e.g. 8192x4320; the wasm side enforces the same limit. */
const MAX_FRAME_MACROBLOCKS = 139264;

let compiled: Promise<WebAssembly.Module> | undefined;

function wasmModule(): Promise<WebAssembly.Module> {
  compiled ??= Bun.file(wasmPath)
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`H264Encoder: ${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

function checkDimension(name: "width" | "height", value: unknown): number {
  checkInteger(name, value, 16, 16384);
  if ((value as number) % 2 !== 0) throw new Error(`H264Encoder: ${name} must be even (4:2:0 chroma), got ${value}`);
  return value as number;
}

export class H264Encoder {
  readonly sps: Uint8Array;
  readonly pps: Uint8Array;
  readonly width: number;
  readonly height: number;
  #wasm: EncoderExports | null;
  readonly #handle: number;
  readonly #frameBytes: number;

  private constructor(wasm: EncoderExports, handle: number, width: number, height: number, bytesPerPixel: number) {
    this.#wasm = wasm;
    this.#handle = handle;
    this.width = width;
    this.height = height;
    this.#frameBytes = width * height * bytesPerPixel;
    this.sps = this.#copy(wasm.h264_sps_data(handle), wasm.h264_sps_size(handle));
    this.pps = this.#copy(wasm.h264_pps_data(handle), wasm.h264_pps_size(handle));
  }

  static async create(opts: H264EncoderOptions): Promise<H264Encoder> {
    const width = checkDimension("width", opts.width);
    const height = checkDimension("height", opts.height);
    const macroblocks = Math.ceil(width / 16) * Math.ceil(height / 16);
    if (macroblocks > MAX_FRAME_MACROBLOCKS) {
      throw new Error(`H264Encoder: width x height ${width}x${height} exceeds the largest H.264 level (${MAX_FRAME_MACROBLOCKS} macroblocks)`);
    }
    const qp = checkInteger("qp", opts.qp ?? 26, 0, 51);
    const keyint = checkInteger("keyframeInterval", opts.keyframeInterval ?? 0, 0, 1 << 30);
    const fps = opts.fps ?? 24;
    if (typeof fps !== "number" || !Number.isFinite(fps) || fps <= 0 || fps > 1000) {
      throw new Error(`H264Encoder: fps must be a number in (0, 1000], got ${String(fps)}`);
    }
    const input = opts.input ?? "rgb24";
    if (input !== "rgb24" && input !== "rgba") throw new Error(`H264Encoder: input must be "rgb24" or "rgba", got ${String(input)}`);

    const instance = await WebAssembly.instantiate(await wasmModule(), {});
    const wasm = instance.exports as unknown as EncoderExports;
    const handle = wasm.h264_create(width, height, qp, keyint, Math.round(fps * 1000), input === "rgba" ? 1 : 0);
    if (handle === 0) throw new Error(`H264Encoder: cannot allocate an encoder for ${width}x${height}`);
    return new H264Encoder(wasm, handle, width, height, input === "rgba" ? 4 : 3);
  }

  /** Encodes one frame (width*height*3 bytes for rgb24, *4 for rgba). */
  encode(frame: Uint8Array, opts?: { forceIdr?: boolean }): EncodedFrame {
    const wasm = this.#open();
    if (frame.byteLength !== this.#frameBytes) {
      throw new Error(`H264Encoder: frame has ${frame.byteLength} bytes, expected ${this.#frameBytes} for ${this.width}x${this.height}`);
    }
    new Uint8Array(wasm.memory.buffer, wasm.h264_input(this.#handle), this.#frameBytes).set(frame);
    const keyframe = wasm.h264_encode(this.#handle, opts?.forceIdr ? 1 : 0) === 1;
    const nal = this.#copy(wasm.h264_nal_data(this.#handle), wasm.h264_nal_size(this.#handle));
    return { nals: [nal], keyframe };
  }

  /** The last frame after RGB -> I420 conversion (BT.601 limited range), width x height, Y then Cb then Cr. */
  sourceI420(): Uint8Array {
    const wasm = this.#open();
    return this.#i420((p) => wasm.h264_source_plane(this.#handle, p), (p) => wasm.h264_source_stride(this.#handle, p));
  }

  /** The last reconstructed (deblocked) picture, which a conforming decoder outputs bit for bit. */
  reconstructionI420(): Uint8Array {
    const wasm = this.#open();
    return this.#i420((p) => wasm.h264_recon_plane(this.#handle, p), (p) => wasm.h264_recon_stride(this.#handle, p));
  }

  /** Releases the wasm instance and its memory; the encoder cannot be used afterwards. */
  close(): void {
    this.#wasm = null;
  }

  #open(): EncoderExports {
    if (!this.#wasm) throw new Error("H264Encoder: encoder is closed");
    return this.#wasm;
  }

  #copy(ptr: number, size: number): Uint8Array {
    return new Uint8Array(this.#open().memory.buffer, ptr, size).slice();
  }

  #i420(plane: (p: number) => number, stride: (p: number) => number): Uint8Array {
    const mem = new Uint8Array(this.#open().memory.buffer);
    const out = new Uint8Array((this.width * this.height * 3) / 2);
    let offset = 0;
    for (let p = 0; p < 3; p++) {
      const w = p ? this.width / 2 : this.width, h = p ? this.height / 2 : this.height;
      const base = plane(p), s = stride(p);
      for (let y = 0; y < h; y++, offset += w) out.set(mem.subarray(base + y * s, base + y * s + w), offset);
    }
    return out;
  }
}

/**
 * Runs the wasm module's own check of each SIMD kernel against its scalar reference on random
 * inputs (kernels/h264/selftest.c). Returns the number of mismatches; 0 means they all agree.
 */
export async function h264KernelSelfTest(seed = 1): Promise<number> {
  const instance = await WebAssembly.instantiate(await wasmModule(), {});
  return (instance.exports as unknown as EncoderExports).h264_selftest(seed);
}

const START_CODE = new Uint8Array([0, 0, 0, 1]);

/** Annex B helper for tests and raw .h264 output: start codes + SPS + PPS before keyframes. */
export function toAnnexB(enc: { sps: Uint8Array; pps: Uint8Array }, frames: EncodedFrame[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const frame of frames) {
    if (frame.keyframe) parts.push(START_CODE, enc.sps, START_CODE, enc.pps);
    for (const nal of frame.nals) parts.push(START_CODE, nal);
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.byteLength;
  }
  return out;
}
