// kino's own H.264 encoder (kernels/h264 → build/h264.wasm), judged by Debian's ffmpeg/ffprobe:
// every stream must decode without errors to exactly the pictures the encoder reconstructed
// (so reference pictures cannot drift), at the quality each QP promises.
import { describe, expect, test } from "bun:test";
import { H264Encoder, h264KernelSelfTest, toAnnexB, type EncodedFrame, type H264EncoderOptions } from "../../src/media/h264/encoder.ts";
import { parseSps } from "../../src/media/mp4/index.ts";
import { decodeH264, flatFrame, frameOf, lumaOf, noiseFrame, probeFrames, psnr, sceneFrame } from "./helpers/h264.ts";

interface Clip {
  enc: H264Encoder;
  frames: EncodedFrame[];
  /** The encoder's own I420 conversion of each source frame. */
  sources: Uint8Array[];
  /** The encoder's reconstruction of each frame (what a decoder must output). */
  recons: Uint8Array[];
  stream: Uint8Array;
}

async function encodeClip(opts: H264EncoderOptions, inputs: Uint8Array[], forceIdrAt: number[] = []): Promise<Clip> {
  const enc = await H264Encoder.create(opts);
  const frames: EncodedFrame[] = [], sources: Uint8Array[] = [], recons: Uint8Array[] = [];
  inputs.forEach((input, i) => {
    frames.push(enc.encode(input, { forceIdr: forceIdrAt.includes(i) }));
    sources.push(enc.sourceI420());
    recons.push(enc.reconstructionI420());
  });
  return { enc, frames, sources, recons, stream: toAnnexB(enc, frames) };
}

function scene(width: number, height: number, count: number, o?: Parameters<typeof sceneFrame>[3]): Uint8Array[] {
  return Array.from({ length: count }, (_, t) => sceneFrame(width, height, t, o));
}

/** Decodes the clip and checks frame count, size, error-free decoding and bit-exact reconstruction. */
function expectDecodesExactly(clip: Clip): Uint8Array {
  const { width, height } = clip.enc;
  const decoded = decodeH264(clip.stream, width, height);
  expect(decoded.errors).toBe("");
  expect(decoded.frames).toBe(clip.frames.length);
  expect(decoded.yuv.byteLength).toBe(clip.frames.length * width * height * 1.5);
  clip.recons.forEach((recon, i) => {
    const same = Buffer.compare(frameOf(decoded.yuv, width, height, i), recon) === 0;
    if (!same) throw new Error(`frame ${i} (${clip.frames[i]!.keyframe ? "IDR" : "P"}) differs from the encoder's reconstruction`);
  });
  return decoded.yuv;
}

