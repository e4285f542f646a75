// LoRA adapters for the DiT, merged into the weights once at load (never per request):
// - low-rank pairs `<module>.lora_A/.lora_B.weight` (PEFT) or `.lora_down/.lora_up.weight` (kohya-style),
//   with an optional `<module>.alpha` (else adapter_config.json's lora_alpha / r, else 1):
//   W ← W + strength · (alpha / r) · B·A, computed on the device (a GEMM), in f32, cast back;
// - additive diffs `<module>.diff` / `.diff_b` (weight / bias);
// - dense tensors under a model tensor's own name: they replace it, or supply it when the base
//   checkpoint lacks it (an adapter may add tensors).
// Module names may carry a `diffusion_model.` / `transformer.` / `base_model.model.` prefix and use
// diffusers or Wan naming. Every adapter tensor must land somewhere: one that matches no model tensor,
// or whose shape does not fit, fails at start with its name.
import { dirname, join } from "node:path";
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import { ditNameToWan } from "./key-maps.ts";
import { CheckpointError, type TensorInfo, openTensorTable } from "./safetensors.ts";
import { type WeightPatch, readAsF32 } from "./weights.ts";

const PREFIXES = ["base_model.model.", "model.diffusion_model.", "diffusion_model.", "transformer.", "model."];

interface LowRank {
  down: TensorInfo | null;
  up: TensorInfo | null;
  alpha: TensorInfo | null;
}

/** A tensor or module name without the wrappers' prefixes, in Wan naming. */
function canonical(name: string): string {
  let n = name;
  for (const p of PREFIXES) if (n.startsWith(p)) n = n.slice(p.length);
  return ditNameToWan(n);
}

/** A module name (no `.weight`), canonical: renamed as its weight would be. */
const canonicalModule = (module: string) => canonical(`${module}.weight`).replace(/\.weight$/, "");

export class LoraAdapter implements WeightPatch {
  readonly #lowRank = new Map<string, LowRank>(); // target weight name → pair
  readonly #diffs = new Map<string, TensorInfo>(); // target tensor name → additive diff
  readonly #dense = new Map<string, TensorInfo>();
  readonly #applied = new Set<string>();

  private constructor(readonly path: string, readonly strength: number, private readonly defaultScale: number) {}

  static async load(path: string, strength: number): Promise<LoraAdapter> {
    const table = await openTensorTable(path);
    const cfgFile = Bun.file(join(dirname(path), "adapter_config.json"));
    let scale = 1;
    if (await cfgFile.exists()) {
      const cfg = await cfgFile.json();
      if (typeof cfg.lora_alpha === "number" && typeof cfg.r === "number" && cfg.r > 0) scale = cfg.lora_alpha / cfg.r;
    }
    const lora = new LoraAdapter(path, strength, scale);
    for (const [name, info] of table.tensors) {
      const m = /^(.*)\.(lora_A|lora_B|lora_down|lora_up)(?:\.default)?\.weight$/.exec(name) ?? /^(.*)\.(alpha)$/.exec(name);
      if (m) {
        const target = `${canonicalModule(m[1]!)}.weight`;
        const entry = lora.#lowRank.get(target) ?? { down: null, up: null, alpha: null };
        if (m[2] === "lora_A" || m[2] === "lora_down") entry.down = info;
        else if (m[2] === "lora_B" || m[2] === "lora_up") entry.up = info;
        else entry.alpha = info;
        lora.#lowRank.set(target, entry);
        continue;
      }
      const diff = /^(.*)\.(diff|diff_b)$/.exec(name);
      if (diff) {
        lora.#diffs.set(`${canonicalModule(diff[1]!)}.${diff[2] === "diff" ? "weight" : "bias"}`, info);
        continue;
      }
      lora.#dense.set(canonical(name), info);
    }
    for (const [target, pair] of lora.#lowRank) {
      if (!pair.down || !pair.up) throw new CheckpointError(`${path}: LoRA for '${target}' has no ${pair.down ? "up (lora_B)" : "down (lora_A)"} matrix`);
    }
    return lora;
  }

  replacement(name: string): TensorInfo | undefined {
    const info = this.#dense.get(name);
    if (info) this.#applied.add(info.name);
    return info;
  }

  async apply(backend: Backend, name: string, t: Tensor): Promise<void> {
    const pair = this.#lowRank.get(name), diff = this.#diffs.get(name);
    if (!pair && !diff) return;
    const upd = backend.alloc(t.shape);
    try {
      if (pair) await this.#lowRankUpdate(backend, name, pair, upd);
      else {
        this.#expectShape(diff!, t.shape, name);
        backend.write(upd, await readAsF32(diff!));
        this.#applied.add(diff!.name);
      }
      const scale = pair ? this.strength * (await this.#pairScale(pair)) : this.strength;
      if (t.dtype === "f32") backend.axpby(t, t, upd, 1, scale);
      else {
        const wide = backend.alloc(t.shape);
        backend.cast(wide, t);
        backend.axpby(wide, wide, upd, 1, scale);
        backend.cast(t, wide);
        backend.free(wide);
      }
    } finally {
      backend.free(upd);
    }
  }

  /** ΔW = B·A into `out` (shaped like the target; conv kernels are flattened past the first dim). */
  async #lowRankUpdate(backend: Backend, name: string, pair: LowRank, out: Tensor): Promise<void> {
    const down = pair.down!, up = pair.up!;
    const rank = down.shape[0]!, rows = out.shape[0]!, cols = out.numel / rows;
    const downCols = down.shape.slice(1).reduce((a, b) => a * b, 1), upRank = up.shape.slice(1).reduce((a, b) => a * b, 1);
    if (up.shape[0] !== rows || upRank !== rank || downCols !== cols) {
      throw new CheckpointError(`${this.path}: LoRA '${up.name}' [${up.shape}] × '${down.name}' [${down.shape}] does not fit '${name}' [${out.shape}]`);
    }
    const a = backend.upload(await readAsF32(down), [rank, cols]);
    const at = backend.alloc([cols, rank]);
    const b = backend.upload(await readAsF32(up), [rows, rank]);
    backend.permute(at, a, [1, 0]);
    backend.gemm(out.reshape([rows, cols]), b, at);
    backend.free(a, at, b);
    for (const i of [down, up, pair.alpha]) if (i) this.#applied.add(i.name);
  }

  async #pairScale(pair: LowRank): Promise<number> {
    if (!pair.alpha) return this.defaultScale;
    return (await readAsF32(pair.alpha))[0]! / pair.down!.shape[0]!;
  }

  #expectShape(info: TensorInfo, shape: readonly number[], target: string): void {
    if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
      throw new CheckpointError(`${this.path}: adapter tensor '${info.name}' has shape [${info.shape}], '${target}' is [${shape}]`);
    }
  }

  /** After the model loaded: every adapter tensor must have been used. */
  assertAllUsed(): void {
    const all = [...this.#dense.values(), ...this.#diffs.values(), ...[...this.#lowRank.values()].flatMap((p) => [p.down, p.up, p.alpha])];
    const unused = all.filter((i): i is TensorInfo => !!i && !this.#applied.has(i.name));
    if (unused.length) {
      throw new CheckpointError(`${this.path}: adapter tensor '${unused[0]!.name}' matches no tensor of the model${unused.length > 1 ? ` (and ${unused.length - 1} more)` : ""}`);
    }
  }
}
