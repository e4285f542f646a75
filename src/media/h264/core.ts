// The encoder's C ABI (kernels/h264/encoder.c), seen the same way whether it runs as the
// WebAssembly module (core-wasm.ts) or the native library through bun:ffi (core-native.ts).
// Both builds compile the same C, so for the same calls they return the same bytes.

/** Parameters of h264_create. */
export interface CoreParams {
  width: number;
  height: number;
  qp: number;
  keyint: number;
  fpsMilli: number;
  rgba: boolean;
  /** h264_preset: 0 quality, 1 fast. */
  preset: 0 | 1;
}

/** Rate control (h264_rate_control): mode 0 constant QP, 1 bitrate, 2 constant quality. */
export interface CoreRate {
  mode: 0 | 1 | 2;
  /** QP for mode 0, kbit/s for mode 1, CRF x 100 for mode 2. */
  target: number;
  /** Mode 1: the buffer in kbit (0 = one second of the target rate). */
  bufferKbit: number;
}

/** One encoder instance of either build. Views returned by the methods stay valid until close(). */
export interface EncoderCore {
  readonly backend: "wasm" | "native";
  /** Where the host writes the next frame (width * height * 3 or 4 bytes). */
  input(): Uint8Array;
  /** Encodes the frame in input(); true when it became an IDR. */
  encode(forceIdr: boolean): boolean;
  /** Encodes `frame` (width * height * 3 or 4 bytes): the native library reads it in place, the wasm
   *  module copies it into input() first. True when it became an IDR. */
  encodeFrame(frame: Uint8Array, forceIdr: boolean): boolean;
  /** Encodes the I420 picture the host wrote into plane(0, ·). True when it became an IDR. */
  encodeConverted(forceIdr: boolean): boolean;
  /** A copy of the slice NAL unit of the last encode. */
  nal(): Uint8Array;
  sps(): Uint8Array;
  pps(): Uint8Array;
  /** The QP of the last encoded picture. */
  frameQp(): number;
  /** Plane p (0 Y, 1 Cb, 2 Cr) of the converted source (kind 0) or of the last reconstruction (1). */
  plane(kind: 0 | 1, p: number): { data: Uint8Array; stride: number };
  close(): void;
}
