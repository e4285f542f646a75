// The arithmetic of `npm run bench:model`'s GPU half (tools/bench/model.ts), checked where no GPU is:
// Wan2.1-1.3B's chunk geometry at 832x480 and its FLOP count against the published figures, and the
// same code path — the DiT built from random weights made on the device, streamed through the KV
// cache — run end to end on a scaled-down config on the WebAssembly backend.
import { describe, expect, test } from "bun:test";
import { type WanDitConfig, parseDitConfig } from "../../src/models/configs.ts";
import { type ChunkBenchSpec, benchDitChunks, chunkGeometry, chunkTflop, wan13bSpec } from "../../tools/bench/model.ts";
import { testBackends } from "./helpers/backends.ts";

/** WanModel's parameter count, summed by hand from the module list (model.py). */
function ditParameters(c: WanDitConfig): number {
  const { dim: d, ffnDim: f, freqDim, textDim, inDim, outDim, numLayers } = c, p = c.patch[0] * c.patch[1] * c.patch[2];
  const linear = (i: number, o: number) => i * o + o;
  const attention = 4 * linear(d, d) + 2 * d; // q, k, v, o + norm_q, norm_k
  const block = 6 * d + 2 * attention + 2 * d + linear(d, f) + linear(f, d); // modulation, self, cross, norm3, ffn
  return linear(inDim * p, d) + linear(textDim, d) + linear(d, d) + linear(freqDim, d) + linear(d, d) + linear(d, 6 * d) + numLayers * block + 2 * d + linear(d, outDim * p);
}

describe("Wan2.1-T2V-1.3B streaming at 832x480", () => {
  test("a 3-latent-frame chunk is 4680 tokens and decodes to 12 frames; the 21-frame window is 32760 keys", () => {
    expect(chunkGeometry(wan13bSpec())).toEqual({
      latentHeight: 60, latentWidth: 104, tokensPerFrame: 1560, tokensPerChunk: 4680, windowTokens: 32760, videoFramesPerChunk: 12, warmupChunks: 6,
    });
    expect(chunkGeometry(wan13bSpec(12)).warmupChunks).toBe(3);
  });

  test("FLOPs per chunk agree with the reference's roofline (≈142 TFLOP with a 12-frame window, ≈203 with 21)", () => {
    expect(Math.abs(chunkTflop(wan13bSpec(12)) / 142 - 1)).toBeLessThan(0.01);
    expect(Math.abs(chunkTflop(wan13bSpec(21)) / 203 - 1)).toBeLessThan(0.01);
    // linear layers alone: ≈2.50 GFLOP per token per forward
    const noAttention = { ...wan13bSpec(), steps: [] as number[] };
    const g = chunkGeometry(noAttention), d = noAttention.dit;
    const attention = (4 * g.tokensPerChunk * (g.windowTokens + d.textLen) * d.dim * d.numLayers) / 1e12;
    expect(((chunkTflop(noAttention) - attention) * 1e3) / g.tokensPerChunk).toBeCloseTo(2.5, 2);
  });

  test("the released transformer config is the 1.419 B-parameter DiT", () => {
    const { dit } = wan13bSpec();
    expect([dit.dim, dit.numHeads, dit.numLayers, dit.ffnDim, dit.textLen, dit.textDim]).toEqual([1536, 12, 30, 8960, 512, 4096]);
    expect(ditParameters(dit)).toBe(1_418_996_800);
  });
});

// the GPU half's code path on a DiT 24× narrower and 15× shallower, same chunking and schedule
const tiny: ChunkBenchSpec = {
  ...wan13bSpec(6),
  dit: parseDitConfig({
    num_attention_heads: 2, attention_head_dim: 32, ffn_dim: 128, num_layers: 2, in_channels: 16, out_channels: 16, patch_size: [1, 2, 2],
    text_dim: 32, freq_dim: 32, qk_norm: "rms_norm_across_heads", cross_attn_norm: true, eps: 1e-6,
  }, "tiny", 16),
  width: 64,
  height: 48,
};

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`bench:model's DiT chunk timing on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("random bf16 weights on the device, warm-up until the window is full, then steady chunks", async () => {
      const g = chunkGeometry(tiny);
      expect([g.tokensPerChunk, g.windowTokens, g.warmupChunks]).toEqual([3 * 12, 6 * 12, 1]);
      const before = tb.backend!.memory().inUse;
      const r = await benchDitChunks(tb.backend!, tiny, 2);
      expect(r.parameters).toBe(ditParameters(tiny.dit));
      expect(r.forwards).toBe((1 + 1 + 2) * 5); // first + warm-up + measured chunks, 4 steps + context pass each
      expect(r.finite).toBe(true);
      expect(r.perChunk).toBeGreaterThan(0);
      expect(r.fps).toBeCloseTo(12 / r.perChunk, 6);
      expect(r.tflops).toBeCloseTo(chunkTflop(tiny) / r.perChunk, 6);
      expect(tb.backend!.memory().inUse).toBe(before); // everything it made is given back
    });
  });
}
