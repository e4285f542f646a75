// The chunked causal DiT: one chunk covering the whole latent without a mask is the bidirectional
// forward (so the goldens hold for it too); chunk by chunk with the KV cache equals one pass under the
// block-causal mask with per-frame timesteps; the Self-Forcing context pass at t = 0; and a rolling
// window with a sink equals a fresh cache holding only the frames the window keeps.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT, forwardBlockCausal } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");

async function loadDit(be: Backend): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len));
}

/** Copies token frames (source frame, destination frame) of every layer's cached K and V from one model's cache to another's. */
function copyFrames(be: Backend, from: CausalWanDiT, to: CausalWanDiT, pairs: readonly (readonly [number, number])[]): void {
  const { tokensPerFrame, heads, headDim } = from.cache.shape;
  const tmp = be.alloc([1, tokensPerFrame, heads, headDim], from.cache.k[0]!.dtype); // bf16 where the model's activations are
  for (const [a, b] of [[from.cache.k, to.cache.k], [from.cache.v, to.cache.v]] as const) {
    for (let i = 0; i < a.length; i++) {
      for (const [src, dst] of pairs) {
        be.slice(tmp, a[i]!, 1, src * tokensPerFrame);
        be.writeSlice(b[i]!, tmp, 1, dst * tokensPerFrame);
      }
    }
  }
  be.free(tmp);
}

