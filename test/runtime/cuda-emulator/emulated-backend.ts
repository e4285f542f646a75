// The CPU emulator of the CUDA kernels (emulator.h) as the tests use it: builds a harness with the host
// compiler (g++ and the CUDA headers, which every machine with nvcc has), runs it on one call's
// inputs, and a Backend whose conv3d / conv2d run kc_conv3d's kernels through it (the tensor-core
// kernels/cuda/conv_mma.cu, conv_wgmma.cu and the exact conv_simt.cu) — every other op is the
// TypeScript reference (HostBackend) — so that the op sweep's conv cases hold those kernels to their
// promise on machines without a GPU (GEMM and attention: emulated-tensor-cores.ts).
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
export function cudaInclude(): string | null {
  const nvcc = findNvcc();
  const candidates = [nvcc && join(dirname(realpathSync(nvcc)), "../include"), "/usr/local/cuda/include"];
  return candidates.find((d) => d && existsSync(join(d, "cuda_bf16.h"))) ?? null;
}

// No -g: debug information nearly doubles the harnesses' compile time, and the sanitizers' reports
// name the functions from the symbol table without it (KINO_EMU_DEBUG=1 adds it back for line numbers).
const FLAGS = ["-std=c++17", "-O1", ...(process.env.KINO_EMU_DEBUG === "1" ? ["-g"] : []), "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"];

/**
 * Compiles the harness `name`.cpp of this folder (with AddressSanitizer) into build/cuda-emulator/,
 * again only when it or a kernel source changed. `kernels` are files of kernels/cuda compiled as
 * translation units of their own (emulator.h first) and linked in, as nvcc would build them. Returns
 * the harness's path, or why it cannot be built here.
 */
export async function buildEmulator(name: string, kernels: string[] = []): Promise<{ path: string } | { skip: string }> {
  const include = cudaInclude();
  const gxx = Bun.which("g++");
  if (!include || !gxx) return { skip: `needs g++ and the CUDA headers (${!gxx ? "no g++" : "no cuda_bf16.h"})` };
  const out = join(root, "build/cuda-emulator", name);
  const kernelDir = join(root, "kernels/cuda");
  const sources = [...readdirSync(here).filter((f) => /\.(h|cpp)$/.test(f)).map((f) => join(here, f)), ...readdirSync(kernelDir).map((f) => join(kernelDir, f))];
  if (existsSync(out) && sources.every((s) => statSync(s).mtimeMs < statSync(out).mtimeMs)) return { path: out };
  const objDir = join(root, "build/cuda-emulator", `${name}-obj`);
  mkdirSync(objDir, { recursive: true });
  const compile = async (args: string[], what: string) => {
    const r = await $`${gxx} ${FLAGS} -I${include} ${args}`.nothrow().quiet();
    if (r.exitCode !== 0) throw new Error(`building the ${name} emulator failed (${what}):\n${r.stderr.toString()}`);
  };
  const objects = [join(objDir, `${name}-harness.o`), ...kernels.map((k) => join(objDir, `${k}.o`))];
  await Promise.all([
    compile(["-c", join(here, `${name}.cpp`), "-o", objects[0]!], `${name}.cpp`),
    ...kernels.map((k, i) => compile(["-include", join(here, "emulator.h"), "-x", "c++", "-c", join(kernelDir, `${k}.cu`), "-o", objects[i + 1]!], `${k}.cu`)),
  ]);
  await compile([...objects, "-o", out], "link");
  return { path: out };
}

/**
 * Runs a harness on one call: `parts` concatenated as its input file, the output file's bytes back,
 * and its stdout's lines (a line per kernel launch, and what else the harness prints). `plant` sets
 * KC_EMU_PLANT (emulator.h: the number of a deliberate bug to switch on); `args` replace the input
 * file's path on the command line; `env` adds to the harness's environment (KC_EMU_MISALIGN:
 * host-runtime.h). Throws with the harness's
 * stderr (the library's message, the sanitizer's report, the emulator's) when it fails.
 */
