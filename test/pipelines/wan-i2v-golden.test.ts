// The Wan2.1 image-to-video pipeline against goldens/i2v_cond (README §8: WanI2V.generate run end to
// end on tiny components), stage by stage with the code the pipeline runs: the 8-bit image to [−1, 1];
// the VAE input (bicubic to 48×64 plus 8 zero frames), its latent, the folded mask and y
// (i2vCondition); the CLIP features (the i2v_clip tower); then the three UniPC steps with guidance 5 —
// every conditional and unconditional prediction and every step's latent (sampleGuided with the
// pipeline's conditionedPredict).
import { describe, expect, test } from "bun:test";
import { ClipVisionEncoder } from "../../src/models/clip-vision.ts";
import { parseClipVisionConfig } from "../../src/models/clip-vision-config.ts";
import { parseDitConfig, parseVaeConfig } from "../../src/models/configs.ts";
import { rgb24ToUnitRange } from "../../src/models/frames.ts";
import { firstFrameMask, i2vCondition } from "../../src/models/i2v-condition.ts";
import { ditNameToWan } from "../../src/models/key-maps.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { createSampler } from "../../src/models/samplers.ts";
import { unipcSchedule } from "../../src/models/schedules.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WanVaeEncoder } from "../../src/models/wan-vae.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { sampleGuided } from "../../src/pipelines/wan-clips.ts";
import { conditionedPredict } from "../../src/pipelines/wan-i2v.ts";
import { testBackends, tolerance } from "../models/helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "../models/helpers/goldens.ts";

const io = await loadGolden("i2v_cond", "io.safetensors");
const config = await goldenJson("i2v_cond", "config.json");
const { generate_args: args, derived } = config;

test("the folded mask: latent frame 0 all ones in the 4 channels, the others zero, for any 1 + 4k frames", () => {
  const want = get(io, "mask");
  expect(closeTo(firstFrameMask(args.frame_num, derived.lat_h, derived.lat_w), want.data, 0, 0).ok).toBe(true);
  expect([...firstFrameMask(1, 1, 1)]).toEqual([1, 1, 1, 1]); // one frame (an image edit): all given
  expect(() => firstFrameMask(8, 2, 2)).toThrow("an image-to-video clip has 1 + 4k frames, not 8");
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`i2v_cond on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("image → VAE input → latent → mask → y → CLIP features → 3 guided UniPC steps", async () => {
      const be = tb.backend!, { atol, rtol } = tolerance(tb.label);
      const errors: Record<string, number> = {};
      const check = async (name: string, t: Tensor | Float32Array, want = get(io, name).data) => {
        const got = t instanceof Float32Array ? t : await be.download(t);
        const r = closeTo(got, want, atol, rtol);
        errors[name] = Math.max(errors[name] ?? 0, r.maxAbs);
        if (!r.ok) throw new Error(`${name}: max abs err ${r.maxAbs}`);
      };

      // the 8-bit image as the original's to_tensor·2 − 1
      const u8 = get(io, "image_uint8"), [H0, W0] = u8.shape as [number, number];
      const unit = rgb24ToUnitRange({ width: W0, height: H0, rgb: Uint8Array.from(u8.data) });
      await check("image", unit);
      const image = be.upload(unit, [3, H0, W0]);

      // y: the VAE conditioning, every stage tapped
      const vaeTable = await openTensorTable(goldenPath("vae", "weights.safetensors"));
      const vaeCfg = parseVaeConfig((await goldenJson("vae", "config.json")).wan_WanVAE__args, "vae/config.json");
      const encoder = await WanVaeEncoder.load(new WeightReader(be, vaeTable, { component: "vae" }), vaeCfg);
      const y = await i2vCondition(be, encoder, image, args.frame_num, derived.w, derived.h, (name, t) => check(name, t));
      expect(Object.keys(errors)).toEqual(["image", "vae_input", "vae_latent", "mask", "y"]);
      encoder.free();

      // the CLIP features of the same image
      const clipJson = await goldenJson("i2v_clip", "config.json");
      const clipReader = new WeightReader(be, await openTensorTable(goldenPath("i2v_clip", "weights.safetensors")), { component: "image_encoder" });
      const clip = await ClipVisionEncoder.load(clipReader, parseClipVisionConfig(clipJson.visual_args, "i2v_clip/config.json"));
      const features = await clip.encode(image);
      await check("clip_fea", features);
      clip.free();

      // the DiT (diffusers names) with both conditionings sharing the image features and y
      const ditJson = await goldenJson("dit_i2v", "config.json");
      const ditTable = await openTensorTable(goldenPath("dit_i2v", "weights_diffusers.safetensors"));
      const shapes = new Map([...ditTable.tensors].map(([n, info]) => [ditNameToWan(n), info.shape] as const));
      const dit = await WanDiT.load(new WeightReader(be, ditTable, { component: "transformer", rename: ditNameToWan }), parseDitConfig(ditJson, "dit_i2v/config.json", ditJson.text_len, shapes));
      const cond = await dit.crossAttnKV(get(io, "context").data, undefined, features);
      const uncond = await dit.crossAttnKV(get(io, "context_null").data, undefined, features);
      be.free(features);

      const schedule = unipcSchedule(args.sampling_steps, args.shift);
      await check("timesteps", Float32Array.from(schedule.timesteps));
      await check("sigmas", Float32Array.from(schedule.sigmas));
      const noise = get(io, "noise"), x = be.upload(noise.data, noise.shape);
      const sampler = createSampler("unipc", be, schedule, () => {
        throw new Error("UniPC draws no noise");
      });
      const predict = conditionedPredict(dit, y);
      let step = 0, call = 0;
      await sampleGuided(be, sampler, {
        x, cond, uncond, guidanceScale: args.guide_scale,
        predict: async (latent, t, cross) => {
          if (call % 2 === 0) await check(`step${step}.latent_in`, latent);
          expect(t).toBe(get(io, `step${step}.t`).data[0]!);
          const v = await predict(latent, t, cross);
          await check(`step${step}.noise_pred_${call++ % 2 === 0 ? "cond" : "uncond"}`, v);
          return v;
        },
        afterStep: async (latent) => {
          await check(`step${step++}.latent_out`, latent);
        },
      });
      expect(step).toBe(3);
      console.log(`i2v_cond on ${tb.label}: max abs err per stage ${JSON.stringify(Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, +v.toExponential(2)])))}`);
      sampler.free();
      be.free(image, y, x);
      dit.freeCross(cond);
      dit.freeCross(uncond);
      dit.free();
    });
  });
}
