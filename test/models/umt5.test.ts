// The umT5 encoder against goldens/t5 in both key layouts (Wan's and transformers' UMT5EncoderModel),
// with the intermediate results (embedding, per-layer position bias, block outputs) on every backend.
import { describe, expect, test } from "bun:test";
import { parseT5Config } from "../../src/models/configs.ts";
import { t5NameToHf, t5Renamer } from "../../src/models/key-maps.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { UMT5Encoder } from "../../src/models/umt5.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { t5BucketTable } from "../../src/runtime/op-params.ts";
import { testBackends, tolerance } from "./helpers/backends.ts";
import { closeTo, get, goldenJson, goldenPath, loadGolden } from "./helpers/goldens.ts";

const cfgJson = await goldenJson("t5", "config.json");
const cfg = parseT5Config(cfgJson.hf_UMT5Config_equivalent, "t5/config.json");
const io = await loadGolden("t5", "io.safetensors");

test("key map: the goldens' Wan ↔ transformers UMT5 table, both ways", () => {
  const map: Record<string, string> = cfgJson.key_map_wan_to_hf_umt5;
  const toWan = t5Renamer(Object.values(map));
  for (const [wan, hf] of Object.entries(map)) {
    expect(t5NameToHf(wan)).toBe(hf);
    expect(toWan(hf)).toBe(wan);
  }
});

test("bucket table: 32 bidirectional buckets, max distance 128 (umt5-xxl's)", () => {
  const rel = get(io, "bucket_table.rel_pos").data, want = get(io, "bucket_table.bucket").data;
  const table = t5BucketTable(512, 512, { numBuckets: 32, maxDistance: 128, bidirectional: true });
  expect([...rel].map((r) => table[r + 511]!)).toEqual([...want]);
});

for (const tb of await testBackends()) {
  describe.skipIf(!tb.backend)(`umT5 on ${tb.label}${tb.skip ? ` (skipped: ${tb.skip})` : ""}`, () => {
    for (const [layout, file] of [["wan", "weights.safetensors"], ["hf", "weights_hf_umt5.safetensors"]] as const) {
      test(`${layout} key layout: intermediates and output on the real tokens`, async () => {
        const be = tb.backend!;
        const table = await openTensorTable(goldenPath("t5", file));
        const reader = new WeightReader(be, table, { component: "text_encoder", rename: t5Renamer([...table.tensors.keys()]) });
        const enc = await UMT5Encoder.load(reader, cfg);
        reader.finish();
        const ids = Int32Array.from(get(io, "real.ids").data);
        const { atol, rtol } = tolerance(tb.label);
        const errors: Record<string, number> = {};
        const check = async (name: string, got: Float32Array) => {
          const r = closeTo(got, get(io, `real.${name}`).data, atol, rtol);
          errors[name] = r.maxAbs;
          expect(r.ok).toBe(true);
        };
        const out = await enc.encode(ids, async (name, t) => check(name, await be.download(t)));
        await check("out", await be.download(out));
        // padding is never run, yet a padded golden's real rows are what we produce
        const got = await be.download(out);
        expect(closeTo(got, get(io, "pad512.out").data.subarray(0, got.length), atol, rtol).ok).toBe(true);
        console.log(`umT5 ${layout} on ${tb.label}: max abs err`, JSON.stringify(Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, +v.toExponential(2)]))));
        be.free(out);
        enc.free();
      });
    }
  });
}