/** Latent frames [t0, t1) of a [C, T, H, W] device tensor, as a new tensor. */
function frames(be: Backend, x: Tensor, t0: number, t1: number): Tensor {
  const [C, , H, W] = x.shape as number[];
  const out = be.alloc([C!, t1 - t0, H!, W!]);
  be.slice(out, x, 1, t0);
  return out;
}

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`causal WanDiT on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    const { atol, rtol } = tolerance(tb.label);

    test("one chunk covering the whole latent is the bidirectional forward (golden dit_b sq)", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "sq.context").data);
      const causal = new CausalWanDiT(dit, { chunkFrames: 3, windowFrames: 3, sinkFrames: 0, height: 8, width: 8 });
      const x = be.upload(get(io, "sq.x").data, get(io, "sq.x").shape);
      const out = (await causal.forwardChunk(x, 937.5, cross))!;
      const r = closeTo(await be.download(out), get(io, "sq.out").data, atol, rtol);
      console.log(`causal single chunk vs golden on ${tb.label}: max abs err ${r.maxAbs.toExponential(2)}`);
      expect(r.ok).toBe(true);
      be.free(x, out);
      causal.free();
      dit.freeCross(cross);
      dit.free();
    });

    test("chunk by chunk with the cache equals one block-causal pass (per-frame timesteps, context pass at t = 0)", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "nsq.context").data);
      const rng = new SeededRandom(7);
      const [C, H, W] = [4, 6, 10];
      const x = be.upload(rng.normal(C * 6 * H * W), [C, 6, H, W]);
      // chunks of 2 latent frames; chunks 0 and 1 are "clean" (t = 0, as after their context pass), chunk 2 at t = 625
      const ts = [0, 0, 0, 0, 625, 625];
      const full = await forwardBlockCausal(dit, x, ts, 2, cross);
      const causal = new CausalWanDiT(dit, { chunkFrames: 2, windowFrames: 6, sinkFrames: 0, height: H, width: W });
      const want = await be.download(full);
      const hw = H * W;
      let worst = 0;
      for (let c = 0; c < 3; c++) {
        const xc = frames(be, x, 2 * c, 2 * c + 2);
        const out = (await causal.forwardChunk(xc, ts.slice(2 * c, 2 * c + 2), cross))!;
        const got = await be.download(out);
        const expected = new Float32Array(got.length);
        for (let ch = 0; ch < C; ch++) expected.set(want.subarray((ch * 6 + 2 * c) * hw, (ch * 6 + 2 * c + 2) * hw), ch * 2 * hw);
        const r = closeTo(got, expected, atol, rtol);
        worst = Math.max(worst, r.maxAbs);
        expect(r.ok).toBe(true);
        expect(await causal.forwardChunk(xc, ts.slice(2 * c, 2 * c + 2), cross, true)).toBeNull(); // context pass
        be.free(xc, out);
      }
      console.log(`cached chunks vs block-causal pass on ${tb.label}: max abs err ${worst.toExponential(2)}`);
      expect(causal.cache.nextFrame).toBe(6);
      be.free(x, full);
      causal.free();
      dit.freeCross(cross);
      dit.free();
    });

    test("a rolling window with a sink attends to the sink and the newest frames only", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "sq.context").data);
      const rng = new SeededRandom(11);
      const [C, H, W] = [4, 4, 6];
      const chunks = Array.from({ length: 4 }, () => be.upload(rng.normal(C * H * W), [C, 1, H, W]));
      // window of 3 frames with a 1-frame sink: chunk 3 sees chunk 0 (the sink), chunk 2 and itself
      const opts = { chunkFrames: 1, sinkFrames: 1, height: H, width: W };
      const rolling = new CausalWanDiT(dit, { ...opts, windowFrames: 3 });
      for (const c of chunks.slice(0, 3)) await rolling.forwardChunk(c, 0, cross, true);
      // the cache that window should leave: frames 0 and 2 of the full one, chunk 3 at absolute frame 3
      const kept = new CausalWanDiT(dit, { ...opts, windowFrames: 4 });
      copyFrames(be, rolling, kept, [[0, 0], [2, 1]]);
      kept.cache.heldFrames = 2;
      kept.cache.nextFrame = 3;
      const got = await be.download((await rolling.forwardChunk(chunks[3]!, 500, cross))!);
      const want = await be.download((await kept.forwardChunk(chunks[3]!, 500, cross))!);
      expect(closeTo(got, want, atol, rtol).ok).toBe(true);
      expect(rolling.cache.heldFrames).toBe(2);
      // and it differs from attending to all four chunks
      const all = new CausalWanDiT(dit, { ...opts, windowFrames: 4, sinkFrames: 0 });
      for (const c of chunks.slice(0, 3)) await all.forwardChunk(c, 0, cross, true);
      const unwindowed = await be.download((await all.forwardChunk(chunks[3]!, 500, cross))!);
      expect(closeTo(unwindowed, want, atol, rtol).ok).toBe(false);
      be.free(...chunks);
      for (const m of [rolling, kept, all]) m.free();
      dit.freeCross(cross);
      dit.free();
    });

    test("a chunk committed as the sink (a prompt cut) replaces the old sink and leaves the window as it was", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "sq.context").data);
      const rng = new SeededRandom(12);
      const [C, H, W] = [4, 4, 6];
      const chunks = Array.from({ length: 5 }, () => be.upload(rng.normal(C * H * W), [C, 1, H, W]));
      const opts = { chunkFrames: 1, sinkFrames: 1, height: H, width: W, windowFrames: 5 };
      const anchored = new CausalWanDiT(dit, opts);
      for (const c of chunks.slice(0, 3)) await anchored.forwardChunk(c, 0, cross, true);
      await anchored.forwardChunk(chunks[3]!, 0, cross, true, true);
      expect([anchored.cache.heldFrames, anchored.cache.nextFrame]).toEqual([3, 4]);
      // the cache it should leave: frame 3 in the sink slot, then frames 1 and 2
      const all = new CausalWanDiT(dit, { ...opts, sinkFrames: 0 });
      for (const c of chunks.slice(0, 4)) await all.forwardChunk(c, 0, cross, true);
      const kept = new CausalWanDiT(dit, opts);
      copyFrames(be, all, kept, [[3, 0], [1, 1], [2, 2]]);
      kept.cache.heldFrames = 3;
      kept.cache.nextFrame = 4;
      const got = await be.download((await anchored.forwardChunk(chunks[4]!, 500, cross))!);
      const want = await be.download((await kept.forwardChunk(chunks[4]!, 500, cross))!);
      expect(closeTo(got, want, atol, rtol).ok).toBe(true);
      // and it differs from keeping the first sink (frames 0-3 in view)
      const plain = await be.download((await all.forwardChunk(chunks[4]!, 500, cross))!);
      expect(closeTo(plain, want, atol, rtol).ok).toBe(false);
      be.free(...chunks);
      for (const m of [anchored, kept, all]) m.free();
      dit.freeCross(cross);
      dit.free();
    });
  });
}
