// What `kino serve --help` and the README say about request defaults is what the server does: an unset
// default_request field takes the model card's value, and the default model's card is what they quote.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { parseKinoConfig } from "../../src/models/kino-config.ts";

const root = join(import.meta.dir, "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const tinyDir = join(root, "models/kino-tiny");
const tiny = parseKinoConfig(
  JSON.parse(readFileSync(join(tinyDir, "transformer/config.json"), "utf8")).kino,
  JSON.parse(readFileSync(join(tinyDir, "scheduler/scheduler_config.json"), "utf8")),
  "kino-tiny",
);
const tinySummary = `64x64 clips of ${tiny.numFrames} frames at ${tiny.fps} fps in ${tiny.steps} steps`;

function serveHelp(): string {
  const proc = Bun.spawnSync([process.execPath, join(root, "src/cli/main.ts"), "serve", "--help"]);
  expect(proc.exitCode).toBe(0);
  return proc.stdout.toString();
}

test("kino-tiny's own defaults are the ones the docs quote", () => {
  expect([tiny.width, tiny.height]).toEqual([64, 64]);
  expect(serveHelp()).toContain(`kino-tiny, makes ${tinySummary}`);
  expect(readme).toContain(`(kino-tiny: 64x64, ${tiny.numFrames} frames at ${tiny.fps} fps, ${tiny.steps} steps)`);
});

test("serve --help lists every key, says which are unset, and that unset request defaults are the card's", () => {
  const help = serveHelp();
  for (const field of ["width", "height", "num_frames", "fps", "num_inference_steps", "guidance_scale"]) {
    expect(help).toMatch(new RegExp(`--default_request\\.sampling\\.${field} +unset +.*unset: the model card's`));
  }
  expect(help).toMatch(/--server\.public_url +unset +where clients reach kino/);
  expect(help).toMatch(/--server\.api_key +unset/);
  expect(help).toMatch(/--server\.port +8000 +0 picks a free port/);
});

test("the README's serve config loads, and sets no size that differs from the default model's", () => {
  const yaml = /## Serve config[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)![1]!;
  const dir = mkdtempSync(join(tmpdir(), "kino-readme-"));
  try {
    writeFileSync(join(dir, "serve.yaml"), yaml);
    const defaults = loadServeConfig({ configFile: join(dir, "serve.yaml") }).operatorDefaults();
    expect([defaults.width ?? 64, defaults.height ?? 64]).toEqual([64, 64]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the README's requests ask for sizes the default model makes as they are", () => {
  const sizes = [...readme.matchAll(/"size": "(\d+x\d+)"/g)].map((m) => m[1]);
  expect(sizes.length).toBeGreaterThan(0);
  for (const size of sizes) expect(size).toBe("64x64");
});
