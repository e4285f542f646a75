// What the Wan2.2 VAE adds to Wan2.1's building blocks (wan-vae-blocks.ts, wan-vae-resample.ts):
// - patchify / unpatchify: [C, T, 2h, 2w] ↔ [4C, T, h, w] with channel c·4 + r·2 + q holding pixel
//   (2i + q, 2j + r) — q the row offset, r the column offset (einops "b c f (h q) (w r) -> b (c r q) f h w");
// - AvgDown3D: the encoder level's shortcut. Each chunk is padded in front with (ft − T mod ft) % ft
//   zero frames, its (ft, fs, fs) blocks laid out as channels (c, a, b, d) and averaged over
//   consecutive groups of cin·ft·fs²/cout of those — a stride-(ft, fs, fs) conv with a fixed weight;
// - DupUp3D: the decoder level's shortcut, the inverse layout: channels repeated cout·ft·fs²/cin
//   times, spread over (ft, fs, fs) blocks; the stream's first chunk drops its first ft − 1 frames;
// - a level: its residual blocks and resample, plus the shortcut of its input.
// All of it runs chunk by chunk with the same causal state as the rest of the VAE.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { ResidualBlock } from "./wan-vae-blocks.ts";
import { Resample } from "./wan-vae-resample.ts";
import type { Vae22Level } from "./wan-vae22-layout.ts";
import type { WeightSource } from "./weights.ts";

/** video [C, T, 2h, 2w] → new [4C, T, h, w]. */
export function patchify(b: Backend, x: Tensor): Tensor {
  const [C, T, H, W] = x.shape as [number, number, number, number];
  const out = b.alloc([4 * C, T, H / 2, W / 2]);
  b.permute(out.reshape([C, 2, 2, T, H / 2, W / 2]), x.reshape([C, T, H / 2, 2, W / 2, 2]), [0, 5, 3, 1, 2, 4]);
  return out;
}

/** [4C, T, h, w] → new video [C, T, 2h, 2w]. */
export function unpatchify(b: Backend, x: Tensor): Tensor {
  const [C4, T, h, w] = x.shape as [number, number, number, number];
  const out = b.alloc([C4 / 4, T, 2 * h, 2 * w]);
  b.permute(out.reshape([C4 / 4, T, h, 2, w, 2]), x.reshape([C4 / 4, 2, 2, T, h, w]), [0, 3, 4, 2, 5, 1]);
  return out;
}

/** AvgDown3D as a conv: weight[o, c, a, b, d] = 1/g where (c·ft·fs² + a·fs² + b·fs + d) div g = o. */
class AvgDown {
  private constructor(private readonly b: Backend, private readonly w: Tensor, private readonly ft: number, private readonly fs: number) {}

  static create(b: Backend, cin: number, cout: number, ft: number, fs: number): AvgDown {
    const f = ft * fs * fs, g = (cin * f) / cout;
    if (!Number.isInteger(g)) throw new Error(`AvgDown3D ${cin} → ${cout} channels with factors (${ft}, ${fs}): groups do not divide`);
    const w = new Float32Array(cout * cin * f);
    for (let c = 0; c < cin; c++) for (let k = 0; k < f; k++) w[(Math.floor((c * f + k) / g) * cin + c) * f + k] = 1 / g;
    return new AvgDown(b, b.upload(w, [cout, cin, ft, fs, fs]), ft, fs);
  }

  run(x: Tensor): Tensor {
    const b = this.b, [, , T, H, W] = x.shape as number[];
    const timePad = (this.ft - (T! % this.ft)) % this.ft;
    const out = b.alloc([1, this.w.shape[0]!, (timePad + T!) / this.ft, Math.floor(H! / this.fs), Math.floor(W! / this.fs)]);
    b.conv3d(out, x, this.w, null, { stride: [this.ft, this.fs, this.fs], timePad });
    return out;
  }

  tensors(): Tensor[] {
    return [this.w];
  }
}

/** DupUp3D: repeat channels (a nearest upsample over a unit axis), then spread them over the blocks. */
class DupUp {
  #first = true;
  constructor(private readonly b: Backend, private readonly cout: number, private readonly ft: number, private readonly fs: number, private readonly repeats: number) {}

  run(x: Tensor): Tensor {
    const b = this.b, [, cin, T, H, W] = x.shape as [number, number, number, number, number];
    const { cout, ft, fs } = this, n = T * H * W;
    const rep = b.alloc([cin, this.repeats, n]);
    b.upsampleNearest(rep, x.reshape([cin, 1, n]));
    const full = b.alloc([1, cout, T * ft, H * fs, W * fs]);
    b.permute(full.reshape([cout, T, ft, H, fs, W, fs]), rep.reshape([cout, ft, fs, fs, T, H, W]), [0, 4, 1, 5, 2, 6, 3]);
    b.free(rep);
    if (!this.#first || ft === 1) {
      this.#first = false;
      return full;
    }
    this.#first = false;
    const out = b.alloc([1, cout, T * ft - (ft - 1), H * fs, W * fs]);
    b.slice(out, full, 2, ft - 1);
    b.free(full);
    return out;
  }

  reset(): void {
    this.#first = true;
  }
}

/** One resolution level: residual blocks, resample, plus the shortcut (or the input itself). */
export class ResidualLevel {
  private constructor(
    private readonly b: Backend,
    private readonly stages: (ResidualBlock | Resample)[],
    private readonly shortcut: AvgDown | DupUp | "identity" | null,
  ) {}

  static async load(r: WeightSource, level: Vae22Level): Promise<ResidualLevel> {
    const b = r.backend, stages: (ResidualBlock | Resample)[] = [];
    for (const s of level.residuals) stages.push(await ResidualBlock.load(r, s.name, s.cin, s.cout));
    if (level.resample) stages.push(await Resample.load(r, level.resample.name, level.resample.channels, level.resample.mode, false));
    const sc = level.shortcut;
    let shortcut: AvgDown | DupUp | "identity" | null = null;
    if (sc && level.resample?.mode.startsWith("up")) shortcut = new DupUp(b, sc.cout, sc.ft, sc.fs, (sc.cout * sc.ft * sc.fs * sc.fs) / sc.cin);
    else if (sc && sc.ft * sc.fs === 1 && sc.cin === sc.cout) shortcut = "identity";
    else if (sc) shortcut = AvgDown.create(b, sc.cin, sc.cout, sc.ft, sc.fs);
    return new ResidualLevel(b, stages, shortcut);
  }

  /** New output for x (the caller frees x and the result). */
  run(x: Tensor): Tensor {
    const b = this.b;
    let cur = x;
    for (const s of this.stages) {
      const next = s.run(cur);
      if (cur !== x && next !== cur) b.free(cur);
      cur = next;
    }
    if (this.shortcut === "identity") b.axpby(cur, cur, x, 1, 1);
    else if (this.shortcut) {
      const s = this.shortcut.run(x);
      b.axpby(cur, cur, s, 1, 1);
      b.free(s);
    }
    return cur;
  }

  reset(): void {
    for (const s of this.stages) s.reset();
    if (this.shortcut instanceof DupUp) this.shortcut.reset();
  }

  tensors(): Tensor[] {
    return [...this.stages.flatMap((s) => s.tensors()), ...(this.shortcut instanceof AvgDown ? this.shortcut.tensors() : [])];
  }
}
