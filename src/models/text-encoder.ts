// Prompt → conditioning: tokenizer + umT5, the output of the real tokens zero-padded to the DiT's
// text_len and flattened ([text_len · dim] floats). That fixed-size vector is what the Pipeline
// contract calls Conditioning: streaming transitions interpolate it linearly, and the DiT turns it
// into cross-attention K/V (its zero rows become Wan's padded context rows).
import type { PromptTokenizer } from "./tokenizer.ts";
import type { UMT5Encoder } from "./umt5.ts";

/** Recently encoded prompts kept (a session re-encodes its prompt; a UI may bounce between a few). */
const CACHE_ENTRIES = 16;

export class WanTextEncoder {
  readonly #cache = new Map<string, Float32Array>();

  constructor(private readonly tokenizer: PromptTokenizer, private readonly encoder: UMT5Encoder, readonly textLen: number) {}

  get width(): number {
    return this.encoder.config.dim;
  }

  /** The conditioning of a prompt: [text_len · dim], real-token rows first, zeros after. */
  async encode(prompt: string): Promise<Float32Array> {
    const hit = this.#cache.get(prompt);
    if (hit) {
      this.#cache.delete(prompt);
      this.#cache.set(prompt, hit);
      return hit.slice();
    }
    const ids = this.tokenizer.encode(prompt, this.textLen);
    const out = new Float32Array(this.textLen * this.width);
    if (ids.length) out.set(await this.encoder.encodeToHost(ids));
    this.#cache.set(prompt, out);
    if (this.#cache.size > CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
    return out.slice();
  }
}
