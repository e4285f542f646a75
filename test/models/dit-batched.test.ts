// The batched causal DiT (two streams over the same latent, as classifier-free guidance runs them):
// each stream must get exactly what a batch-1 model with its own KV cache and its own cross-attention
// gives — through warm-up chunks, context passes and a rolling window that evicts.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends } from "./helpers/backends.ts";
import { closeTo, goldenJson, goldenPath } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");

async function loadDit(be: Backend): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len));
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`batched causal WanDiT on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test("stream i of a batch of 2 equals a batch-1 model with its own cache and conditioning", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const rng = new SeededRandom(3);
      const { textDim } = dit.config;
      const [C, H, W] = [4, 6, 10];
      const conds = [rng.normal(5 * textDim), rng.normal(2 * textDim)];
      const crosses = [await dit.crossAttnKV(conds[0]!), await dit.crossAttnKV(conds[1]!)];
      const stacked = dit.stackCross(crosses);
      const opts = { chunkFrames: 1, windowFrames: 2, sinkFrames: 0, height: H, width: W };
      const batched = new CausalWanDiT(dit, { ...opts, batch: 2 });
      const singles = [new CausalWanDiT(dit, opts), new CausalWanDiT(dit, opts)];
      let worst = 0;
      for (let chunk = 0; chunk < 4; chunk++) { // the window holds 2 frames: chunks 2 and 3 evict
        const x = be.upload(rng.normal(C * H * W), [C, 1, H, W]);
        for (const t of [900, 400]) {
          const out = (await batched.forwardChunk(x, t, stacked))!;
          expect(out.shape).toEqual([2, C, 1, H, W]);
          const both = await be.download(out);
          be.free(out);
          for (const [i, single] of singles.entries()) {
            const v = (await single.forwardChunk(x, t, crosses[i]!))!;
            const r = closeTo(both.subarray(i * v.numel, (i + 1) * v.numel), await be.download(v), 1e-5, 1e-5);
            worst = Math.max(worst, r.maxAbs);
            expect(r.ok).toBe(true);
            be.free(v);
          }
        }
        expect(await batched.forwardChunk(x, 0, stacked, true)).toBeNull();
        for (const [i, single] of singles.entries()) await single.forwardChunk(x, 0, crosses[i]!, true);
        be.free(x);
      }
      console.log(`batched vs per-stream causal DiT on ${tb.label}: max abs err ${worst.toExponential(2)}`);
      batched.free();
      for (const s of singles) s.free();
      for (const c of [...crosses, stacked]) dit.freeCross(c);
      dit.free();
    });
  });
}
