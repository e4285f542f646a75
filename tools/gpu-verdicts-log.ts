// Reading tools/gpu-check.sh logs for tools/gpu-verdicts.ts: the steps (the harness's `== NAME (cap …)`
// headers, tools/gpu-check-steps.sh, and its summary table), each step's output, the one-line
// `VERDICT-DATA {json}` results the checks print (gpu_check_common.verdict_data, tools/bench/dit-graph.ts,
// dit-clip-graph.ts, readback-overlap.ts, e2e-realtime.ts) and bun test's counts (the op sweep). Several
// logs — the python and the bun part of a split run, and a later run of what they left
// (KINO_GPU_CHECK_STEPS) — merge into one list of steps: a step the harness left to the other part
// (`== NAME: in the other part`) or skipped takes its result from the log that ran it.

export type StepResult = "PASS" | "FAIL" | "TIMEOUT" | "SKIPPED" | "CUT" | "?";

/** One log's run of a step: `CUT` where the log ends inside it, `?` where the log has no summary to say. */
export interface StepRun {
  log: number;
  result: StepResult;
  seconds: number | null;
  note: string;
  lines: string[];
}

export interface Step {
  name: string;
  /** The logs that ran it (device and build run in both parts). */
  runs: StepRun[];
  /** The part a log left it to (KINO_GPU_CHECK_PART=python or bun), where one did. */
  otherPart: string | null;
  result: StepResult;
  note: string;
}

/** A VERDICT-DATA line, with the step and log it was printed in. */
export interface DataRecord {
  script: string;
  step: string;
  log: number;
  [field: string]: unknown;
}

export interface CheckLogs {
  files: string[];
  steps: Step[];
  records: DataRecord[];
  /** Lines that could not be read (a VERDICT-DATA line that is not JSON). */
  warnings: string[];
}

const HEADER = /^== (.*) \(cap (\d+) s, budget left (-?\d+) s\)$/;
const OTHER_PART = /^== (.*): in the other part \(KINO_GPU_CHECK_PART=(\w+)\)$/;
const SUMMARY = /^== summary \(\d+ s of a \d+ s budget\)$/;
const SUMMARY_ROW = /^(PASS|FAIL|TIMEOUT|SKIPPED) +(\d+) s {2}(.*)$/;
const DATA = "VERDICT-DATA ";
/** When several logs ran a step, the result shown is the worst of the runs that gave one (a step a
 *  budget cut or KINO_GPU_CHECK_STEPS left out in one run and a later run ran is that run's). */
const WORST_FIRST: StepResult[] = ["FAIL", "TIMEOUT", "CUT", "?", "SKIPPED", "PASS"];

interface Section {
  name: string;
  otherPart: string | null;
  lines: string[];
}

/** One log's sections and summary rows; throws naming the file when it has no step in it. */
function readLog(text: string, file: string): { sections: Section[]; summary: [StepResult, number, string][] | null } {
  const sections: Section[] = [];
  let summary: [StepResult, number, string][] | null = null;
  for (const line of text.split(/\r?\n/)) {
    const header = HEADER.exec(line), other = OTHER_PART.exec(line);
    if (SUMMARY.test(line)) summary = [];
    else if (summary) {
      const row = SUMMARY_ROW.exec(line);
      if (row) summary.push([row[1] as StepResult, Number(row[2]), row[3]!]);
    } else if (header || other) sections.push({ name: (header ?? other)![1]!, otherPart: other ? other[2]! : null, lines: [] });
    else sections.at(-1)?.lines.push(line);
  }
  if (!sections.length) throw new Error(`${file}: no "== STEP (cap …)" line in it: not a tools/gpu-check.sh log`);
  return { sections, summary };
}

/** A step's result in one log: the summary's row, or without a summary (the log was cut) what its output shows. */
function resultOf(section: Section, row: [StepResult, number, string] | undefined, last: boolean): Omit<StepRun, "log" | "lines"> {
  if (row) {
    const rest = row[2].startsWith(section.name) ? row[2].slice(section.name.length) : "";
    return { result: row[0], seconds: row[1], note: rest.replace(/^ \((.*)\)$/, "$1") };
  }
  const first = section.lines.find((l) => l.trim() !== "") ?? "";
  if (first.startsWith("SKIPPED: ")) return { result: "SKIPPED", seconds: 0, note: first.slice(9) };
  if (section.lines.some((l) => /^TIMEOUT after \d+ s/.test(l))) return { result: "TIMEOUT", seconds: null, note: "the log has no summary" };
  return last ? { result: "CUT", seconds: null, note: "the log ends inside this step" } : { result: "?", seconds: null, note: "the log has no summary" };
}

