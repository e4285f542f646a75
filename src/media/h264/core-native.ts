// The encoder as a native shared library (build/libkino_h264.so, built by tools/build/h264.ts when a C
// compiler is present) called through bun:ffi. Same C sources as the wasm module, so the same
// bitstream, several times faster.
//
// Where the library comes from, in order: $KINO_H264_LIB; a file embedded in the compiled executable
// (`bun build --compile … build/libkino_h264.so` puts it in Bun.embeddedFiles; dlopen needs a real
// path, so it is copied to a private temp file); build/libkino_h264.so of the checkout; a
// libkino_h264.so beside the executable. A library whose build id differs from the wasm module's
// (built from other sources) is not used, because the two must produce identical streams.
import { dlopen, FFIType, toArrayBuffer, type Pointer } from "bun:ffi";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { CoreParams, CoreRate, EncoderCore } from "./core.ts";
import { wasmBuildId } from "./core-wasm.ts";

const { ptr, i32, void: none } = FFIType;

const SYMBOLS = {
  h264_build_id: { args: [], returns: i32 },
  h264_create: { args: [i32, i32, i32, i32, i32, i32], returns: ptr },
  h264_rate_control: { args: [ptr, i32, i32, i32], returns: i32 },
  h264_preset: { args: [ptr, i32], returns: i32 },
  h264_destroy: { args: [ptr], returns: none },
  h264_encode: { args: [ptr, i32], returns: i32 },
  h264_encode_from: { args: [ptr, ptr, i32], returns: i32 },
  h264_encode_converted: { args: [ptr, i32], returns: i32 },
  h264_input: { args: [ptr], returns: ptr },
  h264_nal_data: { args: [ptr], returns: ptr },
  h264_nal_size: { args: [ptr], returns: i32 },
  h264_sps_data: { args: [ptr], returns: ptr },
  h264_sps_size: { args: [ptr], returns: i32 },
  h264_pps_data: { args: [ptr], returns: ptr },
  h264_pps_size: { args: [ptr], returns: i32 },
  h264_frame_qp: { args: [ptr], returns: i32 },
  h264_source_plane: { args: [ptr, i32], returns: ptr },
  h264_source_stride: { args: [ptr, i32], returns: i32 },
  h264_recon_plane: { args: [ptr, i32], returns: ptr },
  h264_recon_stride: { args: [ptr, i32], returns: i32 },
  h264_selftest: { args: [i32], returns: i32 },
} as const;

type Library = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

const LIB_NAME = "libkino_h264.so";

async function locate(): Promise<{ path: string } | { missing: string }> {
  const env = process.env.KINO_H264_LIB;
  if (env) return existsSync(env) ? { path: env } : { missing: `KINO_H264_LIB=${env} does not exist` };
  const embedded = Bun.embeddedFiles.find((f) => /^libkino_h264(-[a-z0-9]+)?\.so$/.test((f as Blob & { name: string }).name));
  if (embedded) {
    const dir = mkdtempSync(join(tmpdir(), "kino-h264-"));
    const path = join(dir, LIB_NAME);
    await Bun.write(path, embedded);
    // Once loaded the mapping stays valid without the file, so the copy need not outlive this process.
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    return { path };
  }
  const candidates = [resolve(import.meta.dir, "../../../build", LIB_NAME), join(dirname(process.execPath), LIB_NAME)];
  const found = candidates.find((p) => existsSync(p));
  return found ? { path: found } : { missing: `no ${LIB_NAME} (looked in ${candidates.join(", ")}; it is built when a C compiler is present)` };
}

/** The x86-64 build uses SSE4.2 and POPCNT (tools/build/h264.ts); on a CPU without them it would
 *  crash on the first call instead of failing to load, so check first. */
function missingCpuFeatures(): string | null {
  if (process.arch !== "x64") return null;
  let flags: string;
  try {
    flags = readFileSync("/proc/cpuinfo", "utf8").match(/^flags\s*:(.*)$/m)?.[1] ?? "";
  } catch {
    return null; // not Linux: dlopen decides
  }
  const missing = ["sse4_2", "popcnt"].filter((f) => !flags.split(/\s+/).includes(f));
  return missing.length ? `the CPU lacks ${missing.join(", ")}` : null;
}

