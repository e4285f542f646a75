// The Wan-VAE in diffusers AutoencoderKLWan names: the goldens' Wan-named weights renamed with our map
// (every key maps, none collide, shapes kept) give exactly the key set of diffusers' module tree —
// written out below as data, read from autoencoder_kl_wan.py — and the goldens' decode/encode run
// from the renamed file with the same outputs. The released vae/config.json keys are read.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseVaeConfig } from "../../src/models/configs.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { type TensorToWrite, writeSafetensors } from "../../src/models/safetensors-write.ts";
import { isDiffusersVae, vaeKeyMap, vaeParameters } from "../../src/models/wan-vae-layout.ts";
import { WanVaeDecoder, WanVaeEncoder } from "../../src/models/wan-vae.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const args = (await goldenJson("vae", "config.json")).wan_WanVAE__args;
const norm = await goldenJson("vae", "vae_latent_norm.json");
const cfg = parseVaeConfig({ ...args, latents_mean: norm.mean, latents_std: norm.std }, "vae/config.json");
const wanWeights = await loadGolden("vae", "weights.safetensors");

/**
 * diffusers' AutoencoderKLWan module tree for the goldens' config (base_dim 8, z_dim 16, dim_mult
 * [1, 2, 4, 4], 2 res blocks, temperal_downsample [F, T, T]), one row per module:
 * - conv: WanCausalConv3d / Conv2d → weight [cout, cin, ...kernel], bias [cout]
 * - res (cin, cout): WanResidualBlock → norm1.gamma [cin,1,1,1], conv1 3³, norm2.gamma [cout,1,1,1],
 *   conv2 3³, conv_shortcut 1³ only when cin ≠ cout
 * - attn (c): WanAttentionBlock → norm.gamma [c,1,1], to_qkv [3c,c,1,1], proj [c,c,1,1]
 * - down2d / down3d (c): WanResample → resample.1 Conv2d c→c 3×3; 3d adds time_conv c→c (3,1,1)
 * - up2d / up3d (c): WanResample → resample.1 Conv2d c→c/2 3×3; 3d adds time_conv c→2c (3,1,1)
 * - norm (c): WanRMS_norm(images=False) → gamma [c,1,1,1]
 * The encoder's down_blocks are one flat list (WanEncoder3d appends resnets and resamples alike);
 * the decoder groups each level as WanUpBlock(resnets × (num_res_blocks + 1), upsamplers[0]), its
 * levels after the first starting from in_dim // 2.
 */
type Row = [path: string, kind: "conv" | "res" | "attn" | "down2d" | "down3d" | "up2d" | "up3d" | "norm", ...sizes: number[]];
const DIFFUSERS_MODULES: Row[] = [
  ["encoder.conv_in", "conv", 8, 3, 3, 3, 3],
  ["encoder.down_blocks.0", "res", 8, 8],
  ["encoder.down_blocks.1", "res", 8, 8],
  ["encoder.down_blocks.2", "down2d", 8],
  ["encoder.down_blocks.3", "res", 8, 16],
  ["encoder.down_blocks.4", "res", 16, 16],
  ["encoder.down_blocks.5", "down3d", 16],
  ["encoder.down_blocks.6", "res", 16, 32],
  ["encoder.down_blocks.7", "res", 32, 32],
  ["encoder.down_blocks.8", "down3d", 32],
  ["encoder.down_blocks.9", "res", 32, 32],
  ["encoder.down_blocks.10", "res", 32, 32],
  ["encoder.mid_block.resnets.0", "res", 32, 32],
  ["encoder.mid_block.attentions.0", "attn", 32],
  ["encoder.mid_block.resnets.1", "res", 32, 32],
  ["encoder.norm_out", "norm", 32],
  ["encoder.conv_out", "conv", 32, 32, 3, 3, 3],
  ["quant_conv", "conv", 32, 32, 1, 1, 1],
  ["post_quant_conv", "conv", 16, 16, 1, 1, 1],
  ["decoder.conv_in", "conv", 32, 16, 3, 3, 3],
  ["decoder.mid_block.resnets.0", "res", 32, 32],
  ["decoder.mid_block.attentions.0", "attn", 32],
  ["decoder.mid_block.resnets.1", "res", 32, 32],
  ["decoder.up_blocks.0.resnets.0", "res", 32, 32],
  ["decoder.up_blocks.0.resnets.1", "res", 32, 32],
  ["decoder.up_blocks.0.resnets.2", "res", 32, 32],
  ["decoder.up_blocks.0.upsamplers.0", "up3d", 32],
  ["decoder.up_blocks.1.resnets.0", "res", 16, 32],
  ["decoder.up_blocks.1.resnets.1", "res", 32, 32],
  ["decoder.up_blocks.1.resnets.2", "res", 32, 32],
  ["decoder.up_blocks.1.upsamplers.0", "up3d", 32],
  ["decoder.up_blocks.2.resnets.0", "res", 16, 16],
  ["decoder.up_blocks.2.resnets.1", "res", 16, 16],
  ["decoder.up_blocks.2.resnets.2", "res", 16, 16],
  ["decoder.up_blocks.2.upsamplers.0", "up2d", 16],
  ["decoder.up_blocks.3.resnets.0", "res", 8, 8],
  ["decoder.up_blocks.3.resnets.1", "res", 8, 8],
  ["decoder.up_blocks.3.resnets.2", "res", 8, 8],
  ["decoder.norm_out", "norm", 8],
  ["decoder.conv_out", "conv", 3, 8, 3, 3, 3],
];