/** JSON of a VERDICT-DATA line; Python's json.dumps writes NaN and Infinity bare, which become null. */
function parseData(json: string): Record<string, unknown> {
  return JSON.parse(json.replace(/([:[,]\s*)-?(?:NaN|Infinity)(?=\s*[,\]}])/g, "$1null"));
}

export function readCheckLogs(logs: { file: string; text: string }[]): CheckLogs {
  const steps: Step[] = [], records: DataRecord[] = [], warnings: string[] = [];
  const stepNamed = (name: string) => {
    let step = steps.find((s) => s.name === name);
    if (!step) steps.push((step = { name, runs: [], otherPart: null, result: "?", note: "" }));
    return step;
  };
  logs.forEach(({ file, text }, log) => {
    const { sections, summary } = readLog(text, file);
    sections.forEach((section, i) => {
      const step = stepNamed(section.name);
      if (section.otherPart) {
        step.otherPart = section.otherPart;
        return;
      }
      step.runs.push({ log, lines: section.lines, ...resultOf(section, summary?.[i], i === sections.length - 1 && !summary) });
      for (const line of section.lines) {
        if (!line.startsWith(DATA)) continue; // a TIMEOUT's quoted tail ("  > …") repeats lines: read each once
        try {
          const data = parseData(line.slice(DATA.length));
          records.push({ ...data, script: String(data.script), step: section.name, log });
        } catch (e) {
          warnings.push(`${file}: a VERDICT-DATA line in "${section.name}" is not JSON (${(e as Error).message})`);
        }
      }
    });
  });
  for (const step of steps) {
    if (!step.runs.length) {
      step.result = "SKIPPED";
      step.note = `in the ${step.otherPart} part, whose log was not given`;
      continue;
    }
    const ran = step.runs.filter((r) => r.result !== "SKIPPED");
    const runs = ran.length ? ran : step.runs;
    const worst = WORST_FIRST.find((r) => runs.some((run) => run.result === r))!;
    const run = runs.find((r) => r.result === worst)!;
    step.result = worst;
    step.note = run.note;
  }
  return { files: logs.map((l) => l.file), steps, records, warnings };
}

/** The step whose name contains `fragment` (the names are tools/gpu-check.sh's). */
export function findStep(logs: CheckLogs, fragment: string): Step | undefined {
  return logs.steps.find((s) => s.name.includes(fragment));
}

/** The last record a script printed (with `part`: whose `parts` list has it: gpu-check-kernels.py's). */
export function findRecord(logs: CheckLogs, script: string, part?: string): DataRecord | undefined {
  return logs.records.findLast((r) => r.script === script && (part === undefined || (Array.isArray(r.parts) && r.parts.includes(part))));
}

export interface BunTestCounts {
  pass: number;
  fail: number;
  files: number | null;
  /** "file: test name" of every failed test. */
  failed: string[];
}

/** bun test's own report in a step's output: `(fail) NAME` under its `FILE:` line, then ` N pass`, ` N fail`, `Ran N tests across M files.` */
export function readBunTest(lines: string[]): BunTestCounts | null {
  let file = "", pass: number | null = null, fail = 0, files: number | null = null;
  const failed: string[] = [];
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if ((m = /^(\S.*\.test\.[jt]sx?):$/.exec(line))) file = m[1]!;
    else if ((m = /^\(fail\) (.*?)(?: \[[\d.]+m?s\])?$/.exec(line))) failed.push(`${file}: ${m[1]}`);
    else if ((m = /^ (\d+) pass$/.exec(line))) pass = Number(m[1]);
    else if ((m = /^ (\d+) fail$/.exec(line))) fail = Number(m[1]);
    else if ((m = /^Ran \d+ tests? across (\d+) files?\./.exec(line))) files = Number(m[1]);
  }
  return pass === null ? null : { pass, fail, files, failed };
}
