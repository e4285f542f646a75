// The image models' GPU benchmark (tools/bench/image-models.ts), checked where no GPU is: the real
// geometries (TI2V-5B at 1280x704 × 121 frames = 27 280 tokens, I2V-14B at 832x480 × 81 frames =
// 32 760 tokens, both configs as the originals declare them) and their FLOP counts, then the same
// code — DiT from random weights made on the device, the pipelines' own image-to-video loops, the
// Wan2.2 VAE decoder streamed latent by latent — on scaled-down configs on the WebAssembly backend.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { type DenoiseSpec, WAN21_I2V_14B, WAN22_TI2V_5B, benchDenoise, benchVae22Decode, i2v14bSpec, stepTflop, ti2v5bSpec, tokensOf } from "../../tools/bench/image-models.ts";
import { testBackends } from "./helpers/backends.ts";

describe("the real geometries", () => {
  test("TI2V-5B: 48×31×44×80 latent, 27 280 tokens; I2V-14B: 16×21×60×104, 32 760 tokens and 257 image tokens", () => {
    const ti2v = ti2v5bSpec(), i2v = i2v14bSpec();
    expect(ti2v.dit).toMatchObject({ kind: "ti2v", dim: 3072, numLayers: 30, numHeads: 24, inDim: 48, outDim: 48, textLen: 512 });
    expect(i2v.dit).toMatchObject({ kind: "i2v", dim: 5120, numLayers: 40, numHeads: 40, inDim: 36, outDim: 16, imageDim: 1280, textLen: 512 });
    expect([tokensOf(ti2v), tokensOf(i2v)]).toEqual([27280, 32760]); // the goldens' seq_len examples
  });

  test("a guided step is ≈1 PFLOP on TI2V-5B and ≈3.3 PFLOP on I2V-14B", () => {
    expect(stepTflop(ti2v5bSpec())).toBeGreaterThan(950);
    expect(stepTflop(ti2v5bSpec())).toBeLessThan(1050);
    expect(stepTflop(i2v14bSpec())).toBeGreaterThan(3200);
    expect(stepTflop(i2v14bSpec())).toBeLessThan(3400);
  });
});

/** The same kind, shrunk: 2 heads of 16, 2 layers, a latent of a few frames. */
const shrink = (config: Record<string, unknown>, latent: DenoiseSpec["latent"], imageTokens: number, imageDim?: number): DenoiseSpec => {
  const tensors = imageDim ? new Map([["img_emb.proj.0.weight", [imageDim]]]) : undefined;
  const dit = parseDitConfig({ ...config, dim: 32, num_heads: 2, num_layers: 2, ffn_dim: 64, freq_dim: 16, text_dim: 16 }, "tiny", undefined, tensors);
  return { name: "tiny", dit: { ...dit, textLen: config.model_type === "i2v" ? 512 : 8 }, latent, imageTokens };
};

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`bench:model's image models on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("TI2V and I2V steps: one time per step, finite outputs, memory given back", async () => {
      const b = tb.backend!, before = b.memory().inUse;
      const ti2v = await benchDenoise(b, shrink(WAN22_TI2V_5B, [48, 3, 4, 6], 0), 2);
      const i2v = await benchDenoise(b, shrink(WAN21_I2V_14B, [16, 3, 4, 6], 5, 24), 2);
      for (const r of [ti2v, i2v]) {
        expect(r.steps).toHaveLength(2);
        expect(r.steps.every((t) => t > 0)).toBe(true);
        expect(r.finite).toBe(true);
      }
      expect([ti2v.tokens, i2v.tokens]).toEqual([18, 18]);
      expect(b.memory().inUse).toBe(before);
    });

    test("the Wan2.2 VAE decode: the first latent, then the steady ones, extrapolated to the clip", async () => {
      const b = tb.backend!;
      const tiny = { base_dim: 4, decoder_base_dim: 6, z_dim: 48, is_residual: true, patch_size: 2, in_channels: 12, out_channels: 12 };
      const d = await benchVae22Decode(b, 2, 3, 3, 31, tiny);
      expect(d.latents).toHaveLength(3);
      const median = [...d.latents.slice(1)].sort((x, y) => x - y)[1]!; // of two: the upper one
      expect(d.estimate).toBeCloseTo(d.latents[0]! + 30 * median, 6);
      expect(d.finite).toBe(true);
    });
  });
}