/** "name [shape]" for every parameter of the rows. */
function expand(rows: Row[]): string[] {
  const out: string[] = [];
  const p = (name: string, shape: number[]) => out.push(`${name} [${shape.join(",")}]`);
  const conv = (m: string, cout: number, cin: number, k: number[]) => (p(`${m}.weight`, [cout, cin, ...k]), p(`${m}.bias`, [cout]));
  for (const [m, kind, a = 0, b = 0, ...k] of rows) {
    if (kind === "conv") conv(m, a, b, k);
    else if (kind === "norm") p(`${m}.gamma`, [a, 1, 1, 1]);
    else if (kind === "attn") (p(`${m}.norm.gamma`, [a, 1, 1]), conv(`${m}.to_qkv`, 3 * a, a, [1, 1]), conv(`${m}.proj`, a, a, [1, 1]));
    else if (kind === "res") {
      p(`${m}.norm1.gamma`, [a, 1, 1, 1]);
      conv(`${m}.conv1`, b, a, [3, 3, 3]);
      p(`${m}.norm2.gamma`, [b, 1, 1, 1]);
      conv(`${m}.conv2`, b, b, [3, 3, 3]);
      if (a !== b) conv(`${m}.conv_shortcut`, b, a, [1, 1, 1]);
    } else {
      const up = kind.startsWith("up");
      conv(`${m}.resample.1`, up ? a / 2 : a, a, [3, 3]);
      if (kind === "up3d") conv(`${m}.time_conv`, 2 * a, a, [3, 1, 1]);
      if (kind === "down3d") conv(`${m}.time_conv`, a, a, [3, 1, 1]);
    }
  }
  return out;
}

const map = vaeKeyMap(cfg);
const renamed: TensorToWrite[] = [...wanWeights].map(([name, t]) => ({ name: map.toDiffusers(name), shape: t.shape, data: t.data }));

describe("Wan ↔ diffusers VAE key map", () => {
  test("every golden key maps, none collide, shapes unchanged, and the map inverts", () => {
    expect(wanWeights.size).toBe(194);
    const names = renamed.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const [wan, t] of wanWeights) {
      const d = map.toDiffusers(wan);
      expect(d).not.toBe(wan);
      expect(map.toWan(d)).toBe(wan);
      expect(renamed.find((r) => r.name === d)!.shape).toEqual(t.shape);
    }
    expect(isDiffusersVae(names)).toBe(true);
    expect(isDiffusersVae(wanWeights.keys())).toBe(false);
  });

  test("the renamed key set is diffusers' AutoencoderKLWan module tree, shapes included", () => {
    const got = renamed.map((t) => `${t.name} [${t.shape.join(",")}]`).sort();
    expect(got).toEqual(expand(DIFFUSERS_MODULES).sort());
    // the table the loader's plan produces for this config is the same, in both names
    expect(vaeParameters(cfg).map((p) => `${p.diffusers} [${p.shape.join(",")}]`).sort()).toEqual(got);
  });

  test("names outside the structure pass through unchanged (the reader reports them)", () => {
    expect(map.toWan("decoder.up_blocks.0.resnets.3.norm1.gamma")).toBe("decoder.up_blocks.0.resnets.3.norm1.gamma");
    expect(map.toWan("decoder.up_blocks.3.upsamplers.0.resample.1.weight")).toBe("decoder.up_blocks.3.upsamplers.0.resample.1.weight");
    expect(map.toDiffusers("decoder.upsamples.15.residual.0.gamma")).toBe("decoder.upsamples.15.residual.0.gamma");
  });

  test("the real Wan2.1 VAE: 194 tensors, 126.9 M parameters (Wan2.1_VAE.pth is 508 MB of f32)", () => {
    const real = vaeParameters(parseVaeConfig({}, "defaults"));
    expect(real.length).toBe(194);
    expect(real.reduce((s, p) => s + p.shape.reduce((a, b) => a * b, 1), 0)).toBe(126_892_531);
    expect(real.find((p) => p.wan === "decoder.upsamples.4.shortcut.weight")!.diffusers).toBe("decoder.up_blocks.1.resnets.0.conv_shortcut.weight");
  });
});

