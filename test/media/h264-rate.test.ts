// Rate control of kino's H.264 encoder: an average bitrate target held within 10 % over a few
// seconds of synthetic video, and a constant-quality mode whose Y-PSNR stays about the same on
// content of very different complexity (where a constant QP does not).
import { describe, expect, test } from "bun:test";
import { H264Encoder, toAnnexB, type EncodedFrame, type H264EncoderOptions } from "../../src/media/h264/encoder.ts";
import { decodeH264, frameOf, psnr, sceneFrame, type SceneOptions } from "./helpers/h264.ts";

const W = 320, H = 192, FPS = 24;
const SECONDS = 3;

/** Smooth, slowly panning content and busy content (fine moving texture, strong grain). */
const CONTENT: Record<string, SceneOptions> = {
  smooth: { panX: 0.5, panY: 0.25, noise: 1 },
  busy: { panX: 3.5, panY: -1.5, noise: 10, detail: 40 },
};
const clips = Object.fromEntries(
  Object.entries(CONTENT).map(([name, o]) => [name, Array.from({ length: SECONDS * FPS }, (_, t) => sceneFrame(W, H, t, o))]),
);

interface Run {
  frames: EncodedFrame[];
  kbps: number;
  /** Mean Y-PSNR of the reconstruction against the encoder's own I420 input. */
  psnr: number;
}

async function run(opts: Partial<H264EncoderOptions>, inputs: Uint8Array[]): Promise<Run> {
  const enc = await H264Encoder.create({ width: W, height: H, fps: FPS, ...opts });
  const frames: EncodedFrame[] = [], psnrs: number[] = [];
  for (const input of inputs) {
    frames.push(enc.encode(input));
    psnrs.push(psnr(enc.reconstructionI420().subarray(0, W * H), enc.sourceI420().subarray(0, W * H)));
  }
  enc.close();
  const bytes = frames.reduce((n, f) => n + f.nals[0]!.byteLength, 0);
  return { frames, kbps: (bytes * 8 * FPS) / inputs.length / 1000, psnr: psnrs.reduce((a, b) => a + b, 0) / psnrs.length };
}

describe("H264Encoder bitrate mode", () => {
  const cases = [
    { content: "smooth", kbps: 150, keyframeInterval: 0 },
    { content: "smooth", kbps: 600, keyframeInterval: 8 },
    { content: "busy", kbps: 800, keyframeInterval: 4 },
    { content: "busy", kbps: 2500, keyframeInterval: 24 },
  ];
  for (const c of cases) {
    test(`${c.content} content, ${c.kbps} kbit/s, IDR every ${c.keyframeInterval || "-"}: within 10 % over ${SECONDS} s`, async () => {
      const r = await run({ rate: { mode: "bitrate", kbps: c.kbps }, keyframeInterval: c.keyframeInterval }, clips[c.content]!);
      expect(Math.abs(r.kbps / c.kbps - 1)).toBeLessThan(0.1);
      expect(new Set(r.frames.map((f) => f.qp)).size).toBeGreaterThan(1); // it does adapt
    });
  }

  test("the stream decodes to the reconstruction while the QP changes", async () => {
    const enc = await H264Encoder.create({ width: W, height: H, rate: { mode: "bitrate", kbps: 400 }, keyframeInterval: 6 });
    const inputs = clips.busy!.slice(0, 14), frames: EncodedFrame[] = [];
    let last: Uint8Array = new Uint8Array();
    for (const input of inputs) {
      frames.push(enc.encode(input));
      last = enc.reconstructionI420();
    }
    const decoded = decodeH264(toAnnexB(enc, frames), W, H);
    expect(decoded.errors).toBe("");
    expect(Buffer.compare(frameOf(decoded.yuv, W, H, inputs.length - 1), last)).toBe(0);
    expect(new Set(frames.map((f) => f.qp)).size).toBeGreaterThan(1);
  });

  test("a small buffer keeps single pictures near the budget", async () => {
    const r = await run({ rate: { mode: "bitrate", kbps: 600, bufferKbit: 100 }, keyframeInterval: 0 }, clips.busy!);
    const perFrame = (600 * 1000) / FPS;
    const sizes = r.frames.slice(1).map((f) => f.nals[0]!.byteLength * 8);
    expect(Math.max(...sizes)).toBeLessThan(perFrame + 100_000 / 2);
  });
});

describe("H264Encoder constant-quality mode", () => {
  test("crf keeps Y-PSNR within 1.5 dB across smooth and busy content; constant QP does not", async () => {
    for (const crf of [24, 32]) {
      const [smooth, busy] = [await run({ rate: { mode: "crf", crf } }, clips.smooth!), await run({ rate: { mode: "crf", crf } }, clips.busy!)];
      expect(Math.abs(smooth.psnr - busy.psnr)).toBeLessThan(1.5);
      expect(busy.kbps).toBeGreaterThan(smooth.kbps * 3); // busy content gets the bits it needs
    }
    const [smooth, busy] = [await run({ qp: 28 }, clips.smooth!), await run({ qp: 28 }, clips.busy!)];
    expect(Math.abs(smooth.psnr - busy.psnr)).toBeGreaterThan(3);
  });

  test("lower crf means higher quality", async () => {
    const psnrs = [];
    for (const crf of [18, 26, 34]) psnrs.push((await run({ rate: { mode: "crf", crf } }, clips.smooth!.slice(0, 24))).psnr);
    expect(psnrs[0]!).toBeGreaterThan(psnrs[1]! + 3);
    expect(psnrs[1]!).toBeGreaterThan(psnrs[2]! + 3);
  });
});

describe("H264Encoder rate options", () => {
  test("invalid rate settings throw", async () => {
    await expect(H264Encoder.create({ width: 32, height: 32, qp: 20, rate: { mode: "qp", qp: 20 } })).rejects.toThrow(/qp or rate/);
    await expect(H264Encoder.create({ width: 32, height: 32, rate: { mode: "bitrate", kbps: 0 } })).rejects.toThrow(/kbps/);
    await expect(H264Encoder.create({ width: 32, height: 32, rate: { mode: "crf", crf: 60 } })).rejects.toThrow(/crf/);
    await expect(H264Encoder.create({ width: 32, height: 32, rate: { mode: "vbr" } as never })).rejects.toThrow(/rate.mode/);
  });

  test("rate: { mode: 'qp' } is the same as qp", async () => {
    const inputs = clips.smooth!.slice(0, 4);
    const a = await run({ qp: 31 }, inputs), b = await run({ rate: { mode: "qp", qp: 31 } }, inputs);
    expect(Buffer.compare(toAnnexB({ sps: new Uint8Array(), pps: new Uint8Array() }, a.frames), toAnnexB({ sps: new Uint8Array(), pps: new Uint8Array() }, b.frames))).toBe(0);
    expect(a.frames.map((f) => f.qp)).toEqual([28, 31, 31, 31]);
  });
});
