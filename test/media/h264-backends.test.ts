// The H.264 encoder's two builds (kernels/h264 as build/h264.wasm and as build/libkino_h264.so through
// bun:ffi) must be interchangeable: for the same frames and options they write the same bytes. The
// native half runs wherever tools/build/h264.ts found a C compiler (it does on the CI image); without
// one the comparison is skipped and "auto" falls back to wasm, which is checked in a child process.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { H264Encoder, h264KernelSelfTest, toAnnexB, type H264EncoderOptions } from "../../src/media/h264/encoder.ts";
import { nativeLibrary } from "../../src/media/h264/core-native.ts";
import { findCCompiler } from "../../tools/build/h264.ts";
import { decodeH264, flatFrame, frameOf, noiseFrame, sceneFrame, seededRandom } from "./helpers/h264.ts";

const native = await nativeLibrary();
const nativeMissing = typeof native === "string" ? native : null;

async function encodeWith(backend: "wasm" | "native", opts: H264EncoderOptions, inputs: Uint8Array[], forceIdrAt: number[] = []) {
  const enc = await H264Encoder.create({ ...opts, backend });
  expect(enc.backend).toBe(backend);
  const recons: Uint8Array[] = [];
  const frames = inputs.map((input, i) => {
    const frame = enc.encode(input, { forceIdr: forceIdrAt.includes(i) });
    recons.push(enc.reconstructionI420());
    return frame;
  });
  enc.close();
  return { stream: toAnnexB(enc, frames), qps: frames.map((f) => f.qp), recons };
}

describe("H264Encoder wasm and native builds", () => {
  test("is built wherever a C compiler is present", () => {
    if (findCCompiler()) expect(nativeMissing).toBeNull();
  });

  test.skipIf(nativeMissing !== null)("every SIMD kernel matches its scalar reference natively too", async () => {
    for (const seed of [1, 2, 3]) expect(await h264KernelSelfTest(seed, "native")).toBe(0);
  });

  test.skipIf(nativeMissing !== null)("auto picks the native build when it loads", async () => {
    const enc = await H264Encoder.create({ width: 32, height: 32 });
    expect(enc.backend).toBe("native");
    enc.close();
  });

  // Random sizes, QPs, keyframe intervals, forced IDRs, rate modes and content (black, white,
  // noise, a panning scene): ffmpeg decodes every stream to exactly the reconstruction, and where
  // the native build exists it writes the identical stream.
  test("fuzz: random sizes, QPs, keyframe patterns, rate modes and content; wasm and native identical", async () => {
    const random = seededRandom(20240601);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    for (let round = 0; round < 14; round++) {
      const width = 16 + 2 * Math.floor(random() * 90), height = 16 + 2 * Math.floor(random() * 60);
      const keyframeInterval = pick([0, 1, 3, 4, 8]);
      const rate: H264EncoderOptions["rate"] = pick([
        { mode: "qp", qp: Math.floor(random() * 52) },
        { mode: "qp", qp: 26 },
        { mode: "bitrate", kbps: 50 + Math.floor(random() * 2000) },
        { mode: "crf", crf: 15 + random() * 30 },
      ] as const);
      const inputs = Array.from({ length: 7 }, (_, t) => {
        const kind = pick(["scene", "scene", "noise", "black", "white"] as const);
        if (kind === "noise") return noiseFrame(width, height, round * 16 + t);
        if (kind === "black") return flatFrame(width, height, 0);
        if (kind === "white") return flatFrame(width, height, 255);
        return sceneFrame(width, height, t, { panX: random() * 6 - 3, panY: random() * 4 - 2 });
      });
      const forced = [Math.floor(random() * 7)];
      const opts = { width, height, keyframeInterval, rate, preset: round % 2 ? "quality" : "fast" } as const;
      const a = await encodeWith("wasm", opts, inputs, forced);
      const label = JSON.stringify(opts);
      if (!nativeMissing) {
        const b = await encodeWith("native", opts, inputs, forced);
        expect({ label, same: Buffer.compare(a.stream, b.stream) === 0, qps: b.qps }).toEqual({ label, same: true, qps: a.qps });
      }
      const decoded = decodeH264(a.stream, width, height);
      expect({ label, errors: decoded.errors, frames: decoded.frames }).toEqual({ label, errors: "", frames: inputs.length });
      a.recons.forEach((recon, i) => expect({ label, frame: i, exact: Buffer.compare(frameOf(decoded.yuv, width, height, i), recon) === 0 }).toEqual({ label, frame: i, exact: true }));
    }
  }, 60000);

  test.skipIf(nativeMissing !== null)("identical at 832x480 through IDRs, P frames and a bitrate target", async () => {
    const inputs = Array.from({ length: 6 }, (_, t) => sceneFrame(832, 480, t, { panX: 2.5, detail: 20 }));
    const cases: H264EncoderOptions[] = [];
    for (const preset of ["fast", "quality"] as const)
      cases.push({ width: 832, height: 480, qp: 30, keyframeInterval: 4, preset }, { width: 832, height: 480, keyframeInterval: 4, rate: { mode: "bitrate", kbps: 900 }, preset });
    for (const opts of cases) {
      const a = await encodeWith("wasm", opts, inputs);
      const b = await encodeWith("native", opts, inputs);
      expect(Buffer.compare(a.stream, b.stream)).toBe(0);
    }
  });
});

