// Binding for kino's own H.264 encoder (kernels/h264): Constrained Baseline, CAVLC, I and P pictures,
// one slice per picture. The same C runs as a WebAssembly module (build/h264.wasm, everywhere) or as a
// native library through bun:ffi (build/libkino_h264.so, where a C compiler was present at build
// time); both produce identical bitstreams, the native one several times faster.
import { createNativeCore, nativeLibrary } from "./core-native.ts";
import { createWasmCore, wasmSelfTest } from "./core-wasm.ts";
import type { CoreRate, EncoderCore } from "./core.ts";

/** How the encoder spends bits. */
export type H264RateControl =
  /** Constant quantiser 0..51 for P pictures; IDR pictures 3 steps lower (like x264's ipratio 1.4). */
  | { mode: "qp"; qp: number }
  /** Average bitrate in kbit/s, held by a leaky-bucket buffer of bufferKbit (default one second's worth). */
  | { mode: "bitrate"; kbps: number; bufferKbit?: number }
  /** Constant quality 0..51 (lower is better): the QP adapts so pictures keep about the Y-PSNR that
   *  QP = crf gives on typical content, whether the content is simple or complex. */
  | { mode: "crf"; crf: number };

export interface H264EncoderOptions {
  /** Any even size >= 16; coded as whole macroblocks and cropped back in the SPS. */
  width: number;
  height: number;
  /** Pixel layout of the frames passed to encode(); default rgb24. "i420": planar Y, Cb, Cr of
   *  width x height, width/2 x height/2 each (BT.601 limited range, as sourceI420() returns), encoded
   *  as given, without conversion. */
  input?: "rgb24" | "rgba" | "i420";
  /** Shorthand for rate: { mode: "qp", qp }; default 26. Give qp or rate, not both. */
  qp?: number;
  rate?: H264RateControl;
  /** An IDR every N frames counted from the last IDR (forced ones included); 0 = only the first frame. */
  keyframeInterval?: number;
  /** Frames per second: picks the level, is written into the VUI timing and paces the bitrate mode; default 24. */
  fps?: number;
  /** Speed against compression. "fast" (default; like x264's ultrafast): Intra 16x16 only,
   *  whole-sample motion search, SAD decisions, no deblocking filter. "quality": Intra 4x4,
   *  quarter-sample motion, SATD decisions and the deblocking filter, about x264-veryfast
   *  efficiency at a fraction of the speed. Both builds write identical streams for either. */
  preset?: "fast" | "quality";
  /** "native" needs build/libkino_h264.so (or the copy embedded in the executable); "auto" (default)
   *  takes it when it loads and falls back to "wasm". */
  backend?: "auto" | "wasm" | "native";
}

export interface EncodedFrame {
  /** NAL units of this access unit without start codes, each starting with its header byte; no SPS/PPS. */
  nals: Uint8Array[];
  /** True when this access unit is an IDR. */
  keyframe: boolean;
  /** The picture's QP (it varies in the bitrate and crf modes). */
  qp: number;
}

/** MaxFS of level 6.2 (H.264 Table A-1), e.g. 8192x4320; the C side enforces the same limit. */
const MAX_FRAME_MACROBLOCKS = 139264;

