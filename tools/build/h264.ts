// Compiles kino's H.264 encoder (kernels/h264/*.c) twice from the same sources:
// - build/h264.wasm with Debian's clang-14/lld-14: wasm32 with SIMD128 and bulk memory, no libc
//   (kernels/h264/memory.c supplies what clang needs); always built, it is the encoder everywhere;
// - build/libkino_h264.so at -O3, SSE4.1 on x86-64 (kernels/h264/simd.h maps the same vector
//   operations onto it), for src/media/h264/core-native.ts to call through bun:ffi: with the same
//   clang-14 and whole-program optimisation (-flto, linked by lld-14) where they are installed,
//   which made the encoder 10-12 % faster than gcc 12 -O3 did; otherwise with the system C
//   compiler (gcc, cc or clang); skipped without a compiler, the wasm module is then used.
// Both get the same build id (a hash of the sources), which the binding compares before it trusts the
// native library to produce the wasm module's bitstreams. Each output is rebuilt only when a source
// is newer, so build.ts can run this on every start.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const SOURCE_DIR = join(ROOT, "kernels", "h264");
const WASM_OUTPUT = join(ROOT, "build", "h264.wasm");
const NATIVE_OUTPUT = join(ROOT, "build", "libkino_h264.so");
const LLVM_BIN = "/usr/lib/llvm-14/bin";

const COMMON_FLAGS = ["-O3", "-fvisibility=hidden", "-Wall", "-Wextra"];

const WASM_FLAGS = [
  "--target=wasm32",
  "-flto",
  "-msimd128",
  "-mbulk-memory",
  "-nostdlib",
  "-ffreestanding",
  "-Wl,--no-entry",
  "-Wl,--export-dynamic",
  "-Wl,-z,stack-size=1048576",
];

function nativeFlags(): string[] {
  const isa = process.arch === "x64" ? ["-msse4.2", "-mpopcnt"] : []; // elsewhere simd.h falls back to the scalar kernels
  return ["-shared", "-fPIC", ...isa];
}

interface Sources {
  files: string[];
  cFiles: string[];
  newest: number;
  /** 31-bit hash of every source and this script: the build id both outputs carry. */
  buildId: number;
}

function sources(): Sources {
  const names = readdirSync(SOURCE_DIR).filter((f) => f.endsWith(".c") || f.endsWith(".h")).sort();
  const files = names.map((f) => join(SOURCE_DIR, f));
  const cFiles = files.filter((f) => f.endsWith(".c"));
  if (cFiles.length === 0) throw new Error(`no C sources in ${SOURCE_DIR}`);
  const hashed = [...files, import.meta.path].map((f) => `${relative(ROOT, f)}\n${readFileSync(f, "utf8")}`).join("\n");
  const buildId = Number(Bun.hash(hashed) & 0x7fffffffn);
  const newest = Math.max(...[...files, import.meta.path].map((p) => statSync(p).mtimeMs));
  return { files, cFiles, newest, buildId };
}

function upToDate(output: string, newest: number): boolean {
  return existsSync(output) && statSync(output).mtimeMs > newest;
}

async function compile(compiler: string, flags: string[], output: string, src: Sources, env?: Record<string, string>, hint = ""): Promise<string> {
  const tmp = `${output}.${process.pid}.tmp`; // renamed into place: a concurrent reader never sees half a file
  const cmd = [compiler, ...COMMON_FLAGS, ...flags, `-DKINO_H264_BUILD_ID=${src.buildId}`, "-o", tmp, ...src.cFiles.map((f) => relative(ROOT, f))];
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn(cmd, { cwd: ROOT, env: env ?? process.env, stdout: "pipe", stderr: "pipe" });
  } catch (e) {
    throw new Error(`building ${relative(ROOT, output)}: cannot run ${compiler} (${(e as Error).message})${hint}`);
  }
  const [stderr, code] = await Promise.all([new Response(proc.stderr as ReadableStream).text(), proc.exited]);
  if (code !== 0) throw new Error(`building ${relative(ROOT, output)} failed (${compiler} exit ${code})\n${stderr}`);
  renameSync(tmp, output);
  return output;
}

async function buildWasm(src: Sources): Promise<string> {
  if (upToDate(WASM_OUTPUT, src.newest)) return WASM_OUTPUT;
  const env = { ...process.env, PATH: `${LLVM_BIN}:${process.env.PATH ?? ""}` } as Record<string, string>;
  return compile("clang", WASM_FLAGS, WASM_OUTPUT, src, env, "; is clang-14/lld-14 installed?");
}

/** The native C compiler, or null when there is none. */
export function findCCompiler(): string | null {
  return Bun.which("gcc") ?? Bun.which("cc") ?? Bun.which("clang") ?? null;
}

/** clang-14 with lld-14 (what the wasm build uses), or null: then findCCompiler()'s compiler without LTO. */
function llvmCompiler(): string | null {
  const clang = join(LLVM_BIN, "clang");
  return existsSync(clang) && existsSync(join(LLVM_BIN, "ld.lld")) ? clang : null;
}

async function buildNative(src: Sources): Promise<string | null> {
  if (upToDate(NATIVE_OUTPUT, src.newest)) return NATIVE_OUTPUT;
  const llvm = llvmCompiler();
  if (llvm) return compile(llvm, [...nativeFlags(), "-flto", "-fuse-ld=lld"], NATIVE_OUTPUT, src);
  const cc = findCCompiler();
  if (!cc) {
    console.log("build: no C compiler, skipping build/libkino_h264.so (the H.264 encoder runs as WebAssembly)");
    return null;
  }
  return compile(cc, nativeFlags(), NATIVE_OUTPUT, src);
}

/** Builds build/h264.wasm and, with a C compiler, build/libkino_h264.so (both in parallel). */
export async function buildH264(): Promise<{ wasm: string; native: string | null }> {
  mkdirSync(join(ROOT, "build"), { recursive: true });
  const src = sources();
  const [wasm, native] = await Promise.all([buildWasm(src), buildNative(src)]);
  return { wasm, native };
}

if (import.meta.main) console.log(await buildH264());