// I420 input skips the RGB conversion: the planes an rgb24 encoder converted, given back as i420,
// make the same stream (a size off the macroblock grid, so the padding is exercised as well, and one on it).
test("i420 input encodes exactly like the rgb24 frames it was converted from, in both builds", async () => {
  // 50x38: rows padded to whole macroblocks in the encoder's picture; 64x48: planes copied whole
  for (const [width, height, expected] of [[50, 38, 2850], [64, 48, 4608]] as const) {
    const inputs = Array.from({ length: 5 }, (_, t) => sceneFrame(width, height, t, { panX: 1.5 }));
    for (const backend of nativeMissing === null ? (["wasm", "native"] as const) : (["wasm"] as const)) {
      const rgb = await H264Encoder.create({ width, height, qp: 24, keyframeInterval: 3, backend });
      const planes: Uint8Array[] = [];
      const fromRgb = inputs.map((input) => {
        const frame = rgb.encode(input);
        planes.push(rgb.sourceI420());
        return frame;
      });
      const yuv = await H264Encoder.create({ width, height, qp: 24, keyframeInterval: 3, backend, input: "i420" });
      const fromI420 = planes.map((frame) => yuv.encode(frame));
      expect(Buffer.compare(toAnnexB(yuv, fromI420), toAnnexB(rgb, fromRgb))).toBe(0);
      expect(() => yuv.encode(inputs[0]!)).toThrow(`expected ${expected} for ${width}x${height}`);
      rgb.close();
      yuv.close();
    }
  }
});

describe("H264Encoder without the native build", () => {
  // A child process, because the library is looked up once per process.
  function withoutLibrary(script: string) {
    const proc = Bun.spawnSync([process.execPath, "-e", script], {
      cwd: join(import.meta.dir, "../.."),
      env: { ...process.env, KINO_H264_LIB: "/nonexistent/libkino_h264.so" },
      stdout: "pipe",
      stderr: "pipe",
    });
    return { out: proc.stdout.toString().trim(), err: proc.stderr.toString() };
  }

  test("auto falls back to wasm and native fails with the reason", () => {
    const { out, err } = withoutLibrary(`
      import { H264Encoder } from "./src/media/h264/encoder.ts";
      const auto = await H264Encoder.create({ width: 32, height: 32 });
      console.log(auto.backend, auto.encode(new Uint8Array(32 * 32 * 3)).keyframe);
      await H264Encoder.create({ width: 32, height: 32, backend: "native" }).catch((e) => console.log(e.message));
    `);
    expect(err).toBe("");
    expect(out.split("\n")).toEqual(["wasm true", "H264Encoder: native backend unavailable: KINO_H264_LIB=/nonexistent/libkino_h264.so does not exist"]);
  });
});
