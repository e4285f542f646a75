// Compiles kino's H.264 encoder (kernels/h264/*.c) to build/h264.wasm with Debian's clang-14/lld-14.
// wasm32 with SIMD128 and bulk memory, no libc (kernels/h264/memory.c supplies what clang needs).
// Skips the compile when the wasm is newer than every source, so build.ts can run on every start.
import { mkdirSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const SOURCE_DIR = join(ROOT, "kernels", "h264");
const OUTPUT = join(ROOT, "build", "h264.wasm");
const LLVM_BIN = "/usr/lib/llvm-14/bin";

const FLAGS = [
  "--target=wasm32",
  "-O3",
  "-flto",
  "-msimd128",
  "-mbulk-memory",
  "-nostdlib",
  "-ffreestanding",
  "-fvisibility=hidden",
  "-Wall",
  "-Wextra",
  "-Wl,--no-entry",
  "-Wl,--export-dynamic",
  "-Wl,-z,stack-size=1048576",
];

function newestMtime(paths: string[]): number {
  return Math.max(...paths.map((p) => statSync(p).mtimeMs));
}

/** Builds build/h264.wasm if it is missing or older than a source; returns its absolute path. */
export async function buildH264Wasm(): Promise<string> {
  const files = readdirSync(SOURCE_DIR).filter((f) => f.endsWith(".c") || f.endsWith(".h")).sort();
  const sources = files.map((f) => join(SOURCE_DIR, f));
  const cFiles = sources.filter((f) => f.endsWith(".c"));
  if (cFiles.length === 0) throw new Error(`no C sources in ${SOURCE_DIR}`);
  const upToDate = (() => {
    try {
      return statSync(OUTPUT).mtimeMs > newestMtime([...sources, import.meta.path]);
    } catch {
      return false;
    }
  })();
  if (upToDate) return OUTPUT;

  mkdirSync(join(ROOT, "build"), { recursive: true });
  const cmd = ["clang", ...FLAGS, "-o", OUTPUT, ...cFiles.map((f) => relative(ROOT, f))];
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    env: { ...process.env, PATH: `${LLVM_BIN}:${process.env.PATH ?? ""}` },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) {
    throw new Error(`building ${relative(ROOT, OUTPUT)} failed (clang exit ${code}); is clang-14/lld-14 installed?\n${stderr}`);
  }
  return OUTPUT;
}

if (import.meta.main) console.log(await buildH264Wasm());
