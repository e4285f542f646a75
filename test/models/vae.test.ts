// The Wan-VAE against goldens/vae: chunked causal decode (one latent frame per call with the per-conv
// cache; frames [1, 4, 4]), the same clip decoded in two streaming pieces, and the chunked encoder
// (frames 1, 4, 4) with the latent normalisation — on every backend.
import { describe, expect, test } from "bun:test";
import { parseVaeConfig } from "../../src/models/configs.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { WanVaeDecoder, WanVaeEncoder } from "../../src/models/wan-vae.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const args = (await goldenJson("vae", "config.json")).wan_WanVAE__args;
const norm = await goldenJson("vae", "vae_latent_norm.json");
const cfg = parseVaeConfig({ ...args, latents_mean: norm.mean, latents_std: norm.std }, "vae/config.json");
const io = await loadGolden("vae", "io.safetensors");

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`Wan-VAE on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("decoder and encoder together take every tensor of the checkpoint", async () => {
      const be = tb.backend!;
      const reader = new WeightReader(be, await openTensorTable(goldenPath("vae", "weights.safetensors")), { component: "vae" });
      const dec = await WanVaeDecoder.load(reader, cfg);
      const enc = await WanVaeEncoder.load(reader, cfg);
      reader.finish();
      dec.free();
      enc.free();
    });

    test("chunked decode: conv2 output, raw video, and the same clip in two streaming pieces", async () => {
      const be = tb.backend!;
      const reader = new WeightReader(be, await openTensorTable(goldenPath("vae", "weights.safetensors")), { component: "vae" });
      const dec = await WanVaeDecoder.load(reader, cfg);
      const { atol, rtol } = tolerance(tb.label);
      const z = get(io, "dec.z");
      const zt = be.upload(z.data, z.shape);
      let conv2 = 0;
      const video = await dec.decode(zt, async (name, t) => {
        const r = closeTo(await be.download(t), get(io, `dec.${name}`).data, atol, rtol);
        conv2 = r.maxAbs;
        expect(r.ok).toBe(true);
      });
      expect(video.shape).toEqual([3, 9, 32, 32]);
      const want = get(io, "dec.video_raw").data;
      const whole = closeTo(await be.download(video), want, atol, rtol);
      expect(whole.ok).toBe(true);
      // streaming: latents 0–1 (5 frames), then latent 2 (4 frames) with the carried cache
      dec.reset();
      const [C, , h, w] = z.shape as number[];
      const first = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 0, 2), [C!, 2, h!, w!]);
      const second = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 2, 3), [C!, 1, h!, w!]);
      const v1 = await dec.decode(first), v2 = await dec.decode(second);
      expect(v1.shape[1]).toBe(5);
      expect(v2.shape[1]).toBe(4);
      const a = await be.download(v1), c2 = await be.download(v2), HW = 32 * 32;
      const joined = new Float32Array(want.length);
      for (let c = 0; c < 3; c++) {
        joined.set(a.subarray(c * 5 * HW, (c + 1) * 5 * HW), c * 9 * HW);
        joined.set(c2.subarray(c * 4 * HW, (c + 1) * 4 * HW), (c * 9 + 5) * HW);
      }
      const pieces = closeTo(joined, want, atol, rtol);
      expect(pieces.ok).toBe(true);
      console.log(`VAE decode on ${tb.label}: max abs err conv2_out ${conv2.toExponential(2)}, video_raw ${whole.maxAbs.toExponential(2)}, streamed ${pieces.maxAbs.toExponential(2)}`);
      be.free(zt, video, first, second, v1, v2);
      dec.free();
    });

    test("chunked encode → normalised mean", async () => {
      const be = tb.backend!;
      const reader = new WeightReader(be, await openTensorTable(goldenPath("vae", "weights.safetensors")), { component: "vae" });
      const enc = await WanVaeEncoder.load(reader, cfg);
      const v = get(io, "enc.video");
      const vt = be.upload(v.data, v.shape);
      const mu = await enc.encode(vt);
      expect(mu.shape).toEqual([16, 3, 4, 4]);
      const r = closeTo(await be.download(mu), get(io, "enc.mu_normalized").data, tolerance(tb.label).atol, tolerance(tb.label).rtol);
      console.log(`VAE encode on ${tb.label}: max abs err mu_normalized ${r.maxAbs.toExponential(2)}`);
      expect(r.ok).toBe(true);
      be.free(vt, mu);
      enc.free();
    });
  });
}

/** Frames [t0, t1) of a [C, T, HW] array. */
function sliceFrames(data: Float32Array, C: number, T: number, hw: number, t0: number, t1: number): Float32Array {
  const out = new Float32Array(C * (t1 - t0) * hw);
  for (let c = 0; c < C; c++) out.set(data.subarray((c * T + t0) * hw, (c * T + t1) * hw), c * (t1 - t0) * hw);
  return out;
}