describe("diffusers vae/config.json", () => {
  // Wan-AI/Wan2.1-T2V-1.3B-Diffusers vae/config.json as released
  const released = {
    _class_name: "AutoencoderKLWan", _diffusers_version: "0.33.0.dev0", attn_scales: [], base_dim: 96, dim_mult: [1, 2, 4, 4], dropout: 0.0,
    latents_mean: [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921],
    latents_std: [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916],
    num_res_blocks: 2, temperal_downsample: [false, true, true], z_dim: 16,
  };

  test("every structural key and the latent statistics are read", () => {
    const c = parseVaeConfig({ ...released, base_dim: 32, z_dim: 4, dim_mult: [1, 2, 2], num_res_blocks: 1, temperal_downsample: [true, false], latents_mean: [1, 2, 3, 4], latents_std: [5, 6, 7, 8] }, "vae/config.json");
    expect(c).toEqual({ dim: 32, zDim: 4, dimMult: [1, 2, 2], numResBlocks: 1, temporalDownsample: [true, false], latentsMean: [1, 2, 3, 4], latentsStd: [5, 6, 7, 8] });
    const real = parseVaeConfig(released, "vae/config.json");
    expect([real.dim, real.zDim, real.numResBlocks, real.latentsStd[15]]).toEqual([96, 16, 2, 1.916]);
  });

  test("attention levels and Wan2.2 VAE keys mixed into a Wan2.1 config are refused by name", () => {
    expect(() => parseVaeConfig({ ...released, attn_scales: [0.5] }, "vae/config.json")).toThrow("vae/config.json: 'attn_scales' [0.5]");
    expect(() => parseVaeConfig({ ...released, is_residual: true, in_channels: 3 }, "vae/config.json")).toThrow("vae/config.json: 'in_channels' = 3: not a Wan2.2 VAE");
    expect(() => parseVaeConfig({ ...released, patch_size: 2, is_residual: false }, "vae/config.json")).toThrow("'is_residual' = false: not a Wan2.2 VAE");
    expect(() => parseVaeConfig({ ...released, decoder_base_dim: 256 }, "vae/config.json")).toThrow("'decoder_base_dim' = 256: only the Wan2.1 VAE");
    expect(parseVaeConfig({ ...released, is_residual: false, patch_size: null, decoder_base_dim: null, in_channels: 3, out_channels: 3 }, "f").dim).toBe(96);
  });
});

const tmp = mkdtempSync(join(tmpdir(), "kino-vae-map-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`VAE goldens from diffusers names on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("decode and encode match the Wan-named run exactly, and the goldens", async () => {
      const be = tb.backend!;
      const file = join(tmp, `vae-${tb.label}.safetensors`);
      await writeSafetensors(file, renamed);
      const io = await loadGolden("vae", "io.safetensors");
      const run = async (path: string, rename?: (n: string) => string) => {
        const reader = new WeightReader(be, await openTensorTable(path), { component: "vae", rename, fileName: map.toDiffusers });
        const dec = await WanVaeDecoder.load(reader, cfg), enc = await WanVaeEncoder.load(reader, cfg);
        reader.finish();
        const z = get(io, "dec.z"), v = get(io, "enc.video");
        const zt = be.upload(z.data, z.shape), vt = be.upload(v.data, v.shape);
        const video = await dec.decode(zt), mu = await enc.encode(vt);
        const out = { video: await be.download(video), mu: await be.download(mu) };
        be.free(zt, vt, video, mu);
        dec.free();
        enc.free();
        return out;
      };
      const fromDiffusers = await run(file, map.toWan);
      const fromWan = await run(goldenPath("vae", "weights.safetensors"));
      expect(fromDiffusers.video).toEqual(fromWan.video);
      expect(fromDiffusers.mu).toEqual(fromWan.mu);
      const { atol, rtol } = tolerance(tb.label);
      expect(closeTo(fromDiffusers.video, get(io, "dec.video_raw").data, atol, rtol).ok).toBe(true);
      expect(closeTo(fromDiffusers.mu, get(io, "enc.mu_normalized").data, atol, rtol).ok).toBe(true);
    });
  });
}
