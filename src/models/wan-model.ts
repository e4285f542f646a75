// Everything a Wan pipeline runs, loaded from a resolved checkpoint onto one backend: tokenizer +
// umT5 (as a WanTextEncoder), the DiT (with a LoRA merged in when one is given), the VAE decoder and,
// for a model that starts from a client's image (image-to-video, text-image-to-video, or kino-tiny's
// first-frame conditioning), the VAE encoder; an image-to-video model also gets its CLIP image tower,
// and a checkpoint with a prompt_extender/ its image reader (image-attributes.ts).
// The components are checked against each other here, so a mismatched checkpoint fails at start.
import type { Backend } from "../runtime/backend.ts";
import type { WanCheckpoint } from "./checkpoint.ts";
import { ClipVisionEncoder } from "./clip-vision.ts";
import { ditActivations } from "./dit-activations.ts";
import { I2V_MASK_CHANNELS } from "./dit-kind.ts";
import { ImageAttributeReader } from "./image-attributes.ts";
import { vaeStrides } from "./configs.ts";
import { LoraAdapter } from "./lora.ts";
import { CheckpointError } from "./safetensors.ts";
import { WanTextEncoder } from "./text-encoder.ts";
import { PromptTokenizer } from "./tokenizer.ts";
import { UMT5Encoder } from "./umt5.ts";
import { WanDiT } from "./wan-dit.ts";
import { WanVaeDecoder, WanVaeEncoder } from "./wan-vae.ts";
import { type WeightDtype, WeightReader } from "./weights.ts";

export interface LoadWanOptions {
  lora?: { path: string; strength: number } | null;
  /** Storage of the big matrices; "auto" keeps the file's dtype unless f32 weights would crowd wasm32's 4 GiB. */
  weightDtype?: WeightDtype | "auto";
}

export interface WanModel {
  checkpoint: WanCheckpoint;
  backend: Backend;
  text: WanTextEncoder;
  dit: WanDiT;
  vae: WanVaeDecoder;
  /** The VAE's encoder, loaded only for a model that starts from a client's image (i2v, ti2v,
   *  kino.first_frame_conditioning). */
  vaeEncoder: WanVaeEncoder | null;
  /** The CLIP visual tower of an image-to-video (i2v) model; null otherwise. */
  clip: ClipVisionEncoder | null;
  /** Reads a given frame for prompt extension (prompt-extension.ts); null without a prompt_extender/. */
  imageReader: ImageAttributeReader | null;
  /** Frames per latent frame (time) and pixels per latent pixel (space). */
  strides: { temporal: number; spatial: number };
  free(): void;
}

/** Big f32 checkpoints are stored as bf16 on the wasm backend past this many bytes of matrices. */
const WASM_F32_LIMIT = 2.5 * 2 ** 30;

function chooseDtype(backend: Backend, ckpt: WanCheckpoint, opt: LoadWanOptions["weightDtype"]): WeightDtype {
  if (opt && opt !== "auto") return opt;
  if (backend.name !== "wasm") return "keep";
  let f32Bytes = 0;
  for (const c of [ckpt.dit, ckpt.textEncoder]) for (const t of c.table.tensors.values()) if (t.dtype === "F32") f32Bytes += t.byteLength;
  return f32Bytes > WASM_F32_LIMIT ? "bf16" : "keep";
}

