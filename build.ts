// kino's build: compiles the kernels (C → WebAssembly) that the server imports, and with --compile
// bundles everything into one executable, dist/kino. Each step skips work that is already up to date,
// so `npm start` and `npm test` can run it every time.
import { $ } from "bun";
import { buildCpuWasm } from "./tools/build/cpu.ts";
import { buildCudaLib } from "./tools/build/cuda.ts";
import { buildH264Wasm } from "./tools/build/h264.ts";

const compile = process.argv.includes("--compile");

const started = performance.now();
for (const built of [await buildH264Wasm(), await buildCpuWasm()]) {
  console.log(`build: ${built} ready (${Math.round(performance.now() - started)} ms)`);
}
// The CUDA library needs nvcc; without it kino still builds and runs on the WebAssembly backend.
const cuda = await buildCudaLib();
if (cuda) console.log(`build: ${cuda} ready (${Math.round(performance.now() - started)} ms)`);

if (compile) {
  // An extra entrypoint is embedded as a file; src/runtime/backends/cuda.ts finds it in Bun.embeddedFiles.
  await $`${process.execPath} build --compile --minify-syntax src/cli/main.ts ${cuda ? [cuda] : []} --outfile dist/kino`;
  console.log("build: dist/kino written");
}