type LibraryFile = { path: string } | { missing: string };

let located: Promise<LibraryFile> | undefined;

/**
 * Where this process's library file is, or why there is none; found (and an embedded copy written out)
 * once per process. A stream's encoder thread is handed its process's answer (adoptNativeLibraryFile),
 * so the embedded copy is written once, by the main thread, which also removes it at exit.
 */
export function nativeLibraryFile(): Promise<LibraryFile> {
  located ??= locate();
  return located;
}

/** Takes the file another thread of this process found, instead of looking for (or writing) one. */
export function adoptNativeLibraryFile(file: LibraryFile): void {
  located = Promise.resolve(file);
}

async function load(): Promise<Library | string> {
  const cpu = missingCpuFeatures();
  if (cpu) return cpu;
  const where = await nativeLibraryFile();
  if ("missing" in where) return where.missing;
  let lib: Library;
  try {
    lib = dlopen(where.path, SYMBOLS).symbols;
  } catch (e) {
    return `cannot load ${where.path}: ${(e as Error).message}`;
  }
  const [native, wasm] = [lib.h264_build_id(), await wasmBuildId()];
  if (native !== wasm) return `${where.path} was built from other sources than the wasm module (build id ${native} vs ${wasm}); rebuild`;
  return lib;
}

let loaded: Promise<Library | string> | undefined;

/** The native library, or why it cannot be used. Loaded once per process. */
export function nativeLibrary(): Promise<Library | string> {
  loaded ??= load();
  return loaded;
}

/** Native encoders not closed by their owner are freed when they are garbage-collected. */
const finalizer = new FinalizationRegistry<{ lib: Library; handle: Pointer }>(({ lib, handle }) => lib.h264_destroy(handle));

/** Returns null when h264_create refuses (size or memory). */
export function createNativeCore(lib: Library, p: CoreParams, rate: CoreRate): EncoderCore | null {
  const handle = lib.h264_create(p.width, p.height, p.qp, p.keyint, p.fpsMilli, p.rgba ? 1 : 0) as Pointer | null;
  if (!handle) return null;
  if (!lib.h264_rate_control(handle, rate.mode, rate.target, rate.bufferKbit) || !lib.h264_preset(handle, p.preset)) {
    lib.h264_destroy(handle);
    return null;
  }
  const token = {};
  finalizer.register(token, { lib, handle }, token);
  const view = (address: unknown, size: number) => new Uint8Array(toArrayBuffer(address as Pointer, 0, size));
  const input = view(lib.h264_input(handle), p.width * p.height * (p.rgba ? 4 : 3));
  let open = true;
  return {
    backend: "native",
    input: () => input,
    encode: (forceIdr) => lib.h264_encode(handle, forceIdr ? 1 : 0) === 1,
    // bun:ffi passes the typed array's own memory (offset included): no copy into input()
    encodeFrame: (frame, forceIdr) => lib.h264_encode_from(handle, frame, forceIdr ? 1 : 0) === 1,
    encodeConverted: (forceIdr) => lib.h264_encode_converted(handle, forceIdr ? 1 : 0) === 1,
    nal: () => view(lib.h264_nal_data(handle), lib.h264_nal_size(handle)).slice(),
    sps: () => view(lib.h264_sps_data(handle), lib.h264_sps_size(handle)).slice(),
    pps: () => view(lib.h264_pps_data(handle), lib.h264_pps_size(handle)).slice(),
    frameQp: () => lib.h264_frame_qp(handle),
    plane(kind, plane) {
      const address = kind === 0 ? lib.h264_source_plane(handle, plane) : lib.h264_recon_plane(handle, plane);
      const stride = kind === 0 ? lib.h264_source_stride(handle, plane) : lib.h264_recon_stride(handle, plane);
      const rows = plane === 0 ? p.height : p.height / 2;
      return { data: view(address, stride * (rows - 1) + (plane === 0 ? p.width : p.width / 2)), stride };
    },
    close() {
      if (!open) return;
      open = false;
      finalizer.unregister(token);
      lib.h264_destroy(handle);
    },
  };
}
