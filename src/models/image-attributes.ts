// kino-tiny's image reader (`prompt_extender/` beside the other components; trained by
// tools/train/prompt_extender.py): a small classifier that says what a given frame shows — the
// object's color and shape, the background, one object or two — for prompt-extension.ts to word.
//
// The network: 3×3 convolutions (zero padding 1, each with exact GELU), the feature map read as
// tokens in raster order, then attention pooling — one learned query per attribute attends, through
// one key/value projection, to every position — and one linear layer whose rows for each attribute's
// classes are read from that attribute's pooled vector. Any frame size works: the pooling does not
// care how many positions there are.
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { Json } from "./configs.ts";
import type { ImageAttributes, PromptWording, Reading } from "./prompt-extension.ts";
import { CheckpointError } from "./safetensors.ts";
import type { WeightReader } from "./weights.ts";

/** The attributes, in the order of the learned queries and of the head's rows. */
const ATTRIBUTES = ["color", "shape", "background", "count"] as const;
type Attribute = (typeof ATTRIBUTES)[number];

export interface ImageReaderConfig {
  widths: number[];
  strides: number[];
  /** The pooled width (the last convolution's channels). */
  dim: number;
  classes: Record<Attribute, string[]>;
  wording: PromptWording;
}

export function parseImageReaderConfig(json: Json, path: string): ImageReaderConfig {
  const fail = (why: string): never => {
    throw new CheckpointError(`${path}: ${why}`);
  };
  const ints = (key: string) => {
    const v = json[key];
    if (!Array.isArray(v) || !v.length || !v.every((x) => Number.isInteger(x) && (x as number) > 0)) fail(`'${key}' must be a list of positive integers`);
    return v as number[];
  };
  const strings = (v: unknown, what: string) => {
    if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === "string")) fail(`'${what}' must be a list of strings`);
    return v as string[];
  };
  const widths = ints("widths"), strides = ints("strides"), dim = Number(json.dim);
  if (strides.length !== widths.length) fail(`'strides' has ${strides.length} entries, 'widths' ${widths.length}`);
  if (dim !== widths.at(-1)) fail(`'dim' ${json.dim} ≠ the last width ${widths.at(-1)}`);
  const heads = (json.heads ?? {}) as Record<string, unknown>;
  const classes = Object.fromEntries(ATTRIBUTES.map((a) => [a, strings(heads[a], `heads.${a}`)])) as Record<Attribute, string[]>;
  if (classes.count.join() !== "one,two") fail(`'heads.count' must be ["one", "two"]`);
  const solid = json.background_solid, special = json.background_special;
  if (typeof solid !== "string" || !solid.includes("{}")) fail(`'background_solid' must be a phrase with {} for the color`);
  if (!special || typeof special !== "object" || !Object.values(special).every((p) => typeof p === "string")) fail(`'background_special' must map backgrounds to phrases`);
  const specialBackgrounds = special as Record<string, string>;
  // a solid background's name is a color word too ("black"), which a prompt may give its object
  const colors = [...new Set([...classes.color, ...classes.background.filter((bg) => !Object.hasOwn(specialBackgrounds, bg))])];
  const wording = { colors, shapes: classes.shape, solidBackground: solid as string, specialBackgrounds };
  return { widths, strides, dim, classes, wording };
}

interface Conv {
  w: Tensor;
  b: Tensor;
  stride: number;
}

export class ImageAttributeReader {
  private constructor(
    private readonly b: Backend,
    readonly config: ImageReaderConfig,
    private readonly convs: Conv[],
    private readonly kv: { w: Tensor; b: Tensor },
    /** The learned queries, [1, attributes, 1 head, dim]. */
    private readonly queries: Tensor,
    private readonly head: { w: Tensor; b: Tensor },
  ) {}

