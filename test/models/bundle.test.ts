// Packing a model folder into one embeddable file and unpacking it (once) at run time.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packBundle, unpackBundle } from "../../src/models/bundle.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";

test("a packed checkpoint unpacks to the same files and loads", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-bundle-src-"));
  const out = join(mkdtempSync(join(tmpdir(), "kino-bundle-")), "m.bundle");
  try {
    await makeTinyCheckpoint(dir, { seed: 11 });
    await packBundle(dir, out);
    const unpacked = await unpackBundle(Bun.file(out));
    for (const file of ["model_index.json", "transformer/config.json", "vae/config.json", "tokenizer/tokenizer.json", "transformer/diffusion_pytorch_model.safetensors"]) {
      expect(readFileSync(join(unpacked, file))).toEqual(readFileSync(join(dir, file)));
    }
    // Unpacking again reuses the folder keyed by content.
    expect(await unpackBundle(Bun.file(out))).toBe(unpacked);
    const { pipeline } = await loadPipeline({ type: "init", modelPath: unpacked, device: "cpu", numGpus: 1, lora: null });
    expect(pipeline.card.supports_streaming).toBe(true);
    rmSync(unpacked, { recursive: true, force: true });
    expect(existsSync(unpacked)).toBe(false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
