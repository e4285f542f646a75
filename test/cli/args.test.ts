import { describe, expect, test } from "bun:test";
import { parseArgs, UsageError } from "../../src/cli/args.ts";

describe("parseArgs", () => {
  test("command, --config in both forms, dotted overrides in both forms", () => {
    expect(parseArgs(["serve", "--config", "kino.yaml", "--server.port=8123", "--server.output_dir", "out/"])).toEqual({
      command: "serve",
      flags: { config: "kino.yaml" },
      overrides: { "server.port": "8123", "server.output_dir": "out/" },
      positionals: [],
    });
    expect(parseArgs(["serve", "--config=kino.yaml", "--server.port", "8123"])).toEqual({
      command: "serve",
      flags: { config: "kino.yaml" },
      overrides: { "server.port": "8123" },
      positionals: [],
    });
  });

  test("a flag followed by another option or the end is boolean true", () => {
    const args = parseArgs(["generate", "--verbose", "--prompt", "a cat", "--json"]);
    expect(args.flags).toEqual({ verbose: true, prompt: "a cat", json: true });
  });

  test("--key=value keeps everything after the first '=', including an empty value", () => {
    const args = parseArgs(["--prompt=a=b", "--default_request.negative_prompt="]);
    expect(args.flags).toEqual({ prompt: "a=b" });
    expect(args.overrides).toEqual({ "default_request.negative_prompt": "" });
  });

  test("negative numbers and a lone '-' are values, not options", () => {
    const args = parseArgs(["--default_request.sampling.seed", "-1", "--input", "-"]);
    expect(args.overrides).toEqual({ "default_request.sampling.seed": "-1" });
    expect(args.flags).toEqual({ input: "-" });
  });

  test("short options take values like long ones", () => {
    expect(parseArgs(["generate", "-o", "out.mp4"]).flags).toEqual({ o: "out.mp4" });
    expect(parseArgs(["generate", "-o=out.mp4"]).flags).toEqual({ o: "out.mp4" });
  });

  test("'--' ends options: later tokens are positionals even if they look like options", () => {
    const args = parseArgs(["generate", "--steps", "4", "--", "--server.port=1", "-o", "x"]);
    expect(args.command).toBe("generate");
    expect(args.flags).toEqual({ steps: "4" });
    expect(args.overrides).toEqual({});
    expect(args.positionals).toEqual(["--server.port=1", "-o", "x"]);
  });

  test("a flag right before '--' is boolean and does not swallow it", () => {
    const args = parseArgs(["serve", "--dry-run", "--", "extra"]);
    expect(args.flags).toEqual({ "dry-run": true });
    expect(args.positionals).toEqual(["extra"]);
  });

  test("command is the first positional; later positionals are kept in order", () => {
    expect(parseArgs([])).toEqual({ command: null, flags: {}, overrides: {}, positionals: [] });
    expect(parseArgs(["--help"])).toEqual({ command: null, flags: { help: true }, overrides: {}, positionals: [] });
    const args = parseArgs(["--config=x.yaml", "bench", "matmul", "attention"]);
    expect(args.command).toBe("bench");
    expect(args.positionals).toEqual(["matmul", "attention"]);
  });

  test("the last occurrence wins, so appended overrides beat a script's own", () => {
    const args = parseArgs(["--server.port", "8000", "--server.port=9000", "--config", "a", "--config", "b"]);
    expect(args.overrides).toEqual({ "server.port": "9000" });
    expect(args.flags).toEqual({ config: "b" });
  });

  test("a dotted key with no value is a usage error", () => {
    expect(() => parseArgs(["--server.output_dir", "--config", "x"])).toThrow(UsageError);
    expect(() => parseArgs(["--server.output_dir"])).toThrow("--server.output_dir needs a value");
  });

  test("malformed option names are usage errors", () => {
    for (const bad of ["--=x", "---x", "--server..port=1", "--.port=1", "-abc"]) {
      expect(() => parseArgs([bad])).toThrow(UsageError);
    }
  });
});
