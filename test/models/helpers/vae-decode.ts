// The decode half of the Wan-VAE golden tests (Wan2.1's goldens/vae and Wan2.2's goldens/vae22 record
// the same things): the chunked decode of the golden latent checked at every tap and whole, then the
// same clip decoded again as a stream of two pieces (latents 0–1: 5 frames, then latent 2: 4 frames
// with the carried caches), joined and checked against the same video.
import { expect } from "bun:test";
import type { WanVaeDecoder } from "../../../src/models/wan-vae.ts";
import type { Backend } from "../../../src/runtime/backend.ts";
import { type HostTensor, closeTo, get } from "./goldens.ts";

/** Frames [t0, t1) of a [C, T, HW] array. */
export function sliceFrames(data: Float32Array, C: number, T: number, hw: number, t0: number, t1: number): Float32Array {
  const out = new Float32Array(C * (t1 - t0) * hw);
  for (let c = 0; c < C; c++) out.set(data.subarray((c * T + t0) * hw, (c * T + t1) * hw), c * (t1 - t0) * hw);
  return out;
}

/** Max abs errors of the decode at conv2's output, of the whole video and of the streamed one. */
export interface DecodeErrors {
  conv2: number;
  whole: number;
  streamed: number;
}

/** Decodes the golden's dec.z (3 latent frames) whole and streamed; `size` is the video's [H, W]. */
export async function checkGoldenDecode(be: Backend, dec: WanVaeDecoder, io: Map<string, HostTensor>, size: [number, number], tol: { atol: number; rtol: number }): Promise<DecodeErrors> {
  const { atol, rtol } = tol;
  const z = get(io, "dec.z"), zt = be.upload(z.data, z.shape);
  let conv2 = Infinity;
  const video = await dec.decode(zt, async (name, t) => {
    const r = closeTo(await be.download(t), get(io, `dec.${name}`).data, atol, rtol);
    conv2 = r.maxAbs;
    expect(r.ok).toBe(true);
  });
  expect(video.shape).toEqual([3, 9, ...size]);
  const want = get(io, "dec.video_raw").data;
  const whole = closeTo(await be.download(video), want, atol, rtol);
  expect(whole.ok).toBe(true);

  dec.reset();
  const [C, , h, w] = z.shape as number[];
  const first = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 0, 2), [C!, 2, h!, w!]);
  const second = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 2, 3), [C!, 1, h!, w!]);
  const v1 = await dec.decode(first), v2 = await dec.decode(second);
  expect([v1.shape[1], v2.shape[1]]).toEqual([5, 4]);
  const a = await be.download(v1), c2 = await be.download(v2), HW = size[0] * size[1];
  const joined = new Float32Array(want.length);
  for (let c = 0; c < 3; c++) {
    joined.set(a.subarray(c * 5 * HW, (c + 1) * 5 * HW), c * 9 * HW);
    joined.set(c2.subarray(c * 4 * HW, (c + 1) * 4 * HW), (c * 9 + 5) * HW);
  }
  const pieces = closeTo(joined, want, atol, rtol);
  expect(pieces.ok).toBe(true);
  be.free(zt, video, first, second, v1, v2);
  return { conv2, whole: whole.maxAbs, streamed: pieces.maxAbs };
}

export function describeErrors(e: DecodeErrors): string {
  return `max abs err conv2_out ${e.conv2.toExponential(2)}, video_raw ${e.whole.toExponential(2)}, streamed ${e.streamed.toExponential(2)}`;
}
