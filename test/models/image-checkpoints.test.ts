// Diffusers-layout image checkpoints as tools/make-tiny-checkpoint.ts writes them: the Wan2.2 VAE it
// writes has exactly the golden Wan2.2 VAE's tensor names and order; an i2v folder finds its CLIP
// tower under image_encoder/ and says so when it is missing; a TI2V checkpoint without a "kino"
// object gets Wan2.2 TI2V-5B's own settings (1280×704 or 704×1280, 121 frames at 24 fps, 50 steps,
// shift 5); loading each kind builds its pipeline with the card it should have; and an image reader
// (prompt_extender/) beside a model that takes no image is refused.
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveCheckpoint } from "../../src/models/checkpoint.ts";
import { parseVaeConfig } from "../../src/models/configs.ts";
import { readSafetensorsHeader } from "../../src/models/safetensors.ts";
import { vae22Parameters } from "../../src/models/wan-vae22-layout.ts";
import { loadPipeline } from "../../src/pipelines/load.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";
import { goldenJson, goldenPath } from "./helpers/goldens.ts";

await buildCpuWasm();
const root = mkdtempSync(join(tmpdir(), "kino-image-ckpt-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("vae22Parameters lists the golden Wan2.2 VAE's tensors, names, shapes and order", async () => {
  const cfg = parseVaeConfig((await goldenJson("vae22", "config.json")).wan_WanVAE__args, "vae22/config.json");
  const golden = [...(await readSafetensorsHeader(goldenPath("vae22", "weights.safetensors"))).tensors].map(([n, i]) => `${n} [${i.shape}]`);
  expect(vae22Parameters(cfg).map((p) => `${p.name} [${p.shape}]`)).toEqual(golden);
});

describe("an i2v checkpoint in the diffusers layout", () => {
  test("finds image_encoder/ (transformers names, its config), and names what is missing without it", async () => {
    const dir = join(root, "i2v");
    await makeTinyCheckpoint(dir, { kind: "i2v" });
    const ckpt = await resolveCheckpoint(dir);
    expect(ckpt.dit.config).toMatchObject({ kind: "i2v", inDim: 12, outDim: 4, imageDim: 32, textLen: 512 });
    expect(ckpt.imageEncoder!.config).toMatchObject({ dim: 32, numHeads: 2, numLayers: 2, usedLayers: 1, imageSize: 28 });
    expect(ckpt.imageEncoder!.rename("vision_model.encoder.layers.1.self_attn.q_proj.weight")).toBe("visual.transformer.1.attn.to_q.weight");
    rmSync(join(dir, "image_encoder"), { recursive: true });
    await expect(resolveCheckpoint(dir)).rejects.toThrow(`${dir}: an image-to-video (i2v) checkpoint needs the CLIP image encoder: no models_clip_*.safetensors or image_encoder/ found`);
  });
});

describe("a TI2V checkpoint", () => {
  test("without a kino object: the release's sizes, length, frame rate and schedule", async () => {
    const dir = join(root, "ti2v-release");
    await makeTinyCheckpoint(dir, { kind: "ti2v", noKino: true });
    const { kino, dit, vae } = await resolveCheckpoint(dir);
    expect(dit.config).toMatchObject({ kind: "ti2v", inDim: 48, outDim: 48 });
    expect(vae.config.wan22).toEqual({ decoderDim: 6 });
    expect(kino).toMatchObject({ width: 1280, height: 704, fps: 24, numFrames: 121, steps: 50, sampler: "unipc", shift: 5, guidance: 5, nativeSizes: ["1280x704", "704x1280"] });
  });

  test("each kind loads into its pipeline with its card", async () => {
    const cards: Record<string, unknown> = {};
    for (const kind of ["i2v", "ti2v"] as const) {
      const dir = join(root, `load-${kind}`);
      await makeTinyCheckpoint(dir, { kind });
      const { pipeline } = await loadPipeline({ modelPath: dir, device: "cpu", numGpus: 1, lora: null });
      cards[kind] = { name: pipeline.constructor.name, tasks: pipeline.card.tasks, images: pipeline.card.max_references.image, streaming: pipeline.card.supports_streaming };
    }
    expect(cards).toEqual({
      i2v: { name: "WanI2VPipeline", tasks: ["i2v"], images: 1, streaming: false },
      ti2v: { name: "WanTI2VPipeline", tasks: ["t2v", "i2v"], images: 1, streaming: false },
    });
  });
});

test("a prompt_extender/ beside a text-to-video model that takes no image is refused, saying why", async () => {
  const dir = join(root, "t2v-with-reader");
  await makeTinyCheckpoint(dir);
  cpSync(join(import.meta.dir, "../../models/kino-tiny/prompt_extender"), join(dir, "prompt_extender"), { recursive: true });
  expect((await resolveCheckpoint(dir)).promptExtender!.config.classes.shape).toEqual(["circle", "square", "triangle", "ring", "star"]);
  await expect(loadPipeline({ modelPath: dir, device: "cpu", numGpus: 1, lora: null })).rejects.toThrow(
    "a prompt_extender/ reads a given image, but this text-to-video model takes none (kino.first_frame_conditioning is off)",
  );
});
