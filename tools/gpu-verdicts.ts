// After a device run of tools/gpu-check.sh: what its logs say, without reading them by hand.
//
//   bun tools/gpu-verdicts.ts OUT1/gpu-check.log [OUT2/gpu-check.log ...] [--apply] [--root DIR]
//
// Prints (a) the step table, merged over the logs (a split run's python and bun parts), (b) for each
// hand-set fast-path constant the evidence it needs and the verdict — FLIP, KEEP (why), NO EVIDENCE
// (why), or SET (already true) — by the rules of tools/gpu-verdicts-rules.ts, (c) advice on the models
// in the source that no constant switches — AGREES, DISAGREES or NO EVIDENCE for the mma.sync GEMM's
// and convolution's tile models and the mma.sync attention's tiling model (tools/gpu-verdicts-tiles.ts);
// --apply leaves them alone — and (d) the run's figures
// as markdown rows for docs/BENCHMARKS.md's GPU section (tools/gpu-verdicts-figures.ts), and (e) the
// steps that gave no result with the command that runs only them (tools/gpu-verdicts-rerun.ts). With --apply it
// sets the FLIP constants to true in the sources under --root (default: this checkout) — each one's
// single `= false;` declaration line, nothing else — and names the files it changed. Exits 2 on a bad
// argument, an unreadable log, or a constant it cannot find exactly once.
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { figures } from "./gpu-verdicts-figures.ts";
import { readCheckLogs } from "./gpu-verdicts-log.ts";
import { rerunLines } from "./gpu-verdicts-rerun.ts";
import { FLAGS, type Flag, judge } from "./gpu-verdicts-rules.ts";
import { attentionTilingModel, convTileModel, tileModel } from "./gpu-verdicts-tiles.ts";

/** The one declaration line of a constant: `constexpr bool NAME = …;` (CUDA) or `export const NAME = …;` (TypeScript). */
const declaration = (flag: string) => new RegExp(`^((?:constexpr bool|export const) ${flag} = )(true|false);$`, "gm");

/** The constant's value in `text`; throws unless it is declared exactly once. */
export function flagValue(text: string, flag: string, file: string): boolean {
  const found = [...text.matchAll(declaration(flag))];
  if (found.length !== 1) throw new Error(`${file}: ${found.length} declarations of ${flag} (one "constexpr bool ${flag} = …;" or "export const ${flag} = …;" line expected)`);
  return found[0]![2] === "true";
}

/** `text` with the constant's one `= false;` line made `= true;`. */
export function setFlag(text: string, flag: string, file: string): string {
  if (flagValue(text, flag, file)) throw new Error(`${file}: ${flag} is already true`);
  return text.replace(declaration(flag), "$1true;");
}

function main(args: string[]): number {
  const apply = args.includes("--apply");
  const rootAt = args.indexOf("--root");
  if (rootAt >= 0 && !args[rootAt + 1]) throw new Error("--root needs a directory");
  const root = rootAt >= 0 ? resolve(args[rootAt + 1]!) : resolve(import.meta.dir, "..");
  const files = args.filter((a, i) => a !== "--apply" && (rootAt < 0 || (i !== rootAt && i !== rootAt + 1)));
  const unknown = files.find((f) => f.startsWith("--"));
  if (unknown) throw new Error(`unknown option ${unknown} (options: --apply, --root DIR)`);
  if (!files.length) throw new Error("usage: bun tools/gpu-verdicts.ts OUT1/gpu-check.log [OUT2/gpu-check.log ...] [--apply] [--root DIR]");
  const logs = readCheckLogs(files.map((file) => {
    try {
      return { file, text: readFileSync(file, "utf8") };
    } catch (e) {
      throw new Error(`cannot read the log ${file}: ${(e as Error).message}`);
    }
  }));
  const sources = new Map<string, string>();
  const source = (file: string) => {
    if (!sources.has(file)) sources.set(file, readFileSync(join(root, file), "utf8"));
    return sources.get(file)!;
  };
  const current = Object.fromEntries((Object.keys(FLAGS) as Flag[]).map((f) => [f, flagValue(source(FLAGS[f]), f, FLAGS[f])])) as Record<Flag, boolean>;

  const out: string[] = [`gpu-check logs: ${logs.files.join(", ")}`, "", "== steps"];
  for (const s of logs.steps) {
    const where = s.runs.length > 1 ? ` [${s.runs.map((r) => `log ${r.log + 1} ${r.result}`).join(", ")}]` : s.runs.length && logs.files.length > 1 ? ` [log ${s.runs[0]!.log + 1}]` : "";
    const seconds = s.runs.length ? s.runs.reduce((a, r) => a + (r.seconds ?? 0), 0) : 0;
    out.push(`${s.result.padEnd(8)} ${String(seconds).padStart(5)} s  ${s.name}${s.note ? ` (${s.note})` : ""}${where}`);
  }
  for (const w of logs.warnings) out.push(`warning: ${w}`);
  out.push("", "== verdicts");
  const verdicts = judge(logs, current);
  for (const v of verdicts) {
    out.push(`${v.verdict.padEnd(11)} ${v.flag} (${FLAGS[v.flag]}): ${v.why}`);
    for (const e of v.evidence) out.push(`            ${e}`);
  }
  // models in the source judged by the run: what to change by hand, if anything
  out.push("", "== advice (no constant: --apply changes none of these)");
  for (const a of [tileModel(logs), attentionTilingModel(logs), convTileModel(logs)]) {
    out.push(`${a.verdict.padEnd(11)} ${a.name} (${a.source}): ${a.why}`);
    for (const e of a.evidence) out.push(`            ${e}`);
  }
  out.push("", "== figures for docs/BENCHMARKS.md's GPU section", ...figures(logs));
  out.push("", "== steps without a result: the next device run", ...rerunLines(logs, readFileSync(join(import.meta.dir, "gpu-check.sh"), "utf8")));

  const flips = verdicts.filter((v) => v.verdict === "FLIP");
  out.push("");
  if (!apply) out.push(flips.length ? `to set ${flips.map((v) => v.flag).join(", ")}: the same command with --apply` : "nothing to set");
  else if (!flips.length) out.push("--apply: nothing to set");
  else {
    const changed = new Set<string>();
    for (const v of flips) {
      const file = FLAGS[v.flag];
      sources.set(file, setFlag(source(file), v.flag, file));
      changed.add(file);
    }
    for (const file of changed) writeFileSync(join(root, file), sources.get(file)!);
    out.push(`--apply: set ${flips.map((v) => v.flag).join(", ")} to true in ${[...changed].join(", ")} (under ${root})`);
  }
  console.log(out.join("\n"));
  return 0;
}

if (import.meta.main) {
  try {
    process.exit(main(process.argv.slice(2)));
  } catch (e) {
    console.error(`gpu-verdicts: ${(e as Error).message}`);
    process.exit(2);
  }
}
