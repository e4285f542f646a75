// Self-attention held to a reach (kino.self_attention_reach): which keys a query sees, how the config
// declares it, and that the causal DiT applies it the same chunk by chunk as in one block-causal pass
// (the first chunk, which lays out the scene, attending everywhere), changing nothing on a grid the
// reach covers.
import { describe, expect, test } from "bun:test";
import { reachBias, reachMasks } from "../../src/models/attention-reach.ts";
import { parseDitConfig } from "../../src/models/configs.ts";
import { parseKinoConfig } from "../../src/models/kino-config.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT, forwardBlockCausal } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

describe("the reach", () => {
  test("a query sees the keys at most reach rows and columns away, in every frame", () => {
    // 4 rows × 7 columns (kino-tiny's 16:9 grid), reach 3: the query in column 6 sees columns 3–6
    const bias = reachBias([3, 3], 2, 4, 7, 28, 56);
    const visible = (head: number, query: number, frame: number) =>
      Array.from({ length: 28 }, (_, k) => bias[(head * 28 + query) * 56 + frame * 28 + k] === 0);
    const columnsSeen = (q: number, frame: number) => [...new Set(visible(1, q, frame).flatMap((v, k) => (v ? [k % 7] : [])))];
    expect(columnsSeen(6, 0)).toEqual([3, 4, 5, 6]);
    expect(columnsSeen(6, 1)).toEqual([3, 4, 5, 6]);
    expect(columnsSeen(3, 1)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(columnsSeen(7 + 1, 0)).toEqual([0, 1, 2, 3, 4]); // row 1, column 1
    // every row is within 3 of every other on 4 rows; the masked keys are far below any logit
    expect(visible(0, 6, 0).filter(Boolean).length).toBe(16);
    expect(Math.max(...bias.filter((v) => v !== 0))).toBeLessThan(-1e8);
    // a reach of one row: rows two apart are out of it
    const rows = reachBias([1, 6], 1, 4, 7, 28, 28);
    expect(rows[0 * 28 + 2 * 7]).toBeLessThan(0);
    expect(rows[0 * 28 + 1 * 7 + 6]).toBe(0);
    expect(() => reachBias([3, 3], 1, 4, 7, 28, 30)).toThrow("not whole frames");
    // a Wan-1.3B chunk at 832×480 over a 21-frame window: refused before gigabytes are allocated
    expect(() => reachBias([3, 3], 12, 30, 52, 4680, 32760)).toThrow("kino.self_attention_reach: a 30x52-token grid needs a 7018 MiB attention bias");
    // the first chunk's queries (28 of a two-frame pass) see every key; the second chunk's do not
    const pass = reachBias([3, 3], 1, 4, 7, 56, 56, 28);
    expect(pass.subarray(0, 28 * 56).every((v) => v === 0)).toBe(true);
    expect(pass[(28 + 6) * 56 + 0]).toBeLessThan(0);
  });

  test("masks only grids wider or taller than the reach spans", () => {
    expect(reachMasks([3, 3], 4, 4)).toBe(false); // kino-tiny's 64×64
    expect(reachMasks([3, 3], 4, 7)).toBe(true); // 112×64
    expect(reachMasks([3, 3], 7, 4)).toBe(true); // 64×112
    expect(reachMasks(null, 30, 52)).toBe(false);
  });

  test("kino.self_attention_reach: [rows, columns] for a causal model, refused otherwise naming the key", () => {
    expect(parseKinoConfig({ chunk_latent_frames: 1, self_attention_reach: [3, 2] }, {}, "config.json").selfAttentionReach).toEqual([3, 2]);
    expect(parseKinoConfig({ chunk_latent_frames: 1 }, {}, "config.json").selfAttentionReach).toBeNull();
    for (const bad of [3, [3], [0, 3], [3, 2.5], ["3", 3]]) {
      expect(() => parseKinoConfig({ chunk_latent_frames: 1, self_attention_reach: bad }, {}, "config.json")).toThrow("kino.self_attention_reach must be [rows, columns]");
    }
    expect(() => parseKinoConfig({ self_attention_reach: [3, 3] }, {}, "config.json")).toThrow("kino.self_attention_reach needs a causal model");
  });
});

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");

async function loadDit(be: Backend): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len));
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`the causal DiT with a reach on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    const { atol, rtol } = tolerance(tb.label);

    /** Three one-frame chunks of a random latent C×3×H×W through the cache (each followed by its context
     *  pass), every chunk's prediction concatenated; and the same latent in one block-causal pass. */
    async function run(dit: WanDiT, H: number, W: number, reach: readonly [number, number] | null) {
      const be = dit.backend, C = 4, hw = H * W;
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      const x = new SeededRandom(5).normal(C * 3 * hw);
      const ts = [0, 0, 500];
      const causal = new CausalWanDiT(dit, { chunkFrames: 1, windowFrames: 3, sinkFrames: 0, height: H, width: W, reach });
      const chunked = new Float32Array(C * 3 * hw);
      for (let c = 0; c < 3; c++) {
        const part = new Float32Array(C * hw);
        for (let ch = 0; ch < C; ch++) part.set(x.subarray((ch * 3 + c) * hw, (ch * 3 + c + 1) * hw), ch * hw);
        const xc = be.upload(part, [C, 1, H, W]);
        const out = await be.download((await causal.forwardChunk(xc, ts[c]!, cross))!);
        for (let ch = 0; ch < C; ch++) chunked.set(out.subarray(ch * hw, (ch + 1) * hw), (ch * 3 + c) * hw);
        await causal.forwardChunk(xc, ts[c]!, cross, true);
        be.free(xc);
      }
      const whole = be.upload(x, [C, 3, H, W]);
      const pass = await forwardBlockCausal(dit, whole, ts, 1, cross, reach);
      const blockCausal = await be.download(pass);
      be.free(whole, pass);
      causal.free();
      dit.freeCross(cross);
      return { chunked, blockCausal };
    }

    test("chunk by chunk equals one block-causal pass under the same reach, which changes the output", async () => {
      const dit = await loadDit(tb.backend!);
      // latent 6×10 in 2×2 patches: 3 rows × 5 columns of tokens; a reach of 1 row and 2 columns masks
      const reached = await run(dit, 6, 10, [1, 2]);
      expect(closeTo(reached.chunked, reached.blockCausal, atol, rtol).ok).toBe(true);
      const everywhere = await run(dit, 6, 10, null);
      expect(closeTo(everywhere.chunked, everywhere.blockCausal, atol, rtol).ok).toBe(true);
      expect(closeTo(reached.chunked, everywhere.chunked, atol, rtol).ok).toBe(false);
      dit.free();
    });

    test("on a grid the reach covers, the forward is the one without it, bit for bit", async () => {
      const dit = await loadDit(tb.backend!);
      const covered = await run(dit, 6, 10, [2, 4]);
      const everywhere = await run(dit, 6, 10, null);
      expect(covered.chunked).toEqual(everywhere.chunked);
      expect(covered.blockCausal).toEqual(everywhere.blockCausal);
      dit.free();
    });
  });
}
