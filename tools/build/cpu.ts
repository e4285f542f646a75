// Builds the CPU kernels (kernels/cpu/*.c):
// - build/kino-cpu.wasm: wasm32 + SIMD128 with atomics over an imported shared memory, so one module
//   runs on every thread of the wasm backend's worker pool;
// - build/kino-cpu-st.wasm: the same kernels for a plain (unshared) memory, for hosts without
//   SharedArrayBuffer — the backend then runs single-threaded;
// - build/libkino_cpu.so: the same C natively (gcc -O3 -march=native), only for `npm run bench:kernels`.
// Each output is rebuilt only when a source is newer than it.
import { $ } from "bun";
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const srcDir = join(root, "kernels/cpu");
const buildDir = join(root, "build");
const LLVM_BIN = "/usr/lib/llvm-14/bin";

/** The wasm memory cap: all of wasm32's 4 GiB. */
const MAX_MEMORY = 4 * 1024 * 1024 * 1024;

function sources(): { c: string[]; newest: number } {
  const files = readdirSync(srcDir).filter((f) => f.endsWith(".c") || f.endsWith(".h"));
  const newest = Math.max(statSync(import.meta.path).mtimeMs, ...files.map((f) => statSync(join(srcDir, f)).mtimeMs));
  return { c: files.filter((f) => f.endsWith(".c")).sort().map((f) => join(srcDir, f)), newest };
}

function upToDate(out: string, newest: number): boolean {
  return existsSync(out) && statSync(out).mtimeMs >= newest;
}

function findClang(): string {
  for (const c of [join(LLVM_BIN, "clang"), Bun.which("clang-14"), Bun.which("clang")]) if (c && existsSync(c)) return c;
  throw new Error("buildCpuWasm: clang not found (apt-get install clang-14 lld-14)");
}

// -mbulk-memory: there is no libc, so memcpy/memset must become memory.copy/memory.fill.
// --stack-first: the main stack sits below the static data, so an overflow traps instead of
// corrupting it. --max-memory: the whole wasm32 address space; the heap grows into it on demand.
const COMMON = ["--target=wasm32", "-O3", "-msimd128", "-mbulk-memory", "-nostdlib", "-Wall", "-Wextra",
  "-Wno-unused-parameter", "-Wl,--no-entry", "-Wl,--import-memory", "-Wl,--stack-first",
  "-Wl,-z,stack-size=1048576", "-Wl,--export=__heap_base", `-Wl,--max-memory=${MAX_MEMORY}`];
// Threads: atomics over a shared memory, and an exported (mutable) stack pointer so that each worker's
// instance can be given a stack of its own (every instance starts with the same one).
const THREADED = ["-matomics", "-mmutable-globals", "-Wl,--shared-memory", "-Wl,--export=__stack_pointer"];

async function compileWasm(out: string, flags: string[], c: string[]): Promise<void> {
  const clang = findClang();
  const env = { ...process.env, PATH: `${LLVM_BIN}:${process.env.PATH ?? ""}` };
  const tmp = `${out}.${process.pid}.tmp`; // renamed into place: a concurrent reader never sees half a file
  const r = await $`${clang} ${COMMON} ${flags} -o ${tmp} ${c}`.env(env).nothrow().quiet();
  if (r.exitCode !== 0) throw new Error(`buildCpuWasm: clang failed:\n${r.stderr.toString()}`);
  renameSync(tmp, out);
}

/** Compiles the kernels to build/kino-cpu.wasm (threaded) and build/kino-cpu-st.wasm; returns the first. */
export async function buildCpuWasm(): Promise<string> {
  const { c, newest } = sources();
  mkdirSync(buildDir, { recursive: true });
  const threaded = join(buildDir, "kino-cpu.wasm"), single = join(buildDir, "kino-cpu-st.wasm");
  if (!upToDate(threaded, newest)) await compileWasm(threaded, THREADED, c);
  if (!upToDate(single, newest)) await compileWasm(single, [], c);
  return "build/kino-cpu.wasm";
}

/** The same kernels as a native shared library for the benchmark; null when there is no gcc. */
export async function buildCpuNative(): Promise<string | null> {
  const gcc = Bun.which("gcc") ?? Bun.which("cc");
  if (!gcc) return null;
  const { c, newest } = sources();
  mkdirSync(buildDir, { recursive: true });
  const out = join(buildDir, "libkino_cpu.so");
  if (upToDate(out, newest)) return out;
  const tmp = `${out}.${process.pid}.tmp`;
  const r = await $`${gcc} -O3 -march=native -shared -fPIC -fvisibility=hidden -fno-math-errno -pthread -o ${tmp} ${c}`.nothrow().quiet();
  if (r.exitCode !== 0) {
    console.warn(`buildCpuNative: gcc failed, no native baseline:\n${r.stderr.toString()}`);
    return null;
  }
  renameSync(tmp, out);
  return out;
}

if (import.meta.main) {
  console.log(await buildCpuWasm());
  console.log(await buildCpuNative());
}
