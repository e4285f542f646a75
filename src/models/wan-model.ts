// Everything a Wan pipeline runs, loaded from a resolved checkpoint onto one backend: tokenizer +
// umT5 (as a WanTextEncoder), the DiT (with a LoRA merged in when one is given), the VAE decoder and,
// for a model that starts from a client's image, the VAE encoder. The components are checked against
// each other here, so a mismatched checkpoint fails at start.
import type { Backend } from "../runtime/backend.ts";
import type { WanCheckpoint } from "./checkpoint.ts";
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
  /** The VAE's encoder, loaded only for a model that starts from a client's image (kino.first_frame_conditioning). */
  vaeEncoder: WanVaeEncoder | null;
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

export async function loadWanModel(backend: Backend, ckpt: WanCheckpoint, opts: LoadWanOptions = {}): Promise<WanModel> {
  const { dit: ditC, textEncoder: t5C, vae: vaeC } = ckpt;
  if (ditC.config.kind !== "t2v") {
    const what = ditC.config.kind === "i2v" ? "an image-to-video (i2v)" : "a text-image-to-video (ti2v)";
    throw new CheckpointError(`${ckpt.root}: ${what} checkpoint; only the text-to-video pipeline is served so far`);
  }
  if (ditC.config.textDim !== t5C.config.dim) {
    throw new CheckpointError(`${ckpt.root}: transformer text_dim ${ditC.config.textDim} ≠ text encoder width ${t5C.config.dim}`);
  }
  if (ditC.config.inDim !== vaeC.config.zDim || ditC.config.outDim !== vaeC.config.zDim) {
    throw new CheckpointError(`${ckpt.root}: transformer channels ${ditC.config.inDim}/${ditC.config.outDim} ≠ VAE z_dim ${vaeC.config.zDim}`);
  }
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
    const dit = await WanDiT.load(ditReader, ditC.config);
    loaded.push(dit);
    ditReader.finish();
    lora?.assertAllUsed();
    const vaeReader = new WeightReader(backend, vaeC.table, { component: "vae", rename: vaeC.rename, fileName: vaeC.fileName });
    const vae = await WanVaeDecoder.load(vaeReader, vaeC.config);
    loaded.push(vae);
    let vaeEncoder: WanVaeEncoder | null = null;
    if (ckpt.kino.firstFrameConditioning) {
      vaeEncoder = await WanVaeEncoder.load(vaeReader, vaeC.config);
      loaded.push(vaeEncoder);
    } else {
      // text-to-video never encodes pixels; the encoder half stays on disk
      vaeReader.ignore((n) => n.startsWith("encoder.") || n.startsWith("conv1."));
    }
    vaeReader.finish();
    return {
      checkpoint: ckpt,
      backend,
      text: new WanTextEncoder(tokenizer, umt5, ditC.config.textLen),
      dit,
      vae,
      vaeEncoder,
      strides: vaeStrides(vaeC.config),
      free: () => loaded.forEach((m) => m.free()),
    };
  } catch (err) {
    loaded.forEach((m) => m.free());
    throw err;
  }
}
