// The H.264 encoder's speed presets: "fast" (the default, x264-ultrafast-like: Intra 16x16 only,
// whole-sample motion, no deblocking) and "quality". Both must decode with ffmpeg to exactly the
// encoder's reconstruction; fast trades some quality per bit for speed, within the bounds below
// (measured values in comments, so a regression shows how far it moved).
import { describe, expect, test } from "bun:test";
import { H264Encoder, toAnnexB, type EncodedFrame, type H264EncoderOptions } from "../../src/media/h264/encoder.ts";
import { decodeH264, frameOf, psnr, sceneFrame } from "./helpers/h264.ts";

async function encode(opts: H264EncoderOptions, inputs: Uint8Array[]) {
  const enc = await H264Encoder.create(opts);
  const frames: EncodedFrame[] = [], psnrs: number[] = [], recons: Uint8Array[] = [];
  for (const input of inputs) {
    frames.push(enc.encode(input));
    const luma = opts.width * opts.height;
    recons.push(enc.reconstructionI420());
    psnrs.push(psnr(enc.reconstructionI420().subarray(0, luma), enc.sourceI420().subarray(0, luma)));
  }
  enc.close();
  return { frames, psnrs, recons, stream: toAnnexB(enc, frames), bytes: frames.reduce((n, f) => n + f.nals[0]!.byteLength, 0) };
}

function expectDecodesExactly(clip: { stream: Uint8Array; recons: Uint8Array[] }, width: number, height: number): void {
  const decoded = decodeH264(clip.stream, width, height);
  expect(decoded.errors).toBe("");
  expect(decoded.frames).toBe(clip.recons.length);
  clip.recons.forEach((recon, i) => expect({ frame: i, exact: Buffer.compare(frameOf(decoded.yuv, width, height, i), recon) === 0 }).toEqual({ frame: i, exact: true }));
}

/** disable_deblocking_filter_idc of a slice NAL (H.264 7.3.3 for the stream shape kino writes:
 *  one PPS with deblocking_filter_control_present_flag, log2_max_frame_num 8, one reference). */
function deblockingIdc(nal: Uint8Array): number {
  const rbsp: number[] = [];
  for (let i = 1, zeros = 0; i < nal.length; i++) {
    if (zeros >= 2 && nal[i] === 3) {
      zeros = 0;
      continue;
    }
    rbsp.push(nal[i]!);
    zeros = nal[i] === 0 ? zeros + 1 : 0;
  }
  let bit = 0;
  const u = (n: number) => {
    let v = 0;
    for (let k = 0; k < n; k++, bit++) v = (v << 1) | ((rbsp[bit >> 3]! >> (7 - (bit & 7))) & 1);
    return v;
  };
  const ue = () => {
    let zeros = 0;
    while (u(1) === 0) zeros++;
    return (1 << zeros) - 1 + u(zeros);
  };
  const idr = (nal[0]! & 0x1f) === 5;
  ue(); // first_mb_in_slice
  ue(); // slice_type
  ue(); // pic_parameter_set_id
  u(8); // frame_num
  if (idr) ue(); // idr_pic_id
  else u(2); // num_ref_idx_active_override_flag, ref_pic_list_modification_flag_l0
  u(idr ? 2 : 1); // dec_ref_pic_marking
  ue(); // slice_qp_delta (se, same length)
  return ue();
}

const scene = (w: number, h: number, n: number, o?: Parameters<typeof sceneFrame>[3]) => Array.from({ length: n }, (_, t) => sceneFrame(w, h, t, o));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("H264Encoder presets", () => {
  test("fast is the default; quality writes a different stream", async () => {
    const inputs = scene(64, 48, 3);
    const byDefault = await encode({ width: 64, height: 48 }, inputs);
    const fast = await encode({ width: 64, height: 48, preset: "fast" }, inputs);
    const quality = await encode({ width: 64, height: 48, preset: "quality" }, inputs);
    expect(Buffer.compare(byDefault.stream, fast.stream)).toBe(0);
    expect(Buffer.compare(fast.stream, quality.stream)).not.toBe(0);
  });

  test("fast slices switch the deblocking filter off, quality slices keep it on", async () => {
    const inputs = scene(96, 64, 3);
    for (const [preset, idc] of [["fast", 1], ["quality", 0]] as const) {
      const clip = await encode({ width: 96, height: 64, preset }, inputs);
      expect(clip.frames.map((f) => deblockingIdc(f.nals[0]!))).toEqual([idc, idc, idc]);
    }
  });

  // Minimum mean Y-PSNR per QP on the panning scene (measured 43.9 / 39.9 / 35.4 dB fast,
  // 44.8 / 41.9 / 37.0 dB quality).
  for (const { qp, fast, quality } of [
    { qp: 20, fast: 42.5, quality: 43 },
    { qp: 28, fast: 38.5, quality: 40.5 },
    { qp: 36, fast: 34, quality: 36 },
  ]) {
    test(`QP ${qp}: both presets decode to the reconstruction; Y-PSNR >= ${fast} dB fast, >= ${quality} dB quality`, async () => {
      const inputs = scene(176, 100, 12);
      for (const [preset, minPsnr] of [["fast", fast], ["quality", quality]] as const) {
        const clip = await encode({ width: 176, height: 100, qp, preset }, inputs);
        expectDecodesExactly(clip, 176, 100);
        expect({ preset, psnr: mean(clip.psnrs) >= minPsnr }).toEqual({ preset, psnr: true });
      }
    });
  }

  test("fast at 832x480, QP 28: Y-PSNR >= 40 dB, P frames far smaller than the IDR", async () => {
    const clip = await encode({ width: 832, height: 480, qp: 28, preset: "fast" }, scene(832, 480, 4));
    expectDecodesExactly(clip, 832, 480);
    expect(Math.min(...clip.psnrs)).toBeGreaterThanOrEqual(40); // measured 41.3
    const sizes = clip.frames.map((f) => f.nals[0]!.byteLength);
    for (const p of sizes.slice(1)) expect(p).toBeLessThan(sizes[0]! / 2);
  });

  // Without deblocking and sub-sample motion, small errors build up over a long P run more than in
  // the quality preset, and decimation (kernels/h264/decimate.c), which drops the lone +-1 levels
  // that would correct them, adds to it (measured: 38.95 -> 36.6 dB over 60 frames, lowest 36.3, in
  // 19.2 kB; quality 41.0 -> 40.4 dB; x264 -preset ultrafast at the same QP: 39.1 -> 37.3 dB,
  // lowest 37.05, in 18.9 kB).
  test("fast: a 60-frame P-GOP stays exact and loses under 2.5 dB", async () => {
    const clip = await encode({ width: 128, height: 96, qp: 28, preset: "fast" }, scene(128, 96, 60, { panX: 0.75, panY: -0.25 }));
    expectDecodesExactly(clip, 128, 96);
    expect(mean(clip.psnrs.slice(-10))).toBeGreaterThan(mean(clip.psnrs.slice(1, 11)) - 2.5);
    expect(Math.min(...clip.psnrs)).toBeGreaterThanOrEqual(36);
  });
});
