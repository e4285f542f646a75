// The whole CUDA library on the CPU emulator: build/cuda-emulator/libkino_cuda_emu.so, every
// kernels/cuda/*.cu compiled as it is by the host compiler (emulator.h first, as the harnesses'
// kernel files: emulated-backend.ts) with the emulated CUDA runtime (library-runtime.cpp), so that the
// real CudaBackend opens on it (KINO_CUDA_LIB) and runs every op in this process: the op sweep's CUDA
// passes without a GPU (cuda-emulated-library.test.ts; the whole sweep: KINO_CUDA_LIB=… ops.test.ts).
// No AddressSanitizer (it cannot be loaded into bun after the fact); UBSan stops at the first report.
import { $ } from "bun";
import { dlopen, FFIType } from "bun:ffi";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { cudaInclude } from "./emulated-backend.ts";

const root = resolve(import.meta.dir, "../../..");
const here = import.meta.dir;
/** Where the library is built (KINO_CUDA_LIB takes this path). */
export const EMULATED_LIBRARY = join(root, "build/cuda-emulator/libkino_cuda_emu.so");

// -O1 as the harnesses; hidden visibility and the nvcc build's version script (tools/build/cuda.ts), so
// that only the C ABI (KC_API, kc_emu_plant) is exported; no launch lines on the test process's stdout.
const FLAGS = ["-std=c++17", "-O1", "-fPIC", "-fvisibility=hidden", "-DKC_EMU_LOG_LAUNCHES=0",
  ...(process.env.KINO_EMU_DEBUG === "1" ? ["-g"] : []), "-fsanitize=undefined", "-fno-sanitize-recover=undefined"];

const mtime = (f: string) => statSync(f).mtimeMs;

/**
 * Builds libkino_cuda_emu.so, again only what a changed source touches: an object is rebuilt when it
 * is older than its file or than any header (kernels/cuda/*.cuh, the emulator's *.h) or this script
 * (its flags), the library when it is older than an object. Returns its path, or why it cannot be
 * built here.
 */
export async function buildEmulatedLibrary(): Promise<{ path: string } | { skip: string }> {
  const include = cudaInclude();
  const gxx = Bun.which("g++");
  if (!include || !gxx) return { skip: `needs g++ and the CUDA headers (${!gxx ? "no g++" : "no cuda_bf16.h"})` };
  const kernelDir = join(root, "kernels/cuda");
  const objDir = join(root, "build/cuda-emulator/library-obj");
  mkdirSync(objDir, { recursive: true });
  const headers = [...readdirSync(kernelDir).filter((f) => f.endsWith(".cuh")).map((f) => join(kernelDir, f)),
    ...readdirSync(here).filter((f) => f.endsWith(".h")).map((f) => join(here, f)), import.meta.path];
  const newestHeader = Math.max(...headers.map(mtime));
  const units = [...readdirSync(kernelDir).filter((f) => f.endsWith(".cu")).map((f) => ({ src: join(kernelDir, f), kernel: true })),
    { src: join(here, "library-runtime.cpp"), kernel: false }];
  const jobs = units.map(({ src, kernel }) => {
    const obj = join(objDir, `${src.split("/").pop()!.replace(/\.(cu|cpp)$/, "")}.o`);
    const stale = !existsSync(obj) || mtime(obj) < Math.max(mtime(src), newestHeader);
    const args = kernel ? ["-include", join(here, "emulator.h"), "-x", "c++", src] : [src];
    return { obj, stale, run: () => compile(gxx, [...FLAGS, `-I${include}`, "-c", ...args, "-o", obj], src) };
  });
  await pool(jobs.filter((j) => j.stale).map((j) => j.run), availableParallelism());
  const objects = jobs.map((j) => j.obj);
  if (!existsSync(EMULATED_LIBRARY) || objects.some((o) => mtime(o) > mtime(EMULATED_LIBRARY))) {
    const exportsMap = join(objDir, "exports.map");
    await Bun.write(exportsMap, "{ global: kc_*; local: *; };\n");
    await compile(gxx, [...FLAGS, "-shared", "-Wl,--no-undefined", `-Wl,--version-script=${exportsMap}`, ...objects, "-o", EMULATED_LIBRARY], "the link");
  }
  return { path: EMULATED_LIBRARY };
}

async function compile(gxx: string, args: string[], what: string): Promise<void> {
  const r = await $`${gxx} ${args}`.nothrow().quiet();
  if (r.exitCode !== 0) throw new Error(`building the emulated CUDA library failed (${what}):\n${r.stderr.toString()}`);
}

async function pool(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

/** Switches a planted bug (KC_PLANTED(n), emulator.h) on for the calls that follow in the emulated
 *  library at `path` that this process has open (dlopen hands out the same copy); 0 switches it off. */
export function plantInEmulatedLibrary(path: string, n: number): void {
  const lib = dlopen(path, { kc_emu_plant: { args: [FFIType.i32], returns: FFIType.void } });
  try {
    lib.symbols.kc_emu_plant(n);
  } finally {
    lib.close();
  }
}

// `bun test/runtime/cuda-emulator/emulated-library.ts` builds the library (README, "Test it").
if (import.meta.main) {
  const built = await buildEmulatedLibrary();
  if ("skip" in built) throw new Error(`the emulated CUDA library cannot be built here: ${built.skip}`);
  console.log(built.path);
}
