// WanTransformer3D against goldens/dit_a (16 channels) and dit_b (4 channels), both key layouts, every
// intermediate the goldens store (time embeddings, context embedding, patch conv, block sub-layers,
// head), two grids (square 3×8×8 at t = 937.5, non-square 2×6×10 at t = 250) on every backend.
import { describe, expect, test } from "bun:test";
import { parseDitConfig } from "../../src/models/configs.ts";
import { ditNameToDiffusers, ditNameToWan } from "../../src/models/key-maps.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { WanDiT } from "../../src/models/wan-dit.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

test("diffusers ↔ Wan key maps match the conversion table for all 69 keys", async () => {
  for (const v of ["dit_a", "dit_b"]) {
    const map: Record<string, string> = (await goldenJson(v, "config.json")).key_map_wan_to_diffusers;
    expect(Object.keys(map).length).toBe(69);
    for (const [wan, diffusers] of Object.entries(map)) {
      expect(ditNameToWan(diffusers)).toBe(wan);
      expect(ditNameToDiffusers(wan)).toBe(diffusers);
    }
  }
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`WanDiT on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    for (const variant of ["dit_a", "dit_b"]) {
      for (const [layout, file] of [["wan", "weights.safetensors"], ["diffusers", "weights_diffusers.safetensors"]] as const) {
        test(`${variant}, ${layout} keys: every intermediate of both cases`, async () => {
          const be = tb.backend!;
          const json = await goldenJson(variant, "config.json");
          const cfg = parseDitConfig(json, `${variant}/config.json`, json.text_len);
          const reader = new WeightReader(be, await openTensorTable(goldenPath(variant, file)), {
            component: "transformer", rename: layout === "diffusers" ? ditNameToWan : undefined,
          });
          const dit = await WanDiT.load(reader, cfg);
          reader.finish();
          const io = await loadGolden(variant, "io.safetensors");
          const { atol, rtol } = tolerance(tb.label);
          for (const c of ["sq", "nsq"]) {
            const errors: Record<string, number> = {};
            const check = async (name: string, t: { numel: number }, got: Float32Array) => {
              const want = get(io, `${c}.${name}`).data;
              expect(got.length).toBe(want.length);
              const r = closeTo(got, want, atol, rtol);
              errors[name] = +r.maxAbs.toExponential(2);
              if (!r.ok) throw new Error(`${c}.${name}: max abs err ${r.maxAbs}`);
            };
            const tap = async (name: string, t: any) => check(name, t, await be.download(t));
            const cross = await dit.crossAttnKV(get(io, `${c}.context`).data, tap);
            const x = be.upload(get(io, `${c}.x`).data, get(io, `${c}.x`).shape);
            const out = await dit.forward(x, get(io, `${c}.t`).data[0]!, cross, tap);
            expect(Object.keys(errors).length).toBe(14); // every stored tensor but the inputs x, t, context
            const [worst, err] = Object.entries(errors).reduce((a, e) => (e[1] > a[1] ? e : a));
            console.log(`${variant} ${layout} ${c} on ${tb.label}: max abs err out ${errors.out}, worst of 14 tensors ${err} (${worst})`);
            be.free(x, out);
            dit.freeCross(cross);
          }
          dit.free();
        });
      }
    }
  });
}
