// The Wan2.2 VAE against goldens/vae22 (vae2_2.py, chunked with its feature cache): the patchify
// channel order, the chunked decode (one latent per call, the DupUp3D shortcut's first chunk) whole
// and in two streaming pieces, the chunked encode (frames 1, 4, 4, AvgDown3D shortcuts) to the
// normalised latent, and a single frame (TI2V's image latent) as latent frame 0 — on every backend.
// The checkpoint is recognised as Wan2.2 from its tensors, and a VAE that is neither is refused.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inferVaeConfig } from "../../src/models/checkpoint.ts";
import { parseVaeConfig, vaeStrides } from "../../src/models/configs.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { writeSafetensors } from "../../src/models/safetensors-write.ts";
import { WanVaeDecoder, WanVaeEncoder } from "../../src/models/wan-vae.ts";
import { patchify, unpatchify } from "../../src/models/wan-vae22-blocks.ts";
import { isWan22Vae } from "../../src/models/wan-vae22-layout.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const args = (await goldenJson("vae22", "config.json")).wan_WanVAE__args;
const norm = await goldenJson("vae22", "vae22_latent_norm.json");
const io = await loadGolden("vae22", "io.safetensors");
const table = await openTensorTable(goldenPath("vae22", "weights.safetensors"));
// the golden's own arguments (dim 4, dec_dim 6, z_dim 48): no latents given, so the real 48 constants apply
const cfg = parseVaeConfig(args, "vae22/config.json");

