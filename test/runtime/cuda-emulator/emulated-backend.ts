// The CPU emulator of the CUDA kernels (emulator.h) as the tests use it: builds a harness with the host
// compiler (g++ and the CUDA headers, which every machine with nvcc has), and a Backend whose conv3d /
// conv2d run kernels/cuda/conv_mma.cu through it — every other op is the TypeScript reference
// (HostBackend) — so that the op sweep's conv cases hold the tensor-core kernel to its promise on
// machines without a GPU.
import { $ } from "bun";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Conv2dOptions, Conv3dOptions } from "../../../src/runtime/backend.ts";
import * as P from "../../../src/runtime/op-params.ts";
import type { Tensor } from "../../../src/runtime/tensor.ts";
import { findNvcc } from "../../../tools/build/cuda.ts";
import { HostBackend } from "../../models/helpers/host-backend.ts";

const root = resolve(import.meta.dir, "../../..");
const here = import.meta.dir;

/** The CUDA headers (cuda_bf16.h, …) next to nvcc, or null. */
function cudaInclude(): string | null {
  const nvcc = findNvcc();
  const candidates = [nvcc && join(dirname(realpathSync(nvcc)), "../include"), "/usr/local/cuda/include"];
  return candidates.find((d) => d && existsSync(join(d, "cuda_bf16.h"))) ?? null;
}

/**
 * Compiles the harness `name`.cpp of this folder (with AddressSanitizer) into build/cuda-emulator/,
 * again only when it or a kernel source changed. Returns its path, or why it cannot be built here.
 */
export async function buildEmulator(name: string): Promise<{ path: string } | { skip: string }> {
  const include = cudaInclude();
  const gxx = Bun.which("g++");
  if (!include || !gxx) return { skip: `needs g++ and the CUDA headers (${!gxx ? "no g++" : "no cuda_bf16.h"})` };
  const out = join(root, "build/cuda-emulator", name);
  const kernels = join(root, "kernels/cuda");
  const sources = [join(here, `${name}.cpp`), join(here, "emulator.h"), ...readdirSync(kernels).map((f) => join(kernels, f))];
  if (existsSync(out) && sources.every((s) => statSync(s).mtimeMs < statSync(out).mtimeMs)) return { path: out };
  mkdirSync(dirname(out), { recursive: true });
  const r = await $`${gxx} -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I${include} ${join(here, `${name}.cpp`)} -o ${out}`.nothrow().quiet();
  if (r.exitCode !== 0) throw new Error(`building the ${name} emulator failed:\n${r.stderr.toString()}`);
  return { path: out };
}

const W_DT = { f32: 0, bf16: 1, f16: 2 } as const;

/** HostBackend with kc_conv3d's tensor-core path emulated; `launches` lists each call's kernel launches. */
export class EmulatedConvBackend extends HostBackend {
  readonly launches: string[][] = [];
  constructor(private readonly harness: string) {
    super();
  }

  override conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}): void {
    const g = P.conv3dGeometry(out, x, w, bias, opts);
    const head = new Int32Array([g.B, g.Cin, g.Cout, g.T, g.H, g.W, g.kt, g.kh, g.kw, g.st, g.sh, g.sw, g.timePad, g.top, g.left, g.To, g.Ho, g.Wo,
      W_DT[w.dtype as keyof typeof W_DT], opts.prev ? 1 : 0, bias ? 1 : 0]);
    const parts = [head, this.bytesOf(x), ...(opts.prev ? [this.bytesOf(opts.prev)] : []), this.bytesOf(w), ...(bias ? [this.bytesOf(bias)] : [])];
    const dir = mkdtempSync(join(tmpdir(), "kino-emu-"));
    try {
      const input = join(dir, "in"), output = join(dir, "out");
      writeFileSync(input, Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))));
      const r = Bun.spawnSync([this.harness, input, output], { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
      if (r.exitCode !== 0) throw new Error(`emulated conv3d failed (${r.exitCode}): ${r.stderr.toString()}`);
      this.launches.push(r.stdout.toString().trim().split("\n"));
      this.bytesOf(out).set(readFileSync(output));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  override conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv2dOptions = {}): void {
    const [sh, sw] = opts.stride ?? [1, 1];
    const as5 = (t: Tensor) => t.reshape([t.dim(0), t.dim(1), 1, t.dim(2), t.dim(3)]);
    this.conv3d(as5(out), as5(x), as5(w), bias, { stride: [1, sh, sw], pad: opts.pad, timePad: 0 });
  }
}

/** kc_rgb_to_yuv420 (kernels/cuda/yuv.cu) through the `yuv` harness: x [3, T, H, W] f32 → I420 bytes. */
export function emulatedRgbToYuv420(harness: string, x: Float32Array, T: number, H: number, W: number, range: readonly [number, number]): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), "kino-emu-"));
  try {
    const input = join(dir, "in"), output = join(dir, "out");
    const head = Buffer.alloc(12 + 16);
    [T, H, W].forEach((v, i) => head.writeInt32LE(v, 4 * i));
    range.forEach((v, i) => head.writeDoubleLE(v, 12 + 8 * i));
    writeFileSync(input, Buffer.concat([head, Buffer.from(x.buffer, x.byteOffset, x.byteLength)]));
    const r = Bun.spawnSync([harness, input, output], { env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
    if (r.exitCode !== 0) throw new Error(`emulated rgbToYuv420 failed (${r.exitCode}): ${r.stderr.toString()}`);
    return new Uint8Array(readFileSync(output));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
