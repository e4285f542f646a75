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
import { checkGoldenDecode, describeErrors } from "./helpers/vae-decode.ts";

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
      const errors = await checkGoldenDecode(be, dec, io, [32, 32], tolerance(tb.label));
      console.log(`VAE decode on ${tb.label}: ${describeErrors(errors)}`);
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

