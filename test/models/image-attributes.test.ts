// kino-tiny's image reader on the runtime against PyTorch: the exported prompt_extender/ reads three
// frames (one at each native size, the last with two objects) as tools/train/prompt_extender.py's
// network does (test/fixtures/prompt-extender-readings.json, written by its --export).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ImageAttributeReader, parseImageReaderConfig } from "../../src/models/image-attributes.ts";
import { openTensorTable } from "../../src/models/safetensors.ts";
import { WeightReader } from "../../src/models/weights.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { openBackend } from "../../src/runtime/device.ts";
import { CheckpointError } from "../../src/models/safetensors.ts";

const DIR = join(import.meta.dir, "../../models/kino-tiny/prompt_extender");
const CASES = join(import.meta.dir, "../fixtures/prompt-extender-readings.json");

interface Case {
  width: number;
  height: number;
  rgb_base64: string;
  readings: Record<string, { label: string; logits: number[] }>;
}

const cases: Case[] = existsSync(CASES) ? await Bun.file(CASES).json() : [];
let backend: Backend;
let reader: ImageAttributeReader;

beforeAll(async () => {
  if (!existsSync(DIR)) return;
  backend = await openBackend("cpu");
  const config = parseImageReaderConfig(await Bun.file(join(DIR, "config.json")).json(), "config.json");
  const weights = new WeightReader(backend, await openTensorTable(join(DIR, "model.safetensors")), { component: "prompt_extender" });
  reader = await ImageAttributeReader.load(weights, config);
  weights.finish();
});
afterAll(() => {
  reader?.free();
  backend?.dispose();
});

describe.skipIf(!existsSync(DIR))("kino-tiny's image reader", () => {
  for (const c of cases) {
    test(`${c.width}x${c.height}: the choices and logits PyTorch gives`, async () => {
      const rgb = Buffer.from(c.rgb_base64, "base64");
      const pixels = new Float32Array(3 * c.width * c.height);
      for (let i = 0; i < c.width * c.height; i++) for (let ch = 0; ch < 3; ch++) pixels[ch * c.width * c.height + i] = rgb[i * 3 + ch]! / 127.5 - 1;
      const image = backend.upload(pixels, [3, c.height, c.width]);
      try {
        const seen = await reader.read(image);
        const logits = await reader.logits(image);
        for (const [attribute, want] of Object.entries(c.readings)) {
          const key = attribute as keyof typeof seen;
          expect(seen[key].label, attribute).toBe(want.label);
          const got = logits[key];
          expect(got.length, attribute).toBe(want.logits.length);
          // f32 through the same convolutions, GEMMs and softmax in another order: agreement to ~1e-3
          const worst = Math.max(...want.logits.map((v, i) => Math.abs(v - got[i]!) / Math.max(1, Math.abs(v))));
          expect(worst, `${attribute}: ${[...got].map((v) => v.toFixed(3))} against ${want.logits}`).toBeLessThan(2e-3);
        }
      } finally {
        backend.free(image);
      }
    });
  }

  test("a config that does not fit its weights or its phrases is refused, naming the key", () => {
    const good = { widths: [8, 16], strides: [2, 1], dim: 16, heads: { color: ["red"], shape: ["circle"], background: ["black"], count: ["one", "two"] }, background_solid: "on {} background", background_special: {} };
    expect(() => parseImageReaderConfig(good, "c.json")).not.toThrow();
    expect(() => parseImageReaderConfig({ ...good, dim: 8 }, "c.json")).toThrow(/'dim' 8 ≠ the last width 16/);
    expect(() => parseImageReaderConfig({ ...good, strides: [2] }, "c.json")).toThrow(CheckpointError);
    expect(() => parseImageReaderConfig({ ...good, background_solid: "on a background" }, "c.json")).toThrow(/background_solid/);
    expect(() => parseImageReaderConfig({ ...good, heads: { ...good.heads, shape: [] } }, "c.json")).toThrow(/heads\.shape/);
  });
});
