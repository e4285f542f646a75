// Prompt → token ids, as Wan's HuggingfaceTokenizer does it: clean the text (HTML entities unescaped
// twice, whitespace collapsed), encode with the tokenizer.json's own special-token template (umT5
// appends </s>), truncate to text_len keeping the final special token. No padding: only real tokens
// are run through the encoder (the pad positions are masked in Wan, so their outputs never matter).
// ftfy's mojibake repair is not reproduced; prompts arrive as valid UTF-8 JSON strings.
import { Tokenizer } from "@huggingface/tokenizers";
import { CheckpointError } from "./safetensors.ts";

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

function unescapeHtml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, body: string) => {
    if (body[0] === "#") {
      const code = body[1] === "x" || body[1] === "X" ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? m;
  });
}

/** Wan's `whitespace_clean(basic_clean(text))`, minus ftfy. */
export function cleanPrompt(text: string): string {
  return unescapeHtml(unescapeHtml(text)).replace(/\s+/g, " ").trim();
}

export class PromptTokenizer {
  readonly #tokenizer: Tokenizer;
  readonly #unkId: number | undefined;

  private constructor(tokenizer: Tokenizer, unkId: number | undefined) {
    this.#tokenizer = tokenizer;
    this.#unkId = unkId;
  }

  /** From a tokenizer.json (and tokenizer_config.json beside it, when present). */
  static async load(tokenizerJson: string): Promise<PromptTokenizer> {
    let json: { model?: { unk_token?: string } };
    try {
      json = await Bun.file(tokenizerJson).json();
    } catch (err) {
      throw new CheckpointError(`${tokenizerJson}: cannot read the tokenizer (${(err as Error).message})`);
    }
    const configFile = Bun.file(tokenizerJson.replace(/tokenizer\.json$/, "tokenizer_config.json"));
    const config = (await configFile.exists()) ? await configFile.json() : {};
    let tokenizer: Tokenizer;
    try {
      tokenizer = new Tokenizer(json, config);
    } catch (err) {
      throw new CheckpointError(`${tokenizerJson}: unsupported tokenizer (${(err as Error).message})`);
    }
    const unk = json.model?.unk_token;
    return new PromptTokenizer(tokenizer, unk === undefined ? undefined : tokenizer.token_to_id(unk));
  }

  /** Token ids of a prompt, at most maxLen of them. */
  encode(prompt: string, maxLen: number): Int32Array {
    const enc = this.#tokenizer.encode(cleanPrompt(prompt), { add_special_tokens: true });
    // tokenizers.js leaves out-of-vocabulary words of a word-level model without an id
    const ids = enc.ids.map((id, i) => {
      if (id !== undefined && id !== null) return Number(id);
      if (this.#unkId === undefined) throw new Error(`The tokenizer has no id for '${enc.tokens[i]}' and no unknown token`);
      return this.#unkId;
    });
    if (ids.length > maxLen) {
      // keep the closing special token (</s>) as HF truncation does: it reserves room for it
      const special = this.#tokenizer.encode("", { add_special_tokens: true }).ids.map(Number);
      const tail = special.length && ids.slice(-special.length).every((v, i) => v === special[i]) ? special : [];
      return Int32Array.from([...ids.slice(0, Math.max(0, maxLen - tail.length)), ...tail].slice(0, maxLen));
    }
    return Int32Array.from(ids);
  }
}
