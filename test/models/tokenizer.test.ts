// Prompt tokenisation as Wan's HuggingfaceTokenizer does it (clean='whitespace', EOS appended,
// truncation keeping the EOS), through @huggingface/tokenizers on the tiny checkpoint's word-level
// tokenizer.json.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PromptTokenizer, cleanPrompt } from "../../src/models/tokenizer.ts";
import { makeTinyCheckpoint } from "../../tools/make-tiny-checkpoint.ts";

const dir = mkdtempSync(join(tmpdir(), "kino-tok-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
await makeTinyCheckpoint(dir);
const tok = await PromptTokenizer.load(join(dir, "tokenizer", "tokenizer.json"));

test("cleaning: HTML entities unescaped twice, whitespace collapsed", () => {
  expect(cleanPrompt("  a &amp;lt;red&amp;gt;\n\tcircle  &#x41;&#66; ")).toBe("a <red> circle AB");
});

test("ids: real tokens plus </s>, unknown words as <unk>, truncation keeps </s>", () => {
  // vocab: <pad> 0, </s> 1, <unk> 2, then a, an, the, on, background, moving, red, ...
  expect([...tok.encode("A red  circle", 16)]).toEqual([3, 9, 20, 1]);
  expect([...tok.encode("a zebra", 16)]).toEqual([3, 2, 1]);
  expect([...tok.encode("", 16)]).toEqual([1]);
  expect([...tok.encode("a red circle moving left", 3)]).toEqual([3, 9, 1]);
});

test("a missing tokenizer.json is a clear error", async () => {
  await expect(PromptTokenizer.load(join(dir, "nope", "tokenizer.json"))).rejects.toThrow("nope/tokenizer.json: cannot read the tokenizer");
});
