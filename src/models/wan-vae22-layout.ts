// The Wan2.2 VAE's module structure (wan/modules/vae2_2.py, `Wan2.2_VAE.pth` names). Unlike Wan2.1's
// flat lists, each resolution level is one module holding its residual blocks and resample under
// `encoder.downsamples.i.downsamples.j` / `decoder.upsamples.i.upsamples.j`, plus a parameter-free
// shortcut from the level's input to its output:
// - encoder level i (Down_ResidualBlock): dims[i] → dims[i+1], num_res_blocks residual blocks, then
//   a downsample (3d where temperal_downsample[i]) on all levels but the last; shortcut AvgDown3D with
//   factors (2 if temporal else 1, 2 if it downsamples else 1);
// - decoder level i (Up_ResidualBlock): num_res_blocks + 1 residual blocks, an upsample (3d where the
//   reversed temperal_downsample says so) whose conv keeps its channels, on all levels but the last;
//   shortcut DupUp3D only where the level upsamples.
// Encoder widths dim·[1, …dim_mult]; decoder widths decoder_dim·[dim_mult[-1], …reversed dim_mult];
// conv1 of the encoder takes 12 channels (2×2-patchified RGB), the decoder's head gives 12.
import type { VaeConfig } from "./configs.ts";
import type { ResampleMode } from "./wan-vae-resample.ts";

export interface Vae22Level {
  residuals: { name: string; cin: number; cout: number }[];
  resample: { name: string; channels: number; mode: ResampleMode } | null;
  /** Channels in and out of the level, and the shortcut's (time, space) factors; null: no shortcut. */
  shortcut: { cin: number; cout: number; ft: number; fs: number } | null;
}

export interface Vae22Layout {
  encoderIn: number;
  encoderLevels: Vae22Level[];
  encoderTop: number;
  decoderTop: number;
  decoderLevels: Vae22Level[];
  decoderOut: number;
}

/** Patchified pixel channels: 3 colours × 2 × 2. */
export const VAE22_PIXEL_CHANNELS = 12;

export function vae22Layout(cfg: VaeConfig): Vae22Layout {
  if (!cfg.wan22) throw new Error("vae22Layout: not a Wan2.2 VAE config");
  const { dim, dimMult, numResBlocks, temporalDownsample } = cfg, levels = dimMult.length;
  const enc = [1, ...dimMult].map((m) => m * dim);
  const encoderLevels: Vae22Level[] = [];
  for (let i = 0; i < levels; i++) {
    const p = `encoder.downsamples.${i}.downsamples`, down = i !== levels - 1, temporal = temporalDownsample[i] ?? false;
    encoderLevels.push({
      residuals: Array.from({ length: numResBlocks }, (_, j) => ({ name: `${p}.${j}`, cin: j ? enc[i + 1]! : enc[i]!, cout: enc[i + 1]! })),
      resample: down ? { name: `${p}.${numResBlocks}`, channels: enc[i + 1]!, mode: temporal ? "downsample3d" : "downsample2d" } : null,
      shortcut: { cin: enc[i]!, cout: enc[i + 1]!, ft: temporal ? 2 : 1, fs: down ? 2 : 1 },
    });
  }
  const dd = cfg.wan22.decoderDim, dec = [dimMult[levels - 1]!, ...[...dimMult].reverse()].map((m) => m * dd);
  const temporalUp = [...temporalDownsample].reverse();
  const decoderLevels: Vae22Level[] = [];
  for (let i = 0; i < levels; i++) {
    const p = `decoder.upsamples.${i}.upsamples`, up = i !== levels - 1, temporal = temporalUp[i] ?? false;
    decoderLevels.push({
      residuals: Array.from({ length: numResBlocks + 1 }, (_, j) => ({ name: `${p}.${j}`, cin: j ? dec[i + 1]! : dec[i]!, cout: dec[i + 1]! })),
      resample: up ? { name: `${p}.${numResBlocks + 1}`, channels: dec[i + 1]!, mode: temporal ? "upsample3d" : "upsample2d" } : null,
      shortcut: up ? { cin: dec[i]!, cout: dec[i + 1]!, ft: temporal ? 2 : 1, fs: 2 } : null,
    });
  }
  return { encoderIn: enc[0]!, encoderLevels, encoderTop: enc[levels]!, decoderTop: dec[0]!, decoderLevels, decoderOut: dec[levels]! };
}

/** True when a VAE's tensors are Wan2.2's (the nested level modules of vae2_2.py). */
export function isWan22Vae(names: Iterable<string>): boolean {
  for (const n of names) if (/^(encoder\.downsamples\.\d+\.downsamples|decoder\.upsamples\.\d+\.upsamples)\.\d+\./.test(n)) return true;
  return false;
}

/** Every parameter of a Wan2.2 VAE under Wan's names (`Wan2.2_VAE.pth`), in state_dict order —
 *  what tools/make-tiny-checkpoint.ts writes. */
export function vae22Parameters(cfg: VaeConfig): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [], l = vae22Layout(cfg), z = cfg.zDim;
  const add = (name: string, shape: number[]) => out.push({ name, shape });
  const conv = (name: string, cout: number, cin: number, k: number[]) => {
    add(`${name}.weight`, [cout, cin, ...k]);
    add(`${name}.bias`, [cout]);
  };
  const residual = (name: string, cin: number, cout: number) => {
    add(`${name}.residual.0.gamma`, [cin, 1, 1, 1]);
    conv(`${name}.residual.2`, cout, cin, [3, 3, 3]);
    add(`${name}.residual.3.gamma`, [cout, 1, 1, 1]);
    conv(`${name}.residual.6`, cout, cout, [3, 3, 3]);
    if (cin !== cout) conv(`${name}.shortcut`, cout, cin, [1, 1, 1]);
  };
  const level = (lv: Vae22Level) => {
    for (const r of lv.residuals) residual(r.name, r.cin, r.cout);
    if (!lv.resample) return;
    const { name, channels: c, mode } = lv.resample;
    conv(`${name}.resample.1`, c, c, [3, 3]);
    if (mode === "upsample3d") conv(`${name}.time_conv`, 2 * c, c, [3, 1, 1]);
    if (mode === "downsample3d") conv(`${name}.time_conv`, c, c, [3, 1, 1]);
  };
  const middle = (side: string, c: number) => {
    residual(`${side}.middle.0`, c, c);
    add(`${side}.middle.1.norm.gamma`, [c, 1, 1]);
    conv(`${side}.middle.1.to_qkv`, 3 * c, c, [1, 1]);
    conv(`${side}.middle.1.proj`, c, c, [1, 1]);
    residual(`${side}.middle.2`, c, c);
  };
  conv("encoder.conv1", l.encoderIn, VAE22_PIXEL_CHANNELS, [3, 3, 3]);
  l.encoderLevels.forEach(level);
  middle("encoder", l.encoderTop);
  add("encoder.head.0.gamma", [l.encoderTop, 1, 1, 1]);
  conv("encoder.head.2", 2 * z, l.encoderTop, [3, 3, 3]);
  conv("conv1", 2 * z, 2 * z, [1, 1, 1]);
  conv("conv2", z, z, [1, 1, 1]);
  conv("decoder.conv1", l.decoderTop, z, [3, 3, 3]);
  middle("decoder", l.decoderTop);
  l.decoderLevels.forEach(level);
  add("decoder.head.0.gamma", [l.decoderOut, 1, 1, 1]);
  conv("decoder.head.2", VAE22_PIXEL_CHANNELS, l.decoderOut, [3, 3, 3]);
  return out;
}