export function runHarness(harness: string, what: string, parts: ArrayBufferView[], plant = 0, args?: string[],
  env: Record<string, string> = {}): { out: Uint8Array; lines: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "kino-emu-"));
  try {
    const input = join(dir, "in"), output = join(dir, "out");
    writeFileSync(input, Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))));
    env = { ...process.env, ASAN_OPTIONS: "detect_leaks=0", KC_EMU_PLANT: String(plant), ...env };
    const r = Bun.spawnSync([harness, ...(args ?? [input]), output], { env });
    if (r.exitCode !== 0) throw new Error(`emulated ${what} failed (${r.exitCode ?? r.signalCode}): ${r.stderr.toString().slice(0, 4000)}`);
    return { out: new Uint8Array(readFileSync(output)), lines: r.stdout.toString().trim().split("\n") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const W_DT = { f32: 0, bf16: 1, f16: 2 } as const;

/** The conv_path codes of kc_set_paths (context.cu) that force each convolution kernel. */
const CONV_PATHS = { simt: 1, "mma.sync": 2, wgmma: 3 } as const;
export type ConvKernel = keyof typeof CONV_PATHS;

/** The conv harness (kc_conv3d with conv.cu, conv_pack.cu, conv_norm_silu.cu, conv_mma.cu, conv_wgmma.cu, conv_simt.cu and copy.cu), built. */
export const buildConvEmulator = () => buildEmulator("conv", ["conv", "conv_pack", "conv_norm_silu", "conv_mma", "conv_wgmma", "conv_simt", "copy"]);

/** conv_mma.cu's block tiles, by the names KINO_CUDA_CONV_MMA_TILE takes (conv_mma_tiles.cuh's order). */
export const CONV_MMA_TILES = ["128x192", "256x96", "128x96", "256x16"] as const;
export type ConvMmaTile = (typeof CONV_MMA_TILES)[number];

/** HostBackend with kc_conv3d's kernels emulated, the one `kernel` names forced (mma.sync
 *  unless given); `plant`: the number of a deliberate kernel bug to switch on (KC_PLANTED), 0 none;
 *  `convMmaTile`: the mma.sync kernel's block tile, forced (KINO_CUDA_CONV_MMA_TILE), instead of chosen by
 *  its model; `dry`: record each call's `dims` and run nothing (the outputs stay as allocated). `launches`
 *  lists each call's kernel launches, `ran` what kc_conv3d says each call ran, `dims` each call's output
 *  voxels (the batch folded in) and channels: what the tile model weighs. */
export class EmulatedConvBackend extends HostBackend {
  readonly launches: string[][] = [];
  readonly ran: string[] = [];
  readonly dims: { M: number; Cout: number }[] = [];
  readonly #path: number;
  readonly #plant: number;
  readonly #env: Record<string, string>;
  readonly #dry: boolean;
  constructor(private readonly harness: string, opts: { kernel?: ConvKernel; plant?: number; convMmaTile?: ConvMmaTile; dry?: boolean } = {}) {
    super();
    this.#path = CONV_PATHS[opts.kernel ?? "mma.sync"];
    this.#plant = opts.plant ?? 0;
    this.#env = opts.convMmaTile ? { KINO_CUDA_CONV_MMA_TILE: opts.convMmaTile } : {};
    this.#dry = opts.dry ?? false;
  }

  override conv3d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv3dOptions = {}): void {
    const g = P.conv3dGeometry(out, x, w, bias, opts);
    this.dims.push({ M: g.B * g.To * g.Ho * g.Wo, Cout: g.Cout });
    if (this.#dry) return;
    const ns = opts.normSilu;
    const head = new Int32Array([g.B, g.Cin, g.Cout, g.T, g.H, g.W, g.kt, g.kh, g.kw, g.st, g.sh, g.sw, g.timePad, g.top, g.left, g.To, g.Ho, g.Wo,
      W_DT[w.dtype as keyof typeof W_DT], opts.prev ? 1 : 0, bias ? 1 : 0, this.#path, ns ? (ns.gamma ? 2 : 1) : 0, 0, 0, opts.residual ? 1 : 0,
      opts.upsample ? 1 : 0]);
    new Float32Array(head.buffer, 23 * 4, 2).set([ns?.eps ?? 0, ns?.scale ?? 0]);
    const parts = [head, this.bytesOf(x), ...(opts.prev ? [this.bytesOf(opts.prev)] : []), this.bytesOf(w), ...(bias ? [this.bytesOf(bias)] : []),
      ...(ns?.gamma ? [this.bytesOf(ns.gamma)] : []), ...(opts.residual ? [this.bytesOf(opts.residual)] : [])];
    const { out: bytes, lines } = runHarness(this.harness, "conv3d", parts, this.#plant, undefined, this.#env);
    this.ran.push(/^kernel (.*)$/.exec(lines.at(-1) ?? "")?.[1] ?? "?");
    this.launches.push(lines.slice(0, -1));
    this.bytesOf(out).set(bytes);
  }

  override conv2d(out: Tensor, x: Tensor, w: Tensor, bias: Tensor | null, opts: Conv2dOptions = {}): void {
    const [sh, sw] = opts.stride ?? [1, 1];
    const as5 = (t: Tensor) => t.reshape([t.dim(0), t.dim(1), 1, t.dim(2), t.dim(3)]);
    this.conv3d(as5(out), as5(x), as5(w), bias, { stride: [1, sh, sw], pad: opts.pad, timePad: 0 });
  }
}

/** kc_rgb_to_yuv420 (kernels/cuda/yuv.cu) through the `yuv` harness: x [3, T, H, W] f32 → I420 bytes. */
export function emulatedRgbToYuv420(harness: string, x: Float32Array, T: number, H: number, W: number, range: readonly [number, number]): Uint8Array {
  const head = Buffer.alloc(12 + 16);
  [T, H, W].forEach((v, i) => head.writeInt32LE(v, 4 * i));
  range.forEach((v, i) => head.writeDoubleLE(v, 12 + 8 * i));
  return runHarness(harness, "rgbToYuv420", [head, x]).out;
}
