// The DiT with bf16 activations between its tensor-core ops (wan-dit.ts header; what CUDA runs by
// default), on every backend: the wasm backend runs the same roundings through f32 copies, so the
// numerics CUDA gets are checked here without a GPU. Against the goldens (dit_b, both grids, every
// intermediate) within a stated bound; chunk by chunk through a bf16 KV
// cache against the f32-activation model (the x0 prediction within a stated bound); the buffers
// really are bf16; the operator's switch (KINO_DIT_ACTIVATIONS).
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { ditActivations } from "../../src/models/dit-activations.ts";
import { SeededRandom } from "../../src/models/random.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { CausalWanDiT } from "../../src/models/wan-dit-causal.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { testBackends } from "./helpers/backends.ts";
import { get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const json = await goldenJson("dit_b", "config.json");
const io = await loadGolden("dit_b", "io.safetensors");
/** Every intermediate of the golden forward: max|got − golden| ≤ this · max|golden|. bf16 keeps 8 bits
 *  (2⁻⁸ ≈ 3.9e-3 per rounding); measured on wasm: ≤ 4.8e-3 over dit_a and dit_b's taps (the
 *  attention and FFN sub-layer outputs), so the bound leaves about 2× for CUDA's own roundings (P in
 *  bf16, f32 sums in another order). */
export const GOLDEN_REL_BOUND = 1e-2;
/** The bound on max|x0(bf16) − x0(f32)| / max|x0(f32)| over a stream's chunks (tools/bench/dit-graph.ts
 *  holds the Wan-1.3B-size model on the GPU to the same bound). */
export const X0_REL_BOUND = 1e-2;

async function loadDit(be: Backend, activations: "f32" | "bf16"): Promise<WanDiT> {
  const reader = new WeightReader(be, await openTensorTable(goldenPath("dit_b", "weights.safetensors")), { component: "transformer" });
  return WanDiT.load(reader, parseDitConfig(json, "dit_b/config.json", json.text_len), { activations });
}

const relErr = (got: Float32Array, want: Float32Array) => {
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) {
    d = Math.max(d, Math.abs(got[i]! - want[i]!));
    m = Math.max(m, Math.abs(want[i]!));
  }
  return d / m;
};

test("KINO_DIT_ACTIVATIONS chooses f32 or bf16 over the backend's preference, and refuses anything else", () => {
  expect(ditActivations({ activationDtype: "bf16" }, {}, true)).toBe("bf16");
  expect(ditActivations({ activationDtype: "bf16" }, {}, false)).toBe("f32"); // until a device run verifies bf16
  expect(ditActivations({ activationDtype: "f32" }, { KINO_DIT_ACTIVATIONS: "" })).toBe("f32");
  expect(ditActivations({ activationDtype: "bf16" }, { KINO_DIT_ACTIVATIONS: "f32" })).toBe("f32");
  expect(ditActivations({ activationDtype: "f32" }, { KINO_DIT_ACTIVATIONS: "bf16" })).toBe("bf16");
  expect(() => ditActivations({ activationDtype: "f32" }, { KINO_DIT_ACTIVATIONS: "fp16" })).toThrow('KINO_DIT_ACTIVATIONS must be f32 or bf16, got "fp16"');
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`DiT with bf16 activations on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    test(`dit_b: every intermediate of both grids within ${GOLDEN_REL_BOUND} (relative to its max) of the golden`, async () => {
      const be = tb.backend!;
      const dit = await loadDit(be, "bf16");
      for (const c of ["sq", "nsq"]) {
        const errors: Record<string, number> = {};
        const tap = async (name: string, t: { dtype: string }) => {
          const got = await be.download(t as never), want = get(io, `${c}.${name}`).data;
          expect(got.length).toBe(want.length);
          const e = relErr(got, want);
          errors[name] = e;
          if (!(e <= GOLDEN_REL_BOUND)) throw new Error(`${c}.${name} (${t.dtype}): max abs err ${e.toExponential(2)} of its max`);
        };
        const cross = await dit.crossAttnKV(get(io, `${c}.context`).data, tap);
        expect(cross.k[0]!.dtype).toBe("bf16");
        const x = be.upload(get(io, `${c}.x`).data, get(io, `${c}.x`).shape);
        const out = await dit.forward(x, get(io, `${c}.t`).data[0]!, cross, tap);
        expect(out.dtype).toBe("f32"); // the prediction (the latent's update) stays f32
        expect(Object.keys(errors).length).toBe(14);
        const [worst, err] = Object.entries(errors).reduce((a, e) => (e[1] > a[1] ? e : a));
        console.log(`dit_b ${c}, bf16 activations on ${tb.label}: max rel err out ${errors.out!.toExponential(2)}, worst of 14 tensors ${err.toExponential(2)} (${worst})`);
        expect(errors.out!).toBeGreaterThan(0); // the bf16 model did round
        be.free(x, out);
        dit.freeCross(cross);
      }
      dit.free();
    });

    test(`a stream through a bf16 KV cache: x0 within ${X0_REL_BOUND} (relative) of the f32-activation model's, every step of 4 chunks`, async () => {
      const be = tb.backend!;
      const f32 = await loadDit(be, "f32"), bf16 = f32.withActivations("bf16");
      const rng = new SeededRandom(3);
      const context = get(io, "sq.context").data;
      const opts = { chunkFrames: 1, windowFrames: 3, sinkFrames: 1, height: 8, width: 8 };
      const models = [[f32, new CausalWanDiT(f32, opts)], [bf16, new CausalWanDiT(bf16, opts)]] as const;
      const crosses = await Promise.all(models.map(([d]) => d.crossAttnKV(context)));
      expect(models[1][1].cache.k[0]!.dtype).toBe("bf16");
      expect(models[1][1].cache.k[0]!.bytes * 2).toBe(models[0][1].cache.k[0]!.bytes);
      const sigmas = [1, 0.75, 0.5, 0.25];
      let worst = 0, differs = false;
      for (let chunk = 0; chunk < 4; chunk++) {
        const noise = rng.normal(4 * 1 * 8 * 8);
        const xs = models.map(() => be.upload(noise, [4, 1, 8, 8]));
        for (const sigma of sigmas) {
          const x0: Float32Array[] = [];
          for (const [i, [, m]] of models.entries()) {
            const v = (await m.forwardChunk(xs[i]!, sigma * 1000, crosses[i]!))!;
            const x = await be.download(xs[i]!), vv = await be.download(v);
            x0.push(x.map((xi, j) => xi - sigma * vv[j]!)); // flow matching: x0 = x − σ·v
            be.axpby(xs[i]!, xs[i]!, v, 1, -0.25); // the same Euler step on each model's own latent
            be.free(v);
          }
          const e = relErr(x0[1]!, x0[0]!);
          differs ||= e > 0;
          worst = Math.max(worst, e);
        }
        for (const [i, [, m]] of models.entries()) await m.forwardChunk(xs[i]!, 0, crosses[i]!, true);
        be.free(...xs);
      }
      console.log(`x0 of bf16 vs f32 activations over 4 chunks × 4 steps on ${tb.label}: max rel err ${worst.toExponential(2)} (bound ${X0_REL_BOUND})`);
      expect(differs).toBe(true); // the bf16 model did round
      expect(worst).toBeLessThanOrEqual(X0_REL_BOUND);
      for (const [i, [d, m]] of models.entries()) {
        m.free();
        d.freeCross(crosses[i]!);
      }
      bf16.free();
      f32.free();
    });
  });
}
