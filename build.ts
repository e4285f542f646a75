// kino's build: compiles the kernels (C → WebAssembly) that the server imports, and with --compile
// bundles everything into one executable, dist/kino. Each step skips work that is already up to date,
// so `npm start` and `npm test` can run it every time.
import { $ } from "bun";
import { existsSync } from "node:fs";
import { ENCODER_THREAD_ENTRY, IMAGE_THREAD_ENTRY } from "./src/media/thread-entries.ts";
import { packBundle } from "./src/models/bundle.ts";
import { buildCpuWasm } from "./tools/build/cpu.ts";
import { buildCudaLib } from "./tools/build/cuda.ts";
import { buildH264 } from "./tools/build/h264.ts";

const compile = process.argv.includes("--compile");

const started = performance.now();
// The H.264 encoder: wasm always; a native library too when a C compiler is present (same bitstreams).
const h264 = await buildH264();
for (const built of [h264.wasm, h264.native, await buildCpuWasm()]) {
  if (built) console.log(`build: ${built} ready (${Math.round(performance.now() - started)} ms)`);
}
// The CUDA library needs nvcc; without it kino still builds and runs on the WebAssembly backend.
const cuda = await buildCudaLib();
if (cuda) console.log(`build: ${cuda} ready (${Math.round(performance.now() - started)} ms)`);

if (compile) {
  // Extra entrypoints are embedded as files, found at run time in Bun.embeddedFiles: the native
  // libraries (src/runtime/backends/cuda.ts, src/media/h264/core-native.ts) and the default model
  // packed into one file (src/models/bundle.ts).
  const embedded = [cuda, h264.native].filter((path): path is string => path !== null);
  if (existsSync("models/kino-tiny/model_index.json")) {
    await packBundle("models/kino-tiny", "build/kino-tiny.bundle");
    embedded.push("build/kino-tiny.bundle");
  }
  // Worker threads run modules of their own: each is an entrypoint bundled beside the main one, found
  // at run time by its path from the project root (--root keeps that path whatever else is embedded).
  const threads = [ENCODER_THREAD_ENTRY, IMAGE_THREAD_ENTRY];
  await $`${process.execPath} build --compile --minify-syntax --root . src/cli/main.ts ${threads} ${embedded} --outfile dist/kino`;
  console.log("build: dist/kino written");
}
