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
import { checkGoldenDecode, describeErrors, sliceFrames } from "./helpers/vae-decode.ts";

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
      const errors = await checkGoldenDecode(be, dec, io, [32, 48], tolerance(tb.label));
      console.log(`VAE22 decode on ${tb.label}: ${describeErrors(errors)}`);
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

