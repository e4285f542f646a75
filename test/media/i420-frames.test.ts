// Video frames leave the backend as I420 (Backend.rgbToYuv420) instead of as f32 RGB that the worker
// turned into RGB24 and the H.264 encoder into I420 again. The two must be the same bytes: the op on
// the reference and on the WebAssembly backend (1 and 2 threads) against what the encoder itself makes
// of videoToRgb24's frames (its source picture, sourceI420), in both encoder builds, on VAE-like output
// — random values a little out of [-1, 1], and the samples where rounding could part (exact .5 ties,
// ±1 and their neighbours, values that vanish in x + 1, NaN, infinities). The CUDA kernel's source
// runs on the CPU emulator (test/runtime/cuda-emulator) where g++ and the CUDA headers are; on a GPU
// the op sweep (ops.test.ts) holds the real kernel to the reference, exactly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { nativeLibrary } from "../../src/media/h264/core-native.ts";
import { H264Encoder } from "../../src/media/h264/encoder.ts";
import { videoToRgb24 } from "../../src/models/frames.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import * as R from "../../src/runtime/reference.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { buildEmulator, emulatedRgbToYuv420 } from "../runtime/cuda-emulator/emulated-backend.ts";

await buildCpuWasm();
const native = await nativeLibrary();
const emulator = await buildEmulator("yuv");
const encoderBuilds = typeof native === "string" ? (["wasm"] as const) : (["wasm", "native"] as const);

const EDGES = [0, 1, -1, 1 - 2 ** -24, -1 + 2 ** -24, 1e-30, -1e-30, NaN, Infinity, -Infinity, 2 ** -9, 1 / 255, -1 / 255];

/** [3, T, H, W] like a VAE chunk: a smooth gradient with noise, a little out of range, the edge values sprinkled in. */
function vaeLike(T: number, H: number, W: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const x = new Float32Array(3 * T * H * W);
  for (let i = 0; i < x.length; i++) {
    const p = i % (H * W), c = Math.floor(i / (T * H * W));
    x[i] = -1.05 + 2.1 * (((p % W) / W + c * 0.3) % 1) + 0.2 * (rand() - 0.5);
  }
  for (let i = 0; i < 400; i++) x[Math.floor(rand() * x.length)] = EDGES[i % EDGES.length]!;
  return x;
}

/** What the encoder makes of videoToRgb24's frames: its source picture after its own RGB → I420. */
async function encoderI420(video: Float32Array, T: number, H: number, W: number, backend: "wasm" | "native"): Promise<Uint8Array> {
  const encoder = await H264Encoder.create({ width: W, height: H, backend });
  try {
    const out = new Uint8Array((T * H * W * 3) / 2);
    videoToRgb24(video, T, H, W).forEach((rgb, t) => {
      encoder.encode(rgb);
      out.set(encoder.sourceI420(), (t * H * W * 3) / 2);
    });
    return out;
  } finally {
    encoder.close();
  }
}

async function onBackend(be: Backend, video: Float32Array, T: number, H: number, W: number): Promise<Uint8Array> {
  const x = be.upload(video, [3, T, H, W]);
  const yuv = be.alloc([T, (H * W * 3) / 2], "u8");
  try {
    be.rgbToYuv420(yuv, x, [-1, 1]);
    return await be.downloadRaw(yuv);
  } finally {
    be.free(x, yuv);
  }
}

/** Indices where a and b differ, the first few, for a readable failure. */
function differences(a: Uint8Array, b: Uint8Array): string {
  const at: string[] = [];
  for (let i = 0; i < a.length && at.length < 5; i++) if (a[i] !== b[i]) at.push(`[${i}] ${a[i]} ≠ ${b[i]}`);
  return at.join(", ");
}

const backends: { name: string; be: Backend }[] = [];
beforeAll(async () => {
  for (const threads of [1, 2]) backends.push({ name: `wasm×${threads}`, be: await openBackend("cpu", { threads }) });
});
afterAll(() => backends.forEach(({ be }) => be.dispose()));

describe("rgbToYuv420 gives the H.264 encoder's own I420", () => {
  for (const [T, H, W] of [[3, 32, 48], [1, 272, 480]] as const) {
    test(`${W}x${H}, ${T} frame(s): reference and WebAssembly backend against the encoder's conversion (${encoderBuilds.join(", ")})`, async () => {
      const video = vaeLike(T, H, W, W + H);
      const want = await encoderI420(video, T, H, W, encoderBuilds[0]);
      for (const build of encoderBuilds.slice(1)) expect(differences(await encoderI420(video, T, H, W, build), want)).toBe("");
      const reference = R.rgbToYuv420(new R.Host([3, T, H, W], video), [-1, 1]).data as Uint8Array;
      expect(differences(reference, want)).toBe("");
      for (const { name, be } of backends) expect({ name, diff: differences(await onBackend(be, video, T, H, W), want) }).toEqual({ name, diff: "" });
    });

    test.skipIf("skip" in emulator)(`${W}x${H}, ${T} frame(s): the CUDA kernel (yuv.cu on the CPU emulator) against the encoder's conversion`, async () => {
      const video = vaeLike(T, H, W, W + H);
      const got = emulatedRgbToYuv420((emulator as { path: string }).path, video, T, H, W, [-1, 1]);
      expect(differences(got, await encoderI420(video, T, H, W, encoderBuilds[0]))).toBe("");
    }, 120_000);
  }

  test("BT.601 limited range: white, black and the primaries land on their studio-range codes", async () => {
    // one 2×2 block per colour, side by side in a 16×2 frame (the encoder's smallest is 16×16, the op's 2×2)
    const colours = [[1, 1, 1], [-1, -1, -1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]];
    const W = 2 * colours.length, H = 2, x = new Float32Array(3 * H * W);
    colours.forEach((rgb, k) => rgb.forEach((v, c) => [0, 1, W, W + 1].forEach((o) => (x[c * H * W + 2 * k + o] = v))));
    const yuv = await onBackend(backends[0]!.be, x, 1, H, W);
    const sample = (k: number) => [yuv[2 * k]!, yuv[H * W + k]!, yuv[H * W + (H * W) / 4 + k]!];
    // Y Cb Cr of white, black, red, green, blue (ITU-R BT.601, 8-bit studio range)
    expect(colours.map((_, k) => sample(k))).toEqual([[235, 128, 128], [16, 128, 128], [81, 90, 240], [145, 54, 34], [41, 240, 110]]);
  });
});
