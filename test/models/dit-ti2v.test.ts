// The Wan2.2 text-image-to-video DiT (one timestep per token) against goldens/dit_ti2v (README §10):
// every recorded tensor with one time-embedding row per token (the original's shapes), the same with
// equal timesteps grouped (one row per frame here: frame 0 at t = 0, the rest at t), and the
// conditional and unconditional calls of the three guided steps of goldens/ti2v_cond (§11).
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { WanDiT, timestepGroups } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_ti2v", "config.json");
const io = await loadGolden("dit_ti2v", "io.safetensors");
const pipeline = await loadGolden("ti2v_cond", "io.safetensors");
const INPUTS = ["x", "t", "context"];
/** Tensors with one row per time-embedding group: [G, ...]. */
const PER_GROUP = ["sin_emb", "e", "e0"];

async function loadDit(be: Backend): Promise<WanDiT> {
  const table = await openTensorTable(goldenPath("dit_ti2v", "weights.safetensors"));
  const shapes = new Map([...table.tensors].map(([n, info]) => [n, info.shape] as const));
  const cfg = parseDitConfig(json.wan_original_config, "dit_ti2v/wan config", undefined, shapes);
  expect(cfg).toMatchObject({ kind: "ti2v", imageDim: null, inDim: 48, outDim: 48, textLen: 16 });
  const reader = new WeightReader(be, table, { component: "transformer" });
  const dit = await WanDiT.load(reader, cfg);
  reader.finish();
  return dit;
}

/** Rows of a [G, ...] tensor, each repeated for its run of L/G tokens: [L, ...]. */
function expandRows(data: Float32Array, groups: number, tokens: number): Float32Array {
  const row = data.length / groups, run = tokens / groups, out = new Float32Array(tokens * row);
  for (let l = 0; l < tokens; l++) out.set(data.subarray(Math.floor(l / run) * row, (Math.floor(l / run) + 1) * row), l * row);
  return out;
}

test("timestepGroups: the fewest equal runs the per-token timesteps are constant over", () => {
  expect(timestepGroups([5, 5, 5, 5, 5, 5])).toEqual([5]);
  expect(timestepGroups([0, 0, 7, 7, 7, 7])).toEqual([0, 7, 7]); // runs must be equal: 3 runs of 2
  expect(timestepGroups([0, 0, 0, 9, 9, 9])).toEqual([0, 9]);
  expect(timestepGroups([1, 2, 2, 2])).toEqual([1, 2, 2, 2]);
  expect(timestepGroups([...new Array(6).fill(0), ...new Array(12).fill(999)])).toEqual([0, 999, 999]);
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`ti2v WanDiT on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    const { atol, rtol } = tolerance(tb.label);
    const tokenT = [...get(io, "cond.t").data];
    const L = tokenT.length;

    for (const mode of ["per token", "grouped"] as const) {
      test(`dit_ti2v, ${mode}: every tensor the golden records`, async () => {
        const be = tb.backend!;
        const dit = await loadDit(be);
        const errors: Record<string, number> = {};
        const rows: Record<string, number> = {};
        const tap = async (name: string, t: Tensor) => {
          const want = get(io, `cond.${name}`).data;
          let got = await be.download(t);
          if (PER_GROUP.includes(name)) {
            rows[name] = t.shape[0]!;
            got = expandRows(got, t.shape[0]!, L);
          }
          expect(got.length).toBe(want.length);
          const r = closeTo(got, want, atol, rtol);
          errors[name] = +r.maxAbs.toExponential(2);
          if (!r.ok) throw new Error(`${name}: max abs err ${r.maxAbs}`);
        };
        const cross = await dit.crossAttnKV(get(io, "cond.context").data, tap);
        const x = be.upload(get(io, "cond.x").data, get(io, "cond.x").shape);
        // "per token" drives the general path: one embedding row per token, as the original computes
        const out = mode === "per token" ? await dit.forwardSequence(x, tokenT, cross, {}, tap) : await dit.forwardPerToken(x, tokenT, cross, tap);
        const stored = [...io.keys()].map((k) => k.slice("cond.".length)).filter((k) => !INPUTS.includes(k));
        expect(Object.keys(errors).sort()).toEqual(stored.sort());
        // grouped: frame 0's six tokens at t = 0 and the two other frames at 999 → one row per frame
        expect(rows).toEqual(Object.fromEntries(PER_GROUP.map((n) => [n, mode === "per token" ? L : 3])));
        console.log(`dit_ti2v ${mode} on ${tb.label}: max abs err per tensor ${JSON.stringify(errors)}`);
        be.free(x, out);
        dit.freeCross(cross);
        dit.free();
      });
    }

    test("ti2v_cond: the conditional and unconditional calls of all three guided steps (per-token t)", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const crosses = [await dit.crossAttnKV(get(pipeline, "context").data), await dit.crossAttnKV(get(pipeline, "context_null").data)];
      const errors: Record<string, number> = {};
      for (let step = 0; step < 3; step++) {
        const x = be.upload(get(pipeline, `step${step}.latent_in`).data, get(pipeline, `step${step}.latent_in`).shape);
        const t = [...get(pipeline, `step${step}.t_tokens`).data];
        expect(new Set(t.slice(0, 6))).toEqual(new Set([0])); // frame 0 (the image latent) stays at t = 0
        for (const [i, which] of ["cond", "uncond"].entries()) {
          const out = await dit.forwardPerToken(x, t, crosses[i]!);
          const name = `step${step}.noise_pred_${which}`;
          const r = closeTo(await be.download(out), get(pipeline, name).data, atol, rtol);
          errors[name] = +r.maxAbs.toExponential(2);
          expect(r.ok).toBe(true);
          be.free(out);
        }
        be.free(x);
      }
      console.log(`ti2v_cond DiT calls on ${tb.label}: max abs err ${JSON.stringify(errors)}`);
      for (const c of crosses) dit.freeCross(c);
      dit.free();
    });

    test("per-token timesteps must cover the grid, and a ti2v DiT takes no image features", async () => {
      const be = tb.backend!;
      const dit = await loadDit(be);
      const cross = await dit.crossAttnKV(get(io, "cond.context").data);
      const x = be.upload(get(io, "cond.x").data, get(io, "cond.x").shape);
      await expect(dit.forwardPerToken(x, tokenT.slice(1), cross)).rejects.toThrow("17 timesteps for the 18 tokens of a 3x2x3 grid");
      await expect(dit.crossAttnKV(get(io, "cond.context").data, undefined, new Float32Array(48))).rejects.toThrow("a ti2v DiT without an image branch takes no image features");
      be.free(x);
      dit.freeCross(cross);
      dit.free();
    });
  });
}