function lumaPsnrs(clip: Clip, yuv: Uint8Array): number[] {
  const { width, height } = clip.enc;
  return clip.sources.map((src, i) => psnr(lumaOf(yuv, width, height, i), src.subarray(0, width * height)));
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("H264Encoder kernels", () => {
  test("every SIMD kernel matches its scalar reference", async () => {
    for (const seed of [1, 2, 3]) expect(await h264KernelSelfTest(seed)).toBe(0);
  });

  test("RGB is converted with BT.601 limited range (as the VUI declares)", async () => {
    // Float reference of the documented matrix: the encoder's fixed point must round it correctly.
    const bt601 = (r: number, g: number, b: number) => [
      16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
      128 + (-37.797 * r - 74.203 * g + 112 * b) / 255,
      128 + (112 * r - 93.786 * g - 18.214 * b) / 255,
    ];
    const colours = [[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 64, 200], [17, 230, 99]];
    const w = 34, h = 18; // not a multiple of 16: exercises the vector body and the scalar tail
    const enc = await H264Encoder.create({ width: w, height: h });
    for (const [r, g, b] of colours) {
      const frame = new Uint8Array(w * h * 3);
      for (let i = 0; i < w * h; i++) frame.set([r!, g!, b!], i * 3);
      enc.encode(frame);
      const yuv = enc.sourceI420();
      const [y, u, v] = bt601(r!, g!, b!);
      for (const sample of yuv.subarray(0, w * h)) expect(Math.abs(sample - y!)).toBeLessThanOrEqual(0.5 + 1e-9);
      for (const sample of yuv.subarray(w * h, w * h * 1.25)) expect(Math.abs(sample - u!)).toBeLessThanOrEqual(0.5 + 1e-9);
      for (const sample of yuv.subarray(w * h * 1.25)) expect(Math.abs(sample - v!)).toBeLessThanOrEqual(0.5 + 1e-9);
    }
  });
});

describe("H264Encoder parameter sets", () => {
  test("constrained baseline SPS with the picture size, cropping and a level fitting size x rate", async () => {
    const cases = [
      { width: 832, height: 480, fps: 24, level: 30 },
      { width: 1280, height: 720, fps: 30, level: 31 },
      { width: 176, height: 144, fps: 15, level: 10 },
      { width: 176, height: 144, fps: 30, level: 11 },
      { width: 130, height: 66, fps: 24, level: 10 },
      { width: 1920, height: 1080, fps: 30, level: 40 },
    ];
    for (const c of cases) {
      const enc = await H264Encoder.create(c);
      const sps = parseSps(enc.sps);
      expect({ profile: sps.profileIdc, flags: sps.constraintFlags, level: sps.levelIdc }).toEqual({ profile: 66, flags: 0xc0, level: c.level });
      expect({ width: sps.width, height: sps.height }).toEqual({ width: c.width, height: c.height });
      expect(enc.sps[0]).toBe(0x67);
      expect(enc.pps[0]).toBe(0x68);
      expect(enc.width).toBe(c.width);
      expect(enc.height).toBe(c.height);
      enc.close();
    }
  });

  test("ffprobe reads profile, level and cropped size", async () => {
    const clip = await encodeClip({ width: 200, height: 120, fps: 25 }, scene(200, 120, 2));
    const probed = probeFrames(clip.stream);
    expect(probed.profile).toBe("Constrained Baseline");
    expect(probed.level).toBe(parseSps(clip.enc.sps).levelIdc);
    expect([probed.width, probed.height]).toEqual([200, 120]);
  });
});

describe("H264Encoder output decodes with ffmpeg", () => {
  // Minimum mean Y-PSNR (dB) against the encoder's own I420 input, per QP, on the panning scene.
  const QUALITY = [
    { qp: 20, minPsnr: 43 },
    { qp: 28, minPsnr: 39 },
    { qp: 36, minPsnr: 35 },
  ];
  for (const { qp, minPsnr } of QUALITY) {
    test(`QP ${qp}: I + P frames decode to the reconstruction, Y-PSNR >= ${minPsnr} dB`, async () => {
      const clip = await encodeClip({ width: 176, height: 100, qp }, scene(176, 100, 12));
      expect(clip.frames.map((f) => f.keyframe)).toEqual([true, ...Array(11).fill(false)]);
      const yuv = expectDecodesExactly(clip);
      expect(mean(lumaPsnrs(clip, yuv))).toBeGreaterThanOrEqual(minPsnr);
    });
  }

  test("832x480 at QP 28: Y-PSNR >= 39 dB, P frames far smaller than the IDR", async () => {
    const clip = await encodeClip({ width: 832, height: 480, qp: 28 }, scene(832, 480, 4));
    const yuv = expectDecodesExactly(clip);
    expect(Math.min(...lumaPsnrs(clip, yuv))).toBeGreaterThanOrEqual(39);
    const sizes = clip.frames.map((f) => f.nals[0]!.byteLength);
    for (const p of sizes.slice(1)) expect(p).toBeLessThan(sizes[0]! / 2);
  });

  // The quality preset; h264-preset.test.ts holds the fast preset to its own (looser) bound.
  test("a 60-frame P-GOP does not drift", async () => {
    const clip = await encodeClip({ width: 128, height: 96, qp: 28, preset: "quality" }, scene(128, 96, 60, { panX: 0.75, panY: -0.25 }));
    const yuv = expectDecodesExactly(clip); // every reference picture matches the decoder's
    const ps = lumaPsnrs(clip, yuv);
    expect(mean(ps.slice(-10))).toBeGreaterThan(mean(ps.slice(1, 11)) - 1);
    expect(Math.min(...ps)).toBeGreaterThanOrEqual(37);
  });

  test("static content costs almost nothing after the first frame (P_Skip)", async () => {
    const frame = sceneFrame(160, 96, 0, { noise: 0 });
    const clip = await encodeClip({ width: 160, height: 96 }, Array(5).fill(frame));
    expectDecodesExactly(clip);
    for (const f of clip.frames.slice(1)) expect(f.nals[0]!.byteLength).toBeLessThan(16);
  });

  test("rgba input encodes exactly like rgb24", async () => {
    const rgb = scene(64, 48, 3);
    const rgba = Array.from({ length: 3 }, (_, t) => sceneFrame(64, 48, t, {}, true));
    const a = await encodeClip({ width: 64, height: 48 }, rgb);
    const b = await encodeClip({ width: 64, height: 48, input: "rgba" }, rgba);
    expect(Buffer.compare(a.stream, b.stream)).toBe(0);
  });

  test("encoders run side by side without sharing state", async () => {
    const inputs = scene(96, 64, 4);
    const alone = await encodeClip({ width: 96, height: 64, qp: 24 }, inputs);
    const [x, y] = await Promise.all([H264Encoder.create({ width: 96, height: 64, qp: 24 }), H264Encoder.create({ width: 96, height: 64, qp: 24 })]);
    const fx: EncodedFrame[] = [], fy: EncodedFrame[] = [];
    for (const input of inputs) {
      fx.push(x.encode(input));
      fy.push(y.encode(input));
    }
    expect(Buffer.compare(toAnnexB(x, fx), alone.stream)).toBe(0);
    expect(Buffer.compare(toAnnexB(y, fy), alone.stream)).toBe(0);
  });
});

describe("H264Encoder keyframes", () => {
  test("forceIdr makes an IDR that ffprobe reports as a key frame", async () => {
    const clip = await encodeClip({ width: 96, height: 64 }, scene(96, 64, 8), [3, 4]);
    expect(clip.frames.map((f) => f.keyframe)).toEqual([true, false, false, true, true, false, false, false]);
    for (const f of clip.frames) expect(f.nals[0]![0]! & 0x1f).toBe(f.keyframe ? 5 : 1);
    const probed = probeFrames(clip.stream);
    expect(probed.frames.map((f) => f.keyframe)).toEqual(clip.frames.map((f) => f.keyframe));
    expect(probed.frames.map((f) => f.pictType)).toEqual(["I", "P", "P", "I", "I", "P", "P", "P"]);
    expectDecodesExactly(clip);
  });

  test("keyframeInterval puts an IDR every N frames, counted from the last IDR", async () => {
    const clip = await encodeClip({ width: 64, height: 48, keyframeInterval: 3 }, scene(64, 48, 10), [4]);
    expect(clip.frames.map((f) => (f.keyframe ? "I" : "P")).join("")).toBe("IPPIIPPIPP");
    expect(probeFrames(clip.stream).frames.map((f) => f.keyframe)).toEqual(clip.frames.map((f) => f.keyframe));
    expectDecodesExactly(clip);
  });

  test("a stream cut at any IDR decodes on its own", async () => {
    const clip = await encodeClip({ width: 64, height: 48, keyframeInterval: 4 }, scene(64, 48, 8));
    const tail = { ...clip, frames: clip.frames.slice(4), recons: clip.recons.slice(4), sources: clip.sources.slice(4) };
    expectDecodesExactly({ ...tail, stream: toAnnexB(clip.enc, tail.frames) });
  });

  test("toAnnexB puts SPS and PPS before keyframes only", async () => {
    const clip = await encodeClip({ width: 32, height: 32, keyframeInterval: 2 }, scene(32, 32, 3));
    const types: number[] = [];
    const s = clip.stream;
    for (let i = 0; i + 4 < s.length; i++) if (s[i] === 0 && s[i + 1] === 0 && s[i + 2] === 0 && s[i + 3] === 1) types.push(s[i + 4]! & 0x1f);
    expect(types).toEqual([7, 8, 5, 1, 7, 8, 5]);
  });
});

describe("H264Encoder robustness", () => {
  test("awkward sizes, every QP range and extreme content always decode exactly", async () => {
    const sizes = [
      [16, 16],
      [18, 34],
      [130, 66],
      [34, 18],
      [48, 112],
    ] as const;
    const qps = [0, 12, 26, 40, 51];
    let n = 0;
    for (const [w, h] of sizes) {
      const qp = qps[n++ % qps.length]!;
      const inputs = [
        sceneFrame(w, h, 0),
        noiseFrame(w, h, 1),
        flatFrame(w, h, 0),
        flatFrame(w, h, 255),
        sceneFrame(w, h, 3, { panX: 7, panY: -5 }),
        noiseFrame(w, h, 2),
      ];
      for (const q of [qp, 51 - qp]) expectDecodesExactly(await encodeClip({ width: w, height: h, qp: q }, inputs));
    }
  });

  test("QP 0 and QP 51 on noise stay decodable (largest and smallest levels)", async () => {
    for (const qp of [0, 51]) {
      const clip = await encodeClip({ width: 64, height: 64, qp }, [noiseFrame(64, 64, 5), noiseFrame(64, 64, 6), flatFrame(64, 64, 128)]);
      expectDecodesExactly(clip);
    }
  });
});

describe("H264Encoder validation", () => {
  test("odd or too small sizes throw an error naming the field", async () => {
    await expect(H264Encoder.create({ width: 33, height: 32 })).rejects.toThrow(/width/);
    await expect(H264Encoder.create({ width: 32, height: 31 })).rejects.toThrow(/height/);
    await expect(H264Encoder.create({ width: 8, height: 32 })).rejects.toThrow(/width/);
    await expect(H264Encoder.create({ width: 32, height: 32.5 })).rejects.toThrow(/height/);
    await expect(H264Encoder.create({ width: 16384, height: 16384 })).rejects.toThrow(/largest H.264 level/);
  });

  test("invalid qp, keyframeInterval, fps and input throw", async () => {
    await expect(H264Encoder.create({ width: 32, height: 32, qp: 52 })).rejects.toThrow(/qp/);
    await expect(H264Encoder.create({ width: 32, height: 32, qp: -1 })).rejects.toThrow(/qp/);
    await expect(H264Encoder.create({ width: 32, height: 32, keyframeInterval: -1 })).rejects.toThrow(/keyframeInterval/);
    await expect(H264Encoder.create({ width: 32, height: 32, fps: 0 })).rejects.toThrow(/fps/);
    await expect(H264Encoder.create({ width: 32, height: 32, input: "bgr" as "rgb24" })).rejects.toThrow(/input/);
    await expect(H264Encoder.create({ width: 32, height: 32, preset: "slow" as "fast" })).rejects.toThrow(/preset/);
  });

  test("a frame of the wrong size and use after close throw", async () => {
    const enc = await H264Encoder.create({ width: 32, height: 32 });
    expect(() => enc.encode(new Uint8Array(32 * 32 * 4))).toThrow(/3072/);
    enc.encode(new Uint8Array(32 * 32 * 3));
    enc.close();
    expect(() => enc.encode(new Uint8Array(32 * 32 * 3))).toThrow(/closed/);
  });
});