function checkNumber(name: string, value: unknown, min: number, max: number, integer = true): number {
  if (typeof value !== "number" || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
    throw new Error(`H264Encoder: ${name} must be ${integer ? "an integer" : "a number"} in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

function checkDimension(name: "width" | "height", value: unknown): number {
  checkNumber(name, value, 16, 16384);
  if ((value as number) % 2 !== 0) throw new Error(`H264Encoder: ${name} must be even (4:2:0 chroma), got ${value}`);
  return value as number;
}

/** Validates qp / rate into the C side's (mode, target, buffer) and the QP to start from. */
function rateOf(opts: H264EncoderOptions): { rate: CoreRate; qp: number } {
  if (opts.qp !== undefined && opts.rate !== undefined) throw new Error("H264Encoder: give qp or rate, not both");
  const rate = opts.rate ?? { mode: "qp", qp: opts.qp ?? 26 };
  switch (rate.mode) {
    case "qp": {
      const qp = checkNumber("qp", rate.qp, 0, 51);
      return { rate: { mode: 0, target: qp, bufferKbit: 0 }, qp };
    }
    case "bitrate": {
      const kbps = Math.round(checkNumber("rate.kbps", rate.kbps, 1, 1_000_000, false));
      const buffer = Math.round(checkNumber("rate.bufferKbit", rate.bufferKbit ?? 0, 0, 10_000_000, false));
      return { rate: { mode: 1, target: kbps, bufferKbit: buffer }, qp: 26 };
    }
    case "crf": {
      const crf = checkNumber("rate.crf", rate.crf, 0, 51, false);
      return { rate: { mode: 2, target: Math.round(crf * 100), bufferKbit: 0 }, qp: Math.round(crf) };
    }
    default:
      throw new Error(`H264Encoder: rate.mode must be "qp", "bitrate" or "crf", got ${String((rate as { mode: unknown }).mode)}`);
  }
}

export class H264Encoder {
  readonly sps: Uint8Array;
  readonly pps: Uint8Array;
  readonly width: number;
  readonly height: number;
  /** Which build encodes: the native library or the WebAssembly module. */
  readonly backend: "wasm" | "native";
  #core: EncoderCore | null;
  readonly #frameBytes: number;
  readonly #i420Input: boolean;

  private constructor(core: EncoderCore, width: number, height: number, input: "rgb24" | "rgba" | "i420") {
    this.#core = core;
    this.backend = core.backend;
    this.width = width;
    this.height = height;
    this.#frameBytes = (width * height * { rgb24: 6, rgba: 8, i420: 3 }[input]) / 2;
    this.#i420Input = input === "i420";
    this.sps = core.sps();
    this.pps = core.pps();
  }

  static async create(opts: H264EncoderOptions): Promise<H264Encoder> {
    const width = checkDimension("width", opts.width);
    const height = checkDimension("height", opts.height);
    const macroblocks = Math.ceil(width / 16) * Math.ceil(height / 16);
    if (macroblocks > MAX_FRAME_MACROBLOCKS) {
      throw new Error(`H264Encoder: width x height ${width}x${height} exceeds the largest H.264 level (${MAX_FRAME_MACROBLOCKS} macroblocks)`);
    }
    const { rate, qp } = rateOf(opts);
    const keyint = checkNumber("keyframeInterval", opts.keyframeInterval ?? 0, 0, 1 << 30);
    const fps = opts.fps ?? 24;
    if (typeof fps !== "number" || !Number.isFinite(fps) || fps <= 0 || fps > 1000) {
      throw new Error(`H264Encoder: fps must be a number in (0, 1000], got ${String(fps)}`);
    }
    const input = opts.input ?? "rgb24";
    if (input !== "rgb24" && input !== "rgba" && input !== "i420") {
      throw new Error(`H264Encoder: input must be "rgb24", "rgba" or "i420", got ${String(input)}`);
    }
    const backend = opts.backend ?? "auto";
    if (backend !== "auto" && backend !== "wasm" && backend !== "native") {
      throw new Error(`H264Encoder: backend must be "auto", "wasm" or "native", got ${String(backend)}`);
    }

    const presetName = opts.preset ?? "fast";
    if (presetName !== "fast" && presetName !== "quality") throw new Error(`H264Encoder: preset must be "fast" or "quality", got ${String(presetName)}`);
    const preset = presetName === "fast" ? 1 : 0;
    const params = { width, height, qp, keyint, fpsMilli: Math.round(fps * 1000), rgba: input === "rgba", preset } as const;
    let core: EncoderCore | null;
    const lib = backend === "wasm" ? null : await nativeLibrary();
    if (typeof lib === "string" && backend === "native") throw new Error(`H264Encoder: native backend unavailable: ${lib}`);
    if (lib && typeof lib !== "string") core = createNativeCore(lib, params, rate);
    else core = await createWasmCore(params, rate);
    if (!core) throw new Error(`H264Encoder: cannot allocate an encoder for ${width}x${height}`);
    return new H264Encoder(core, width, height, input);
  }

  /** Encodes one frame (width*height*3 bytes for rgb24, *4 for rgba, *1.5 for i420). */
  encode(frame: Uint8Array, opts?: { forceIdr?: boolean }): EncodedFrame {
    const core = this.#open();
    if (frame.byteLength !== this.#frameBytes) {
      throw new Error(`H264Encoder: frame has ${frame.byteLength} bytes, expected ${this.#frameBytes} for ${this.width}x${this.height}`);
    }
    const forceIdr = opts?.forceIdr === true;
    const keyframe = this.#i420Input ? this.#encodeI420(core, frame, forceIdr) : core.encodeFrame(frame, forceIdr);
    return { nals: [core.nal()], keyframe, qp: core.frameQp() };
  }

  /** The last frame after RGB -> I420 conversion (BT.601 limited range), width x height, Y then Cb then Cr. */
  sourceI420(): Uint8Array {
    return this.#i420(0);
  }

  /** The last reconstructed (deblocked) picture, which a conforming decoder outputs bit for bit. */
  reconstructionI420(): Uint8Array {
    return this.#i420(1);
  }

  /** Releases the encoder and its memory; it cannot be used afterwards. */
  close(): void {
    this.#core?.close();
    this.#core = null;
  }

  #open(): EncoderCore {
    if (!this.#core) throw new Error("H264Encoder: encoder is closed");
    return this.#core;
  }

  /** Copies the planes into the encoder's source picture and encodes it: a plane whose rows are not
   *  padded (a width of whole macroblocks) in one copy, else row by row. */
  #encodeI420(core: EncoderCore, frame: Uint8Array, forceIdr: boolean): boolean {
    let offset = 0;
    for (let p = 0; p < 3; p++) {
      const w = p ? this.width / 2 : this.width, h = p ? this.height / 2 : this.height;
      const { data, stride } = core.plane(0, p);
      if (stride === w) data.set(frame.subarray(offset, offset + w * h));
      else for (let y = 0; y < h; y++) data.set(frame.subarray(offset + y * w, offset + (y + 1) * w), y * stride);
      offset += w * h;
    }
    return core.encodeConverted(forceIdr);
  }

  #i420(kind: 0 | 1): Uint8Array {
    const out = new Uint8Array((this.width * this.height * 3) / 2);
    this.#eachRow(this.#open(), kind, (row, offset) => out.set(row, offset));
    return out;
  }

  /** Visits every row of the source (kind 0) or reconstructed (1) picture, Y then Cb then Cr, with its
   *  offset in a packed I420 frame. */
  #eachRow(core: EncoderCore, kind: 0 | 1, visit: (row: Uint8Array, offset: number, width: number) => void): void {
    let offset = 0;
    for (let p = 0; p < 3; p++) {
      const w = p ? this.width / 2 : this.width, h = p ? this.height / 2 : this.height;
      const { data, stride } = core.plane(kind, p);
      for (let y = 0; y < h; y++, offset += w) visit(data.subarray(y * stride, y * stride + w), offset, w);
    }
  }
}

/**
 * Runs the encoder's own check of each SIMD kernel against its scalar reference on random inputs
 * (kernels/h264/selftest.c), in the wasm module or the native library. Returns the number of
 * mismatches; 0 means they all agree.
 */
export async function h264KernelSelfTest(seed = 1, backend: "wasm" | "native" = "wasm"): Promise<number> {
  if (backend === "wasm") return wasmSelfTest(seed);
  const lib = await nativeLibrary();
  if (typeof lib === "string") throw new Error(`h264KernelSelfTest: native backend unavailable: ${lib}`);
  return lib.h264_selftest(seed);
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
