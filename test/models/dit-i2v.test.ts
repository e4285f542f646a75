// The Wan2.1 image-to-video DiT against goldens/dit_i2v (README §7), under Wan and diffusers key names:
// every tensor the golden records (time embedding, the 512-row text embedding, the CLIP image
// embedding, block 0's text and image attention apart and summed, every block output, head, output),
// then the conditional and unconditional calls of the three guided steps of goldens/i2v_cond (§8),
// singly and as one batch of two streams (how classifier-free guidance runs them).
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { ditNameToDiffusers, ditNameToWan } from "../../src/models/key-maps.ts";
import { type TensorTable, openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_i2v", "config.json");
const io = await loadGolden("dit_i2v", "io.safetensors");
const cond = await loadGolden("i2v_cond", "io.safetensors");
const INPUTS = ["x", "y", "t", "context", "clip_fea"];
/** Our tap names that the golden stores under another name. */
const GOLDEN_NAME: Record<string, string> = { context_emb: "context_txt_emb" };

const shapesOf = (table: TensorTable, rename: (n: string) => string) => new Map([...table.tensors].map(([n, info]) => [rename(n), info.shape] as const));

async function loadDit(be: Backend, layout: "wan" | "diffusers"): Promise<WanDiT> {
  const table = await openTensorTable(goldenPath("dit_i2v", layout === "wan" ? "weights.safetensors" : "weights_diffusers.safetensors"));
  const rename = layout === "diffusers" ? ditNameToWan : (n: string) => n;
  // the original layout's config says model_type 'i2v'; its CLIP width comes from img_emb's shapes
  const cfg = layout === "wan"
    ? parseDitConfig(json.wan_original_config, "dit_i2v/wan config", undefined, shapesOf(table, rename))
    : parseDitConfig(json, "dit_i2v/config.json", json.text_len, shapesOf(table, rename));
  expect(cfg).toMatchObject({ kind: "i2v", imageDim: 48, inDim: 36, outDim: 16, textLen: 512 });
  const reader = new WeightReader(be, table, { component: "transformer", rename: layout === "diffusers" ? ditNameToWan : undefined });
  const dit = await WanDiT.load(reader, cfg);
  reader.finish(); // every one of the 87 tensors used
  return dit;
}

const upload = (be: Backend, m: Map<string, { shape: number[]; data: Float32Array }>, name: string) => be.upload(get(m, name).data, get(m, name).shape);

test("diffusers ↔ Wan key maps match the conversion table for all 87 i2v keys", () => {
  const map: Record<string, string> = json.key_map_wan_to_diffusers;
  expect(Object.keys(map).length).toBe(87);
  for (const [wan, diffusers] of Object.entries(map)) {
    expect(ditNameToWan(diffusers)).toBe(wan);
    expect(ditNameToDiffusers(wan)).toBe(diffusers);
  }
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`i2v WanDiT on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    const { atol, rtol } = tolerance(tb.label);

    for (const layout of ["wan", "diffusers"] as const) {
      test(`dit_i2v, ${layout} keys: every tensor the golden records`, async () => {
        const be = tb.backend!;
        const dit = await loadDit(be, layout);
        const errors: Record<string, number> = {};
        const notStored: string[] = [];
        const tap = async (name: string, t: Tensor) => {
          const golden = io.get(`cond.${GOLDEN_NAME[name] ?? name}`);
          if (!golden) return void notStored.push(name);
          const got = await be.download(t);
          expect(got.length).toBe(golden.data.length);
          const r = closeTo(got, golden.data, atol, rtol);
          errors[GOLDEN_NAME[name] ?? name] = +r.maxAbs.toExponential(2);
          if (!r.ok) throw new Error(`${name}: max abs err ${r.maxAbs}`);
        };
        const cross = await dit.crossAttnKV(get(io, "cond.context").data, tap, get(io, "cond.clip_fea").data);
        const x = upload(be, io, "cond.x"), y = upload(be, io, "cond.y");
        const xIn = dit.withCondition(x, y);
        await tap("x_in", xIn);
        const out = await dit.forward(xIn, get(io, "cond.t").data[0]!, cross, tap);
        // every stored tensor but the inputs was compared; only the padded context is not stored
        const stored = [...io.keys()].map((k) => k.slice("cond.".length)).filter((k) => !INPUTS.includes(k));
        expect(Object.keys(errors).sort()).toEqual(stored.sort());
        expect(notStored).toEqual(["context_padded"]);
        console.log(`dit_i2v ${layout} on ${tb.label}: max abs err per tensor ${JSON.stringify(errors)}`);
        be.free(x, y, xIn, out);
        dit.freeCross(cross);
        dit.free();
      });
    }

    test("i2v_cond: the conditional and unconditional calls of all three guided steps, singly and as a batch of two", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be, "diffusers");
      const clip = get(cond, "clip_fea").data; // cond and uncond share the image features and y
      const crosses = [await dit.crossAttnKV(get(cond, "context").data, undefined, clip), await dit.crossAttnKV(get(cond, "context_null").data, undefined, clip)];
      const y = upload(be, cond, "y");
      const errors: Record<string, number> = {};
      const check = (name: string, got: Float32Array) => {
        const r = closeTo(got, get(cond, name).data, atol, rtol);
        errors[name] = Math.max(errors[name] ?? 0, +r.maxAbs.toExponential(2));
        expect(r.ok).toBe(true);
      };
      for (let step = 0; step < 3; step++) {
        const x = upload(be, cond, `step${step}.latent_in`), xIn = dit.withCondition(x, y);
        const t = get(cond, `step${step}.t`).data[0]!;
        for (const [i, which] of ["cond", "uncond"].entries()) {
          const out = await dit.forward(xIn, t, crosses[i]!);
          check(`step${step}.noise_pred_${which}`, await be.download(out));
          be.free(out);
        }
        be.free(x, xIn);
      }
      // step 0 again, both streams in one forward: a fresh one-chunk cache over all three latent
      // frames is the bidirectional forward, and stream i attends to crosses[i] (text and image)
      const [, F, H, W] = get(cond, "noise").shape as [number, number, number, number];
      const batched = new CausalWanDiT(dit, { chunkFrames: F, windowFrames: F, sinkFrames: 0, height: H, width: W, batch: 2 });
      const stacked = dit.stackCross(crosses);
      const x = upload(be, cond, "step0.latent_in"), xIn = dit.withCondition(x, y);
      const both = (await batched.forwardChunk(xIn, get(cond, "step0.t").data[0]!, stacked))!;
      expect(both.shape).toEqual([2, 16, F, H, W]);
      const host = await be.download(both);
      check("step0.noise_pred_cond", host.subarray(0, host.length / 2));
      check("step0.noise_pred_uncond", host.subarray(host.length / 2));
      console.log(`i2v_cond DiT calls on ${tb.label}: max abs err ${JSON.stringify(errors)}`);
      be.free(x, xIn, y, both);
      batched.free();
      for (const c of [...crosses, stacked]) dit.freeCross(c);
      dit.free();
    });

    test("an i2v DiT refuses a conditioning without image features and inputs of the wrong width", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be, "wan");
      await expect(dit.crossAttnKV(get(io, "cond.context").data)).rejects.toThrow("an image-to-video DiT needs the CLIP features of the conditioning image");
      await expect(dit.crossAttnKV(get(io, "cond.context").data, undefined, new Float32Array(50))).rejects.toThrow("image features of 50 values are not rows of the CLIP width 48");
      const x = upload(be, io, "cond.x");
      expect(() => dit.withCondition(x, x)).toThrow("latent [16,3,6,8] and condition [16,3,6,8] do not make the [36, F, H, W] input");
      const cross = await dit.crossAttnKV(get(io, "cond.context").data, undefined, get(io, "cond.clip_fea").data);
      await expect(dit.forward(x, 999, cross)).rejects.toThrow("latent [16,3,6,8] has 16 channels; the DiT takes 36");
      be.free(x);
      dit.freeCross(cross);
      dit.free();
    });
  });
}
