// The encoder as a WebAssembly module (build/h264.wasm, built by tools/build/h264.ts). Each encoder
// gets its own instance, so its memory is private and dropping the instance frees it; the compiled
// module is shared per process. The C side allocates everything in h264_create and never grows the
// memory afterwards, so views into it stay valid.
import wasmPath from "../../../build/h264.wasm" with { type: "file" };
import type { CoreParams, CoreRate, EncoderCore } from "./core.ts";

interface WasmExports {
  memory: WebAssembly.Memory;
  h264_build_id(): number;
  h264_create(width: number, height: number, qp: number, keyint: number, fpsMilli: number, rgba: number): number;
  h264_rate_control(handle: number, mode: number, target: number, bufferKbit: number): number;
  h264_preset(handle: number, preset: number): number;
  h264_encode(handle: number, forceIdr: number): number;
  h264_input(handle: number): number;
  h264_convert_rows(handle: number, yFrom: number, yTo: number): void;
  h264_encode_converted(handle: number, forceIdr: number): number;
  h264_nal_data(handle: number): number;
  h264_nal_size(handle: number): number;
  h264_sps_data(handle: number): number;
  h264_sps_size(handle: number): number;
  h264_pps_data(handle: number): number;
  h264_pps_size(handle: number): number;
  h264_frame_qp(handle: number): number;
  h264_source_plane(handle: number, plane: number): number;
  h264_source_stride(handle: number, plane: number): number;
  h264_recon_plane(handle: number, plane: number): number;
  h264_recon_stride(handle: number, plane: number): number;
  h264_selftest(seed: number): number;
}

let compiled: Promise<WebAssembly.Module> | undefined;

function wasmModule(): Promise<WebAssembly.Module> {
  compiled ??= Bun.file(wasmPath)
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

async function instantiate(): Promise<WasmExports> {
  const instance = await WebAssembly.instantiate(await wasmModule(), {});
  return instance.exports as unknown as WasmExports;
}

/** Returns null when h264_create refuses (size or memory). */
export async function createWasmCore(p: CoreParams, rate: CoreRate): Promise<EncoderCore | null> {
  const w = await instantiate();
  const h = w.h264_create(p.width, p.height, p.qp, p.keyint, p.fpsMilli, p.rgba ? 1 : 0);
  if (h === 0) return null;
  if (!w.h264_rate_control(h, rate.mode, rate.target, rate.bufferKbit) || !w.h264_preset(h, p.preset)) return null;
  const bytes = (ptr: number, size: number) => new Uint8Array(w.memory.buffer, ptr, size);
  const frameBytes = p.width * p.height * (p.rgba ? 4 : 3), rowBytes = p.width * (p.rgba ? 4 : 3);
  const bandRows = Math.max(2, Math.floor(16384 / rowBytes) & ~1);
  return {
    backend: "wasm",
    input: () => bytes(w.h264_input(h), frameBytes),
    encode: (forceIdr) => w.h264_encode(h, forceIdr ? 1 : 0) === 1,
    // A band of rows (~16 KiB) at a time: copied in and converted to I420 while still in the
    // cache, instead of one whole-frame copy whose end has left the cache when conversion starts.
    encodeFrame(frame, forceIdr) {
      const input = bytes(w.h264_input(h), frameBytes);
      for (let y = 0; y < p.height; y += bandRows) {
        const end = Math.min(p.height, y + bandRows);
        input.set(frame.subarray(y * rowBytes, end * rowBytes), y * rowBytes);
        w.h264_convert_rows(h, y, end);
      }
      return w.h264_encode_converted(h, forceIdr ? 1 : 0) === 1;
    },
    encodeConverted: (forceIdr) => w.h264_encode_converted(h, forceIdr ? 1 : 0) === 1,
    nal: () => bytes(w.h264_nal_data(h), w.h264_nal_size(h)).slice(),
    sps: () => bytes(w.h264_sps_data(h), w.h264_sps_size(h)).slice(),
    pps: () => bytes(w.h264_pps_data(h), w.h264_pps_size(h)).slice(),
    frameQp: () => w.h264_frame_qp(h),
    plane(kind, plane) {
      const ptr = kind === 0 ? w.h264_source_plane(h, plane) : w.h264_recon_plane(h, plane);
      const stride = kind === 0 ? w.h264_source_stride(h, plane) : w.h264_recon_stride(h, plane);
      const rows = plane === 0 ? p.height : p.height / 2;
      return { data: bytes(ptr, stride * (rows - 1) + (plane === 0 ? p.width : p.width / 2)), stride };
    },
    close: () => {},
  };
}

let buildId: Promise<number> | undefined;

/** Identifies the sources the module was built from (the native library must match it). */
export function wasmBuildId(): Promise<number> {
  buildId ??= instantiate().then((w) => w.h264_build_id());
  return buildId;
}

/** The module's check of every SIMD kernel against its scalar reference (0 = all agree). */
export async function wasmSelfTest(seed: number): Promise<number> {
  return (await instantiate()).h264_selftest(seed);
}