/** The DiT against the text encoder, the VAE and the CLIP tower, per pipeline kind. */
function checkComponents(ckpt: WanCheckpoint): void {
  const { dit: { config: dit }, textEncoder: t5, vae: { config: vae }, imageEncoder: clip, root } = ckpt;
  const fail = (why: string): never => {
    throw new CheckpointError(`${root}: ${why}`);
  };
  if (dit.textDim !== t5.config.dim) fail(`transformer text_dim ${dit.textDim} ≠ text encoder width ${t5.config.dim}`);
  const z = vae.zDim;
  if (dit.kind === "i2v") {
    if (dit.outDim !== z || dit.inDim !== 2 * z + I2V_MASK_CHANNELS) {
      fail(`image-to-video transformer channels ${dit.inDim}/${dit.outDim} ≠ noise + ${I2V_MASK_CHANNELS} mask + conditioning latent / noise for VAE z_dim ${z} (${2 * z + I2V_MASK_CHANNELS}/${z})`);
    }
    if (!clip) fail("an image-to-video (i2v) checkpoint needs the CLIP image encoder");
    if (clip!.config.dim !== dit.imageDim) fail(`the CLIP image encoder's width ${clip!.config.dim} ≠ the transformer's image_dim ${dit.imageDim}`);
  } else if (dit.inDim !== z || dit.outDim !== z) {
    fail(`transformer channels ${dit.inDim}/${dit.outDim} ≠ VAE z_dim ${z}`);
  }
  if (ckpt.promptExtender && dit.kind === "t2v" && !ckpt.kino.firstFrameConditioning) {
    fail("a prompt_extender/ reads a given image, but this text-to-video model takes none (kino.first_frame_conditioning is off)");
  }
  if (dit.kind === "ti2v" && !vae.wan22) fail("a text-image-to-video (ti2v) transformer works on the Wan2.2 VAE's latents; this VAE is Wan2.1's");
  if (dit.kind !== "t2v" && ckpt.kino.causal) fail(`a chunked causal ${dit.kind} transformer is not supported (streaming runs text-to-video models)`);
}

export async function loadWanModel(backend: Backend, ckpt: WanCheckpoint, opts: LoadWanOptions = {}): Promise<WanModel> {
  const { dit: ditC, textEncoder: t5C, vae: vaeC, imageEncoder: clipC } = ckpt;
  checkComponents(ckpt);
  const weightDtype = chooseDtype(backend, ckpt, opts.weightDtype);
  const tokenizer = await PromptTokenizer.load(ckpt.tokenizerJson);
  const lora = opts.lora ? await LoraAdapter.load(opts.lora.path, opts.lora.strength) : undefined;

  const loaded: { free(): void }[] = [];
  try {
    const t5Reader = new WeightReader(backend, t5C.table, { component: "text_encoder", rename: t5C.rename, fileName: t5C.fileName, weightDtype });
    const umt5 = await UMT5Encoder.load(t5Reader, t5C.config);
    loaded.push(umt5);
    t5Reader.finish();
    const ditReader = new WeightReader(backend, ditC.table, { component: "transformer", rename: ditC.rename, fileName: ditC.fileName, weightDtype, patch: lora });
    const dit = await WanDiT.load(ditReader, ditC.config, { activations: ditActivations(backend) });
    loaded.push(dit);
    ditReader.finish();
    lora?.assertAllUsed();
    const vaeReader = new WeightReader(backend, vaeC.table, { component: "vae", rename: vaeC.rename, fileName: vaeC.fileName });
    const vae = await WanVaeDecoder.load(vaeReader, vaeC.config);
    loaded.push(vae);
    let vaeEncoder: WanVaeEncoder | null = null;
    if (ckpt.kino.firstFrameConditioning || ditC.config.kind !== "t2v") {
      vaeEncoder = await WanVaeEncoder.load(vaeReader, vaeC.config);
      loaded.push(vaeEncoder);
    } else {
      // text-to-video never encodes pixels; the encoder half stays on disk
      vaeReader.ignore((n) => n.startsWith("encoder.") || n.startsWith("conv1."));
    }
    vaeReader.finish();
    let clip: ClipVisionEncoder | null = null;
    if (clipC) {
      const clipReader = new WeightReader(backend, clipC.table, { component: "image_encoder", rename: clipC.rename, fileName: clipC.fileName, weightDtype });
      clip = await ClipVisionEncoder.load(clipReader, clipC.config);
      loaded.push(clip);
      clipReader.finish();
    }
    let imageReader: ImageAttributeReader | null = null;
    if (ckpt.promptExtender) {
      const { table, config, rename } = ckpt.promptExtender;
      const reader = new WeightReader(backend, table, { component: "prompt_extender", rename });
      imageReader = await ImageAttributeReader.load(reader, config);
      loaded.push(imageReader);
      reader.finish();
    }
    return {
      checkpoint: ckpt,
      backend,
      text: new WanTextEncoder(tokenizer, umt5, ditC.config.textLen),
      dit,
      vae,
      vaeEncoder,
      clip,
      imageReader,
      strides: vaeStrides(vaeC.config),
      free: () => loaded.forEach((m) => m.free()),
    };
  } catch (err) {
    loaded.forEach((m) => m.free());
    throw err;
  }
}
