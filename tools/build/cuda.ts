// Builds the CUDA kernels (kernels/cuda/*.cu) into build/libkino_cuda.so with nvcc, for
// src/runtime/backends/cuda.ts to dlopen through bun:ffi. The library links the CUDA runtime
// statically, so it needs only libc/libstdc++ and, at run time, the driver (libcuda) when one exists.
//
// Machine code for sm_90a (Hopper: wgmma + TMA GEMM) and sm_80 (Ampere/Ada, and Hopper without the
// "a" features), plus compute_80 PTX that newer GPUs compile at load time. Each .cu compiles to its own
// object in build/cuda-obj (in parallel, one job per core up to 8: nvcc takes ~1 GB per job), and an
// object is rebuilt only when its source, a header or this script is newer. Without nvcc this is a
// no-op that returns null: the server then runs on the WebAssembly backend.
//
// Beside each object the build keeps what the compiler made of it: ptxas's report (registers, spills,
// shared memory, per target) and the PTX of each virtual architecture, which test/runtime/cuda-ptx.test.ts
// reads, so that the kernels are checked as shipped without compiling them a second time.
import { $ } from "bun";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const srcDir = join(root, "kernels/cuda");
const buildDir = join(root, "build");
const objDir = join(buildDir, "cuda-obj");
export const CUDA_LIB = "build/libkino_cuda.so";

const ARCH = [
  "-gencode", "arch=compute_90a,code=sm_90a",
  "-gencode", "arch=compute_80,code=sm_80",
  "-gencode", "arch=compute_80,code=compute_80",
];
const COMPILE = ["-O3", "-std=c++17", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
  ...ARCH];

export function findNvcc(): string | null {
  return Bun.which("nvcc") ?? (existsSync("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : null);
}

const mtime = (p: string) => statSync(p).mtimeMs;

/** The virtual architectures whose PTX the build keeps, and the machine code ptxas makes of each. */
export const PTX_TARGETS = { compute_90a: "sm_90a", compute_80: "sm_80" } as const;

/** What the build kept of kernels/cuda/`name`.cu: ptxas's -v report, and the PTX for a virtual architecture. */
export const ptxasLogPath = (name: string) => join(objDir, `${name}.ptxas.log`);
export const ptxPath = (name: string, virtualArch: keyof typeof PTX_TARGETS) => join(objDir, `${name}.${virtualArch}.ptx`);

async function compile(nvcc: string, src: string, obj: string): Promise<void> {
  const name = basename(src, ".cu");
  const keep = mkdtempSync(join(objDir, `${name}.keep-`));
  try {
    const r = await $`${nvcc} ${COMPILE} -Xptxas -v --keep --keep-dir ${keep} -c ${src} -o ${obj}`.nothrow().quiet();
    if (r.exitCode !== 0) throw new Error(`buildCudaLib: nvcc failed on ${basename(src)}:\n${r.stderr.toString()}`);
    for (const virtualArch of Object.keys(PTX_TARGETS) as (keyof typeof PTX_TARGETS)[])
      renameSync(join(keep, `${name}.${virtualArch}.ptx`), ptxPath(name, virtualArch));
    writeFileSync(ptxasLogPath(name), r.stdout.toString() + r.stderr.toString());
  } finally {
    rmSync(keep, { recursive: true, force: true });
  }
}

/** Runs `jobs` with at most `limit` in flight. */
async function pool(jobs: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
}

/** Compiles kernels/cuda into build/libkino_cuda.so and returns that (repo-relative) path, or null
 *  when nvcc is not installed. Throws when a kernel does not compile. */
export async function buildCudaLib(): Promise<string | null> {
  const nvcc = findNvcc();
  if (!nvcc) {
    console.log("build: nvcc not found, skipping the CUDA library (the WebAssembly backend will be used)");
    return null;
  }
  const files = readdirSync(srcDir);
  const headersNewest = Math.max(mtime(import.meta.path), ...files.filter((f) => f.endsWith(".cuh")).map((f) => mtime(join(srcDir, f))));
  const sources = files.filter((f) => f.endsWith(".cu")).sort();
  mkdirSync(objDir, { recursive: true });

  const objects = sources.map((f) => join(objDir, f.replace(/\.cu$/, ".o")));
  const stale = sources.filter((f, i) => {
    const obj = objects[i]!, name = f.replace(/\.cu$/, "");
    const kept = [ptxasLogPath(name), ...Object.keys(PTX_TARGETS).map((v) => ptxPath(name, v as keyof typeof PTX_TARGETS))];
    return !existsSync(obj) || kept.some((k) => !existsSync(k)) || mtime(obj) < Math.max(headersNewest, mtime(join(srcDir, f)));
  });
  const lib = join(root, CUDA_LIB);
  const libStale = !existsSync(lib) || objects.some((o) => !existsSync(o) || mtime(o) > mtime(lib));
  if (stale.length === 0 && !libStale) return CUDA_LIB;

  const limit = Math.max(1, Math.min(8, availableParallelism()));
  await pool(stale.map((f) => () => compile(nvcc, join(srcDir, f), join(objDir, f.replace(/\.cu$/, ".o")))), limit);
  // Only the kc_* C ABI is exported (template instantiations from the C++ headers would leak otherwise).
  const exportsMap = join(objDir, "exports.map");
  await Bun.write(exportsMap, "{ global: kc_*; local: *; };\n");
  const r = await $`${nvcc} -shared -cudart static -Xlinker --version-script=${exportsMap} -o ${lib} ${objects}`.nothrow().quiet();
  if (r.exitCode !== 0) throw new Error(`buildCudaLib: linking ${CUDA_LIB} failed:\n${r.stderr.toString()}`);
  return CUDA_LIB;
}

if (import.meta.main) {
  const started = performance.now();
  console.log(`${await buildCudaLib()} (${Math.round(performance.now() - started)} ms)`);
}
