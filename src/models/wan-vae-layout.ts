// The Wan-VAE's module structure for a config, every module named in both layouts it ships in:
// - Wan (wan/modules/vae.py, `Wan2.1_VAE.pth`): flat `encoder.downsamples.N` / `decoder.upsamples.N`
//   lists of residual blocks and resamples, `middle.{0,1,2}`, `head.{0,2}`, and the 1×1×1 `conv1` /
//   `conv2` around the latent;
// - diffusers AutoencoderKLWan (`vae/diffusion_pytorch_model.safetensors` of the *-Diffusers
//   releases): `encoder.down_blocks.N` (the same flat list), the decoder grouped per resolution as
//   `decoder.up_blocks.i.resnets.j` + `decoder.up_blocks.i.upsamplers.0`, `mid_block.resnets.{0,1}` +
//   `mid_block.attentions.0`, `conv_in` / `norm_out` / `conv_out`, `quant_conv` / `post_quant_conv`;
//   inside a residual block `norm1, conv1, norm2, conv2, conv_shortcut` for Wan's
//   `residual.{0,2,3,6}` and `shortcut`.
// The loader (wan-vae.ts) builds its stages from this plan, the key map renames a diffusers file onto
// the Wan names the loader asks for, and tools/make-tiny-checkpoint.ts writes the same tensors.
import type { VaeConfig } from "./configs.ts";
import type { ResampleMode } from "./wan-vae-resample.ts";

/** A residual block or a resample of the encoder's down path or the decoder's up path. */
export type VaeStage =
  | { kind: "residual"; wan: string; diffusers: string; cin: number; cout: number }
  | { kind: "resample"; wan: string; diffusers: string; channels: number; mode: ResampleMode };

export interface VaeLayout {
  /** Encoder: conv1 3 → dims[0], the down path, then middle and head at `encoderTop` channels. */
  encoderIn: number;
  encoderStages: VaeStage[];
  encoderTop: number;
  /** Decoder: conv1 zDim → decoderTop, middle at decoderTop, the up path, head at `decoderOut`. */
  decoderTop: number;
  decoderStages: VaeStage[];
  decoderOut: number;
}

export function vaeLayout(cfg: VaeConfig): VaeLayout {
  const { dim, dimMult, numResBlocks, temporalDownsample } = cfg;
  const levels = dimMult.length;
  const enc = [1, ...dimMult].map((m) => m * dim);
  const encoderStages: VaeStage[] = [];
  for (let i = 0, n = 0; i < levels; i++) {
    for (let j = 0; j < numResBlocks; j++, n++) {
      encoderStages.push({ kind: "residual", wan: `encoder.downsamples.${n}`, diffusers: `encoder.down_blocks.${n}`, cin: j ? enc[i + 1]! : enc[i]!, cout: enc[i + 1]! });
    }
    if (i < levels - 1) {
      const mode = temporalDownsample[i] ? "downsample3d" : "downsample2d";
      encoderStages.push({ kind: "resample", wan: `encoder.downsamples.${n}`, diffusers: `encoder.down_blocks.${n}`, channels: enc[i + 1]!, mode });
      n++;
    }
  }
  const dec = [dimMult[levels - 1]!, ...[...dimMult].reverse()].map((m) => m * dim);
  const temporalUp = [...temporalDownsample].reverse();
  const decoderStages: VaeStage[] = [];
  for (let i = 0, n = 0; i < levels; i++) {
    // after a resample the channels are halved (the upsampling conv's output)
    let cin = i > 0 ? dec[i]! / 2 : dec[i]!;
    for (let j = 0; j <= numResBlocks; j++, n++, cin = dec[i + 1]!) {
      decoderStages.push({ kind: "residual", wan: `decoder.upsamples.${n}`, diffusers: `decoder.up_blocks.${i}.resnets.${j}`, cin, cout: dec[i + 1]! });
    }
    if (i < levels - 1) {
      const mode = temporalUp[i] ? "upsample3d" : "upsample2d";
      decoderStages.push({ kind: "resample", wan: `decoder.upsamples.${n}`, diffusers: `decoder.up_blocks.${i}.upsamplers.0`, channels: dec[i + 1]!, mode });
      n++;
    }
  }
  return { encoderIn: enc[0]!, encoderStages, encoderTop: enc[levels]!, decoderTop: dec[0]!, decoderStages, decoderOut: dec[levels]! };
}

export interface VaeParameter {
  wan: string;
  diffusers: string;
  shape: number[];
}