  static async load(r: WeightReader, cfg: ImageReaderConfig): Promise<ImageAttributeReader> {
    const b = r.backend, d = cfg.dim, loaded: Tensor[] = [];
    const keep = (t: Tensor) => (loaded.push(t), t);
    try {
      const convs: Conv[] = [];
      let cin = 3;
      for (const [i, cout] of cfg.widths.entries()) {
        convs.push({ w: keep(await r.matrix(`convs.${i}.weight`, [cout, cin, 3, 3])), b: keep(await r.vector(`convs.${i}.bias`, [cout])), stride: cfg.strides[i]! });
        cin = cout;
      }
      const kv = { w: keep(await r.matrix("kv.weight", [2 * d, d])), b: keep(await r.vector("kv.bias", [2 * d])) };
      const queries = keep(b.upload(await r.host("queries", [ATTRIBUTES.length, d]), [1, ATTRIBUTES.length, 1, d]));
      const rows = ATTRIBUTES.reduce((n, a) => n + cfg.classes[a].length, 0);
      const head = { w: keep(await r.matrix("head.weight", [rows, d])), b: keep(await r.vector("head.bias", [rows])) };
      return new ImageAttributeReader(b, cfg, convs, kv, queries, head);
    } catch (err) {
      b.free(...loaded);
      throw err;
    }
  }

  /** image [3, H, W] RGB in [−1, 1] (at the size the DiT renders) → what it shows. */
  async read(image: Tensor): Promise<ImageAttributes> {
    const logits = await this.logits(image);
    return Object.fromEntries(ATTRIBUTES.map((a) => [a, choose(logits[a], this.config.classes[a])])) as Record<Attribute, Reading>;
  }

  /** Each attribute's logits over its classes (config.classes order). */
  async logits(image: Tensor): Promise<Record<Attribute, Float32Array>> {
    const b = this.b, d = this.config.dim, Q = ATTRIBUTES.length;
    if (image.rank !== 3 || image.shape[0] !== 3) throw new Error(`image reader: image must be [3, H, W], got ${image}`);
    const owned: Tensor[] = [];
    const alloc = (shape: number[]) => {
      const t = b.alloc(shape);
      owned.push(t);
      return t;
    };
    try {
      let x = image.reshape([1, 3, image.shape[1]!, image.shape[2]!]);
      for (const conv of this.convs) {
        const [, , h, w] = x.shape as [number, number, number, number];
        const out = alloc([1, conv.w.shape[0]!, Math.floor((h - 1) / conv.stride) + 1, Math.floor((w - 1) / conv.stride) + 1]);
        b.conv2d(out, x, conv.w, conv.b, { stride: [conv.stride, conv.stride], pad: [1, 1, 1, 1] });
        b.geluExact(out, out);
        x = out;
      }
      const [, , h, w] = x.shape as [number, number, number, number], n = h * w;
      const tokens = alloc([1, h, w, d]);
      b.permute(tokens, x, [0, 2, 3, 1]);
      const kv = alloc([1, n, 2 * d]), k = alloc([1, n, 1, d]), v = alloc([1, n, 1, d]);
      b.gemm(kv, tokens.reshape([1, n, d]), this.kv.w, this.kv.b);
      b.slice(k, kv.reshape([1, n, 2, d]), 2, 0);
      b.slice(v, kv.reshape([1, n, 2, d]), 2, 1);
      const pooled = alloc([1, Q, 1, d]), logits = alloc([1, Q, this.head.w.shape[0]!]);
      b.attention(pooled, this.queries, k, v, { scale: 1 / Math.sqrt(d) });
      b.gemm(logits, pooled.reshape([1, Q, d]), this.head.w, this.head.b);
      const all = await b.download(logits);
      const rows = all.length / Q;
      let start = 0;
      const out = {} as Record<Attribute, Float32Array>;
      for (const [q, a] of ATTRIBUTES.entries()) {
        // query q's row holds every head's logits; its own classes are its slice
        const n = this.config.classes[a].length;
        out[a] = all.slice(q * rows + start, q * rows + start + n);
        start += n;
      }
      return out;
    } finally {
      b.free(...owned);
    }
  }

  free(): void {
    this.b.free(...this.convs.flatMap((c) => [c.w, c.b]), this.kv.w, this.kv.b, this.queries, this.head.w, this.head.b);
  }
}

/** The most likely class and its softmax probability. */
function choose(logits: Float32Array, classes: string[]): Reading {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  let sum = 0;
  for (const l of logits) sum += Math.exp(l - logits[best]!);
  return { label: classes[best]!, probability: 1 / sum };
}