describe("Wan2.2 VAE config", () => {
  test("dec_dim marks Wan2.2: 48 channels with the real statistics, 16× spatial, 4× temporal", () => {
    expect(cfg.wan22).toEqual({ decoderDim: 6 });
    expect(cfg.zDim).toBe(48);
    expect(cfg.latentsMean).toEqual(norm.mean);
    expect(cfg.latentsStd).toEqual(norm.std);
    expect(vaeStrides(cfg)).toEqual({ temporal: 4, spatial: 16 });
    expect(isWan22Vae(table.tensors.keys())).toBe(true);
  });

  test("diffusers' Wan2.2 keys are read, and Wan2.1 / Wan2.2 keys mixed are refused by name", () => {
    const diffusers = { base_dim: 160, decoder_base_dim: 256, z_dim: 48, is_residual: true, patch_size: 2, in_channels: 12, out_channels: 12 };
    expect(parseVaeConfig(diffusers, "vae/config.json")).toMatchObject({ dim: 160, zDim: 48, wan22: { decoderDim: 256 } });
    expect(() => parseVaeConfig({ ...diffusers, patch_size: 1 }, "vae/config.json")).toThrow(/'patch_size' = 1: not a Wan2.2 VAE/);
    expect(() => parseVaeConfig({ base_dim: 96, decoder_base_dim: 128 }, "vae/config.json")).toThrow(/'decoder_base_dim' = 128: only the Wan2.1 VAE \(or Wan2.2's/);
    expect(() => parseVaeConfig({ base_dim: 96, in_channels: 12 }, "vae/config.json")).toThrow(/'in_channels' = 12/);
  });
});

describe("a VAE checkpoint without a config", () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-vae22-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("Wan2.2 is recognised from its tensors: nested levels, 12 patchified channels, widths from shapes", () => {
    const c = inferVaeConfig(table);
    expect(c).toMatchObject({ dim: 4, zDim: 48, wan22: { decoderDim: 6 } });
    expect(c.latentsMean).toEqual(norm.mean);
  });

  test("Wan2.1's stays Wan2.1; a conv1 over other channels, or no VAE at all, is refused saying why", async () => {
    const wan21 = await openTensorTable(goldenPath("vae", "weights.safetensors"));
    expect(inferVaeConfig(wan21).wan22).toBeUndefined();
    expect(inferVaeConfig(wan21).zDim).toBe(16);
    const tensors = [...(await loadGolden("vae", "weights.safetensors"))].map(([name, t]) => ({ name, shape: t.shape, data: t.data }));
    const conv1 = tensors.find((t) => t.name === "encoder.conv1.weight")!;
    conv1.shape = [2, 12, 3, 3, 3]; // same element count as [8, 3, 3, 3, 3]
    const path = join(dir, "neither.safetensors");
    await writeSafetensors(path, tensors);
    const neither = await openTensorTable(path);
    expect(() => inferVaeConfig(neither)).toThrow(/neither a Wan2.1 VAE .* nor a Wan2.2 VAE .*: encoder.conv1 takes 12 channels and the stages are flat/);
    const clip = await openTensorTable(goldenPath("i2v_clip", "weights.safetensors"));
    expect(() => inferVaeConfig(clip)).toThrow(/not a Wan VAE/);
  });
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`Wan2.2 VAE on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("patchify: channel c·4 + r·2 + q holds pixel (2i + q, 2j + r); unpatchify inverts it exactly", async () => {
      const be = tb.backend!;
      const v = get(io, "enc.video"), vt = be.upload(v.data, v.shape);
      const p = patchify(be, vt);
      expect(p.shape).toEqual([12, 9, 16, 24]);
      expect(closeTo(await be.download(p), get(io, "enc.patchified").data, 0, 0).ok).toBe(true);
      const back = unpatchify(be, p);
      expect(closeTo(await be.download(back), v.data, 0, 0).ok).toBe(true);
      be.free(vt, p, back);
    });

    test("decoder and encoder together take every tensor of the checkpoint", async () => {
      const be = tb.backend!;
      const reader = new WeightReader(be, table, { component: "vae" });
      const dec = await WanVaeDecoder.load(reader, cfg);
      const enc = await WanVaeEncoder.load(reader, cfg);
      reader.finish();
      dec.free();
      enc.free();
    });

    test("chunked decode: conv2 output, raw video, and the same clip in two streaming pieces", async () => {
      const be = tb.backend!;
      const dec = await WanVaeDecoder.load(new WeightReader(be, table, { component: "vae" }), cfg);
      const { atol, rtol } = tolerance(tb.label);
      const z = get(io, "dec.z"), zt = be.upload(z.data, z.shape);
      let conv2 = Infinity;
      const video = await dec.decode(zt, async (name, t) => {
        const r = closeTo(await be.download(t), get(io, `dec.${name}`).data, atol, rtol);
        conv2 = r.maxAbs;
        expect(r.ok).toBe(true);
      });
      expect(video.shape).toEqual([3, 9, 32, 48]);
      const want = get(io, "dec.video_raw").data;
      const whole = closeTo(await be.download(video), want, atol, rtol);
      expect(whole.ok).toBe(true);
      // streaming: latents 0–1 (5 frames), then latent 2 (4 frames) with the carried caches
      dec.reset();
      const [C, , h, w] = z.shape as number[];
      const first = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 0, 2), [C!, 2, h!, w!]);
      const second = be.upload(sliceFrames(z.data, C!, 3, h! * w!, 2, 3), [C!, 1, h!, w!]);
      const v1 = await dec.decode(first), v2 = await dec.decode(second);
      expect([v1.shape[1], v2.shape[1]]).toEqual([5, 4]);
      const a = await be.download(v1), c2 = await be.download(v2), HW = 32 * 48;
      const joined = new Float32Array(want.length);
      for (let c = 0; c < 3; c++) {
        joined.set(a.subarray(c * 5 * HW, (c + 1) * 5 * HW), c * 9 * HW);
        joined.set(c2.subarray(c * 4 * HW, (c + 1) * 4 * HW), (c * 9 + 5) * HW);
      }
      const pieces = closeTo(joined, want, atol, rtol);
      expect(pieces.ok).toBe(true);
      console.log(`VAE22 decode on ${tb.label}: max abs err conv2_out ${conv2.toExponential(2)}, video_raw ${whole.maxAbs.toExponential(2)}, streamed ${pieces.maxAbs.toExponential(2)}`);
      be.free(zt, video, first, second, v1, v2);
      dec.free();
    });

    test("chunked encode → normalised mean; one frame alone → latent frame 0", async () => {
      const be = tb.backend!;
      const enc = await WanVaeEncoder.load(new WeightReader(be, table, { component: "vae" }), cfg);
      const { atol, rtol } = tolerance(tb.label);
      const v = get(io, "enc.video"), vt = be.upload(v.data, v.shape);
      const mu = await enc.encode(vt);
      expect(mu.shape).toEqual([48, 3, 2, 3]);
      const want = get(io, "enc.mu_normalized").data;
      const r = closeTo(await be.download(mu), want, atol, rtol);
      expect(r.ok).toBe(true);
      const frame0 = be.upload(sliceFrames(v.data, 3, 9, 32 * 48, 0, 1), [3, 1, 32, 48]);
      const z0 = await enc.encode(frame0);
      expect(z0.shape).toEqual([48, 1, 2, 3]);
      const single = closeTo(await be.download(z0), sliceFrames(want, 48, 3, 6, 0, 1), atol, rtol);
      expect(single.ok).toBe(true);
      console.log(`VAE22 encode on ${tb.label}: max abs err mu_normalized ${r.maxAbs.toExponential(2)}, single frame ${single.maxAbs.toExponential(2)}`);
      be.free(vt, mu, frame0, z0);
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
