// The causal DiT's context pass (the forward at t = 0 over a clean chunk that only fills the KV cache)
// computes the K/V alone: the keys and values it stores are, bit for bit, what a full forward over the
// same chunk at t = 0 stores (eagerly and as a graph, with bf16 activations too), while its last block
// runs only the K/V's ops — the modulation's shift and scale, the normed input, one GEMM over the k|v
// rows of the projection, k's norm and rotation, the two stores — and nothing after them: no q, no
// attention, no cross-attention, no FFN, no head.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { ActivationDtype, Backend } from "../../src/runtime/backend.ts";
import { countingBackend } from "../../src/runtime/counting-backend.ts";
import { testBackends } from "./helpers/backends.ts";
import { get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");

async function loadDit(be: Backend, activations: ActivationDtype): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len), { activations });
}

const [C, N, H, W] = [4, 2, 6, 10];

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`the causal DiT's context pass on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    for (const activations of ["f32", "bf16"] as const) {
      for (const graphs of [false, true]) {
        test(`stores the K/V a full forward at t = 0 stores, bit for bit (${activations} activations${graphs ? ", as a graph" : ""})`, async () => {
          const be = tb.backend!;
          const dit = await loadDit(be, activations);
          const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
          const causal = new CausalWanDiT(dit, { chunkFrames: N, windowFrames: 4 * N, sinkFrames: 0, height: H, width: W, graphs });
          const rng = new SeededRandom(3);
          // the bytes of every layer's K and V up to the end of chunk c (past it the memory was never written)
          const chunkBytes = causal.chunkTokens * dit.config.dim * (activations === "bf16" ? 2 : 4);
          const held = async (c: number) => Promise.all([...causal.cache.k, ...causal.cache.v].map(async (t) => (await be.downloadRaw(t)).subarray(0, (c + 1) * chunkBytes)));
          // two chunks, so the second's K/V sit after a held prefix; neither evicts (a window of 4)
          for (let c = 0; c < 2; c++) {
            const x = be.upload(rng.normal(C * N * H * W), [C, N, H, W]);
            be.free((await causal.forwardChunk(x, 0, cross))!); // a full forward writes the chunk's K/V too
            const full = await held(c);
            // the chunk's keys and values overwritten with sevens: the context pass must write them again
            const [, , heads, headDim] = causal.cache.k[0]!.shape as number[], n = causal.chunkTokens * heads! * headDim!;
            const sevens = activations === "bf16" ? be.upload(new Uint16Array(n).fill(0x40e0), [1, causal.chunkTokens, heads!, headDim!], "bf16")
              : be.upload(new Float32Array(n).fill(7), [1, causal.chunkTokens, heads!, headDim!]);
            for (const t of [...causal.cache.k, ...causal.cache.v]) be.writeSlice(t, sevens, 1, c * causal.chunkTokens);
            be.free(sevens);
            await causal.forwardChunk(x, 0, cross, true);
            const context = await held(c);
            for (const [i, t] of context.entries()) expect(Buffer.from(t).equals(Buffer.from(full[i]!)), `chunk ${c}, cache tensor ${i}`).toBe(true);
            be.free(x);
          }
          expect(causal.cache.heldFrames).toBe(2 * N);
          causal.free();
          dit.freeCross(cross);
          dit.free();
        });
      }
    }

    test("runs every block but the last whole, and of the last only its K/V", async () => {
      const counting = countingBackend(tb.backend!);
      const be = counting.backend;
      const dit = await loadDit(be, "f32");
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      const causal = new CausalWanDiT(dit, { chunkFrames: N, windowFrames: 4 * N, sinkFrames: 0, height: H, width: W });
      const x = be.upload(new SeededRandom(4).normal(C * N * H * W), [C, N, H, W]);
      be.free((await causal.forwardChunk(x, 0, cross))!); // the time embedding for t = 0, made once
      const ops = async (commit: boolean) => {
        counting.counts.trace = [];
        const out = await causal.forwardChunk(x, 0, cross, commit);
        if (out) be.free(out);
        const trace = counting.counts.trace;
        counting.counts.trace = null;
        return trace;
      };
      const full = await ops(false), context = await ops(true);
      const layers = dit.config.numLayers;
      // every block starts with its modulation's upsample, and so does the head: the blocks' ops
      const starts = full.flatMap((op, i) => (op === "upsampleNearest" ? [i] : []));
      const start = starts[0]!, perBlock = starts[1]! - start, lastBlock = start + (layers - 1) * perBlock;
      expect(starts.length).toBeGreaterThan(layers);
      // the context pass: the same patchify and the same first layers − 1 blocks, then the K/V alone
      expect(context.slice(0, lastBlock)).toEqual(full.slice(0, lastBlock));
      expect(context.slice(lastBlock)).toEqual(["upsampleNearest", "axpby", "layerNormModulate", "gemm", "rmsNormRope", "writeSlice", "writeSlice"]);
      // what it leaves out: the last block's q norm, attention, output projection, cross-attention and
      // FFN, and the head
      console.log(`${tb.label}: a full forward at t = 0 makes ${full.length} ops, the context pass ${context.length}`);
      expect(full.length - context.length).toBe(full.length - lastBlock - 7);
      be.free(x);
      causal.free();
      dit.freeCross(cross);
      dit.free();
    });
  });
}
