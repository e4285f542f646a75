// The Wan2.2 TI2V pipeline against goldens/ti2v_cond (README §11: WanTI2V.i2v run end to end on tiny
// components), stage by stage with the code the pipeline runs: PIL's two-pass Lanczos cover resize and
// the centre crop, bit for bit; the image in [−1, 1] and its Wan2.2 VAE latent z (firstFrameLatent);
// frame 0 replaced by z; then three UniPC steps with guidance 5 — per-token timesteps, both
// predictions, the scheduler's output and the latent after z is put back (sampleGuided with the
// pipeline's firstFrameRun).
import { describe, expect, test } from "bun:test";
import { parseDitConfig, parseVaeConfig } from "../../src/models/configs.ts";
import { coverResizeCrop, lanczosResize, roundHalfEven } from "../../src/models/pil-lanczos.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { createSampler } from "../../src/models/samplers.ts";
import { unipcSchedule } from "../../src/models/schedules.ts";
import { firstFrameLatent, firstFrameTimesteps } from "../../src/models/ti2v-condition.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WanVaeEncoder } from "../../src/models/wan-vae.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { sampleGuided } from "../../src/pipelines/wan-clips.ts";
import { firstFrameRun } from "../../src/pipelines/wan-ti2v.ts";
import { testBackends, tolerance } from "../models/helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "../models/helpers/goldens.ts";

const io = await loadGolden("ti2v_cond", "io.safetensors");
const { generate_args: args, derived } = await goldenJson("ti2v_cond", "config.json");
const u8 = get(io, "image_uint8");
const image = { width: u8.shape[1]!, height: u8.shape[0]!, rgb: Uint8Array.from(u8.data) };
const [ow, oh] = derived.ow_oh as [number, number];

describe("TI2V first-frame preprocessing (host)", () => {
  test("cover resize with PIL's Lanczos and the centre crop reproduce the golden's 8-bit images exactly", () => {
    const { resized, cropped } = coverResizeCrop(image, ow, oh);
    expect([resized.width, resized.height]).toEqual(derived.resize_wh);
    expect([...resized.rgb]).toEqual([...get(io, "image_resized_uint8").data]);
    expect([...cropped.rgb]).toEqual([...get(io, "image_cropped_uint8").data]);
  });

  test("one axis alone, shrinking (wider support) and Python's rounding of halves", () => {
    // the same size is a copy; shrinking keeps values in 0…255 and the mean of a flat image
    expect(lanczosResize(image, image.width, image.height).rgb).toEqual(image.rgb);
    const flat = { width: 40, height: 30, rgb: new Uint8Array(40 * 30 * 3).fill(200) };
    expect(new Set(lanczosResize(flat, 13, 7).rgb)).toEqual(new Set([200]));
    expect([roundHalfEven(2.5), roundHalfEven(3.5), roundHalfEven(99.56), roundHalfEven(64)]).toEqual([2, 4, 100, 64]);
  });

  test("per-token timesteps: frame 0's tokens at 0, the rest at t", () => {
    expect([...get(io, "step0.t_tokens").data]).toEqual(firstFrameTimesteps([3, 2, 3], 999));
  });
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`ti2v_cond on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("image → z → first frame injected → 3 guided UniPC steps with per-token t and re-injection", async () => {
      const be = tb.backend!, { atol, rtol } = tolerance(tb.label);
      const errors: Record<string, number> = {};
      const check = async (name: string, t: Tensor | Float32Array) => {
        const r = closeTo(t instanceof Float32Array ? t : await be.download(t), get(io, name).data, atol, rtol);
        errors[name] = Math.max(errors[name] ?? 0, r.maxAbs);
        if (!r.ok) throw new Error(`${name}: max abs err ${r.maxAbs}`);
      };

      const vaeTable = await openTensorTable(goldenPath("vae22", "weights.safetensors"));
      const vaeCfg = parseVaeConfig((await goldenJson("vae22", "config.json")).wan_WanVAE__args, "vae22/config.json");
      const encoder = await WanVaeEncoder.load(new WeightReader(be, vaeTable, { component: "vae" }), vaeCfg);
      const z = await firstFrameLatent(be, encoder, image, ow, oh, (name, t) => check(name, t));
      encoder.free();

      const ditJson = await goldenJson("dit_ti2v", "config.json");
      const ditTable = await openTensorTable(goldenPath("dit_ti2v", "weights.safetensors"));
      const shapes = new Map([...ditTable.tensors].map(([n, info]) => [n, info.shape] as const));
      const dit = await WanDiT.load(new WeightReader(be, ditTable, { component: "transformer" }), parseDitConfig(ditJson.wan_original_config, "dit_ti2v", undefined, shapes));
      const cond = await dit.crossAttnKV(get(io, "context").data), uncond = await dit.crossAttnKV(get(io, "context_null").data);

      const schedule = unipcSchedule(args.sampling_steps, args.shift);
      await check("timesteps", Float32Array.from(schedule.timesteps));
      await check("sigmas", Float32Array.from(schedule.sigmas));
      const noise = get(io, "noise"), x = be.upload(noise.data, noise.shape);
      const run = firstFrameRun(dit, x, z);
      await check("latent_init", x);
      const sampler = createSampler("unipc", be, schedule, () => {
        throw new Error("UniPC draws no noise");
      });
      let step = 0, call = 0;
      await sampleGuided(be, sampler, {
        x, cond, uncond, guidanceScale: args.guide_scale,
        predict: async (latent, t, cross) => {
          if (call % 2 === 0) {
            await check(`step${step}.latent_in`, latent);
            await check(`step${step}.t_tokens`, Float32Array.from(firstFrameTimesteps(dit.grid(latent.shape), t)));
          }
          const v = await run.predict(latent, t, cross);
          await check(`step${step}.noise_pred_${call++ % 2 === 0 ? "cond" : "uncond"}`, v);
          return v;
        },
        afterStep: async (latent, i) => {
          await check(`step${step}.scheduler_out`, latent);
          await run.afterStep!(latent, i);
          await check(`step${step++}.latent_out`, latent);
        },
      });
      expect(step).toBe(3);
      // frame 0 of the final latent is z itself
      const last = await be.download(x), zHost = await be.download(z), plane = 4 * 6;
      for (let c = 0; c < 48; c++) expect(last.subarray(c * 3 * plane, c * 3 * plane + plane)).toEqual(zHost.subarray(c * plane, (c + 1) * plane));
      console.log(`ti2v_cond on ${tb.label}: max abs err per stage ${JSON.stringify(Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, +v.toExponential(2)])))}`);
      sampler.free();
      be.free(z, x);
      dit.freeCross(cond);
      dit.freeCross(uncond);
      dit.free();
    });
  });
}
