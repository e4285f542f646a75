// kino's latent-patch image branch: a text-to-video DiT with Wan2.1 I2V's image cross-attention, fed
// with the given first frame's latent cut into the DiT's patches (kino-tiny starting from an image).
// Recognised from its config (and refused where the config contradicts it); the patches in the order
// the branch was trained on; a stream without an image is the text-to-video model bit for bit, one
// with an image reads it, and the causal chunk forward agrees with the whole-clip forward.
import { describe, expect, test } from "bun:test";
import { type Json, parseDitConfig } from "../../src/models/configs.ts";
import { parseKinoConfig } from "../../src/models/kino-config.ts";
import { RandomWeights } from "../../src/models/random-weights.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT, forwardBlockCausal } from "../../src/models/wan-dit-causal.ts";
import { latentPatches } from "../../src/models/wan-dit-image.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader, type WeightSource } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const t2v = await goldenJson("dit_b", "config.json"); // patch 1×2×2, 4 channels, width 64
const io = await loadGolden("dit_b", "io.safetensors");
const WIDTH = 4 * 2 * 2;
const branchConfig = (extra: Json = {}): Json => ({ ...t2v, image_dim: WIDTH, added_kv_proj_dim: 64, kino: { image_features: "latent_patches" }, ...extra });
const parse = (cfg: Json) => parseDitConfig(cfg, "config.json", 16);

describe("recognising the branch", () => {
  test("a text-to-video DiT whose kino block says latent_patches, image_dim = out · ph · pw", () => {
    expect(parse(branchConfig())).toMatchObject({ kind: "t2v", imageDim: WIDTH, imageFeatures: "latent_patches", inDim: 4 });
    expect(parse(t2v)).toMatchObject({ kind: "t2v", imageDim: null, imageFeatures: null });
  });

  test("configs that contradict it are refused naming the key", () => {
    expect(() => parse(branchConfig({ image_dim: 20 }))).toThrow("needs 'image_dim' = out_channels · patch height · patch width = 16");
    expect(() => parse(branchConfig({ kino: { image_features: "clip" } }))).toThrow('kino.image_features "clip": only "latent_patches" is known');
    expect(() => parse(branchConfig({ in_channels: 8 }))).toThrow("in and out channels must match");
    const kino = (extra: Json) => () => parseKinoConfig({ chunk_frames: 1, causal: true, image_features: "latent_patches", ...extra }, {}, "config.json");
    expect(kino({})).toThrow("kino.image_features needs first_frame_conditioning");
    expect(kino({ first_frame_conditioning: true })).not.toThrow();
  });
});

test("latent patches: tokens in raster order, each token's values in (channel, row, column) order", () => {
  // C 2, H 4, W 6, patch 2×2: the value at (c, y, x) is 100c + 10y + x
  const [C, H, W] = [2, 4, 6];
  const latent = Float32Array.from({ length: C * H * W }, (_, i) => 100 * Math.floor(i / (H * W)) + 10 * Math.floor((i % (H * W)) / W) + (i % W));
  const rows = latentPatches(latent, [C, 1, H, W], [1, 2, 2]);
  expect(rows.length).toBe(6 * 8);
  // token 4 = row 1, column 1 of the 2×3 grid: pixels y 2..3, x 2..3
  expect([...rows.subarray(4 * 8, 5 * 8)]).toEqual([22, 23, 32, 33, 122, 123, 132, 133]);
  expect(() => latentPatches(latent, [C, 2, 2, W], [1, 2, 2])).toThrow("one latent frame");
});

/** dit_b's golden weights plus a seeded random image branch. */
function withBranch(be: Backend, reader: WeightReader): WeightSource {
  const random = new RandomWeights(be, { seed: 5, dtype: "f32" });
  const branch = (name: string) => name.startsWith("img_emb.") || name.includes("_img.");
  return {
    backend: be,
    matrix: (name, shape) => (branch(name) ? random : reader).matrix(name, shape),
    vector: (name, shape) => (branch(name) ? random : reader).vector(name, shape),
    host: (name, shape) => (branch(name) ? random : reader).host(name, shape),
  };
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`the branch on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    const { atol, rtol } = tolerance(tb.label);
    const load = async (be: Backend, cfg: Json) => {
      const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
      return WanDiT.load(cfg === t2v ? reader : withBranch(be, reader), parse(cfg));
    };

    test("without an image it is the text-to-video DiT bit for bit; with one the output moves", async () => {
      const be = tb.backend!;
      const [plain, branched] = [await load(be, t2v), await load(be, branchConfig())];
      const x = get(io, "sq.x"), context = get(io, "sq.context").data;
      const run = async (dit: WanDiT, image?: Float32Array) => {
        const cross = await dit.crossAttnKV(context, undefined, image);
        const causal = new CausalWanDiT(dit, { chunkFrames: 3, windowFrames: 3, sinkFrames: 0, height: 8, width: 8 });
        const xt = be.upload(x.data, x.shape);
        const out = await be.download((await causal.forwardChunk(xt, 937.5, cross))!);
        be.free(xt);
        causal.free();
        dit.freeCross(cross);
        return out;
      };
      const image = latentPatches(new SeededRandom(3).normal(4 * 8 * 8), [4, 1, 8, 8], [1, 2, 2]);
      const [want, without, withImage] = [await run(plain), await run(branched), await run(branched, image)];
      expect(without).toEqual(want);
      const moved = Math.max(...withImage.map((v, i) => Math.abs(v - want[i]!)));
      expect(moved).toBeGreaterThan(1e-2);
      plain.free();
      branched.free();
    });

    test("chunk by chunk with the cache and the image equals one block-causal pass with it", async () => {
      const be = tb.backend!;
      const dit = await load(be, branchConfig());
      const rng = new SeededRandom(9);
      const [C, H, W] = [4, 4, 6], hw = H * W;
      const image = latentPatches(rng.normal(C * hw), [C, 1, H, W], [1, 2, 2]);
      const cross = await dit.crossAttnKV(get(io, "sq.context").data, undefined, image);
      const x = be.upload(rng.normal(C * 3 * hw), [C, 3, H, W]);
      // chunk 0 is the given frame (clean, t = 0), chunks 1 and 2 are being denoised
      const ts = [0, 750, 750];
      const want = await be.download(await forwardBlockCausal(dit, x, ts, 1, cross));
      const causal = new CausalWanDiT(dit, { chunkFrames: 1, windowFrames: 3, sinkFrames: 0, height: H, width: W });
      for (let c = 0; c < 3; c++) {
        const xc = be.alloc([C, 1, H, W]);
        be.slice(xc, x, 1, c);
        const got = await be.download((await causal.forwardChunk(xc, ts[c]!, cross))!);
        const expected = new Float32Array(got.length);
        for (let ch = 0; ch < C; ch++) expected.set(want.subarray((ch * 3 + c) * hw, (ch * 3 + c + 1) * hw), ch * hw);
        expect(closeTo(got, expected, atol, rtol).ok).toBe(true);
        await causal.forwardChunk(xc, ts[c]!, cross, true); // the chunk enters the cache as it was
        be.free(xc);
      }
      be.free(x);
      causal.free();
      dit.freeCross(cross);
      dit.free();
    });
  });
}