/** Every parameter of a Wan-VAE (encoder, conv1, conv2, decoder — the state_dict order of both layouts). */
export function vaeParameters(cfg: VaeConfig): VaeParameter[] {
  const out: VaeParameter[] = [];
  const add = (wan: string, diffusers: string, shape: number[]) => out.push({ wan, diffusers, shape });
  const conv = (wan: string, diffusers: string, cout: number, cin: number, k: number[]) => {
    add(`${wan}.weight`, `${diffusers}.weight`, [cout, cin, ...k]);
    add(`${wan}.bias`, `${diffusers}.bias`, [cout]);
  };
  const stage = (s: VaeStage) => {
    if (s.kind === "residual") {
      add(`${s.wan}.residual.0.gamma`, `${s.diffusers}.norm1.gamma`, [s.cin, 1, 1, 1]);
      conv(`${s.wan}.residual.2`, `${s.diffusers}.conv1`, s.cout, s.cin, [3, 3, 3]);
      add(`${s.wan}.residual.3.gamma`, `${s.diffusers}.norm2.gamma`, [s.cout, 1, 1, 1]);
      conv(`${s.wan}.residual.6`, `${s.diffusers}.conv2`, s.cout, s.cout, [3, 3, 3]);
      if (s.cin !== s.cout) conv(`${s.wan}.shortcut`, `${s.diffusers}.conv_shortcut`, s.cout, s.cin, [1, 1, 1]);
      return;
    }
    const c = s.channels;
    conv(`${s.wan}.resample.1`, `${s.diffusers}.resample.1`, s.mode.startsWith("up") ? c / 2 : c, c, [3, 3]);
    if (s.mode === "upsample3d") conv(`${s.wan}.time_conv`, `${s.diffusers}.time_conv`, 2 * c, c, [3, 1, 1]);
    if (s.mode === "downsample3d") conv(`${s.wan}.time_conv`, `${s.diffusers}.time_conv`, c, c, [3, 1, 1]);
  };
  const middle = (side: string, c: number) => {
    stage({ kind: "residual", wan: `${side}.middle.0`, diffusers: `${side}.mid_block.resnets.0`, cin: c, cout: c });
    add(`${side}.middle.1.norm.gamma`, `${side}.mid_block.attentions.0.norm.gamma`, [c, 1, 1]);
    conv(`${side}.middle.1.to_qkv`, `${side}.mid_block.attentions.0.to_qkv`, 3 * c, c, [1, 1]);
    conv(`${side}.middle.1.proj`, `${side}.mid_block.attentions.0.proj`, c, c, [1, 1]);
    stage({ kind: "residual", wan: `${side}.middle.2`, diffusers: `${side}.mid_block.resnets.1`, cin: c, cout: c });
  };
  const head = (side: string, c: number, cout: number) => {
    add(`${side}.head.0.gamma`, `${side}.norm_out.gamma`, [c, 1, 1, 1]);
    conv(`${side}.head.2`, `${side}.conv_out`, cout, c, [3, 3, 3]);
  };
  const l = vaeLayout(cfg), z = cfg.zDim;
  conv("encoder.conv1", "encoder.conv_in", l.encoderIn, 3, [3, 3, 3]);
  l.encoderStages.forEach(stage);
  middle("encoder", l.encoderTop);
  head("encoder", l.encoderTop, 2 * z);
  conv("conv1", "quant_conv", 2 * z, 2 * z, [1, 1, 1]);
  conv("conv2", "post_quant_conv", z, z, [1, 1, 1]);
  conv("decoder.conv1", "decoder.conv_in", l.decoderTop, z, [3, 3, 3]);
  middle("decoder", l.decoderTop);
  l.decoderStages.forEach(stage);
  head("decoder", l.decoderOut, 3);
  return out;
}

export interface VaeKeyMap {
  /** diffusers name → Wan name (unknown names unchanged). */
  toWan(name: string): string;
  /** Wan name → diffusers name (unknown names unchanged). */
  toDiffusers(name: string): string;
}

/** The renaming for a VAE of this structure (the decoder's grouping depends on num_res_blocks). */
export function vaeKeyMap(cfg: VaeConfig): VaeKeyMap {
  const toWan = new Map<string, string>(), toDiffusers = new Map<string, string>();
  for (const p of vaeParameters(cfg)) {
    toWan.set(p.diffusers, p.wan);
    toDiffusers.set(p.wan, p.diffusers);
  }
  return { toWan: (n) => toWan.get(n) ?? n, toDiffusers: (n) => toDiffusers.get(n) ?? n };
}

/** True when a VAE checkpoint uses AutoencoderKLWan names (Wan's have none of these modules). */
export function isDiffusersVae(names: Iterable<string>): boolean {
  for (const n of names) if (/^(quant_conv|post_quant_conv)\.|^(encoder|decoder)\.(conv_in|mid_block|down_blocks|up_blocks|norm_out|conv_out)\./.test(n)) return true;
  return false;
}
