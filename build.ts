// kino's build: compiles the kernels (C → WebAssembly) that the server imports, and with --compile
// bundles everything into one executable, dist/kino. Each step skips work that is already up to date,
// so `npm start` and `npm test` can run it every time.
import { $ } from "bun";
import { buildH264Wasm } from "./tools/build/h264.ts";

const compile = process.argv.includes("--compile");

const started = performance.now();
const h264 = await buildH264Wasm();
console.log(`build: ${h264} ready (${Math.round(performance.now() - started)} ms)`);

if (compile) {
  await $`${process.execPath} build --compile --minify-syntax src/cli/main.ts --outfile dist/kino`;
  console.log("build: dist/kino written");
}
