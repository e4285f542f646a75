// For tools/gpu-verdicts.ts: the steps of a tools/gpu-check.sh run that gave no result — cut by their
// cap or the budget, left out by KINO_GPU_CHECK_STEPS, in a part whose log is missing, or after a
// failed build — and per part the command that runs only them (KINO_GPU_CHECK_STEPS), so that a later
// device call spends its minutes there. A step that ran (PASS or FAIL) or found nothing to check on
// that machine (exit 77) is not among them.
import type { CheckLogs, Step } from "./gpu-verdicts-log.ts";

export interface StepFunction {
  name: string;
  part: "python" | "bun";
  fn: string;
}

/** The steps a part may run, as tools/gpu-check.sh declares them: `step KIND "NAME" CAP FUNCTION`. */
export function stepFunctions(script: string): StepFunction[] {
  return [...script.matchAll(/^(?:GPU_CHECK_RESERVE=\d+ )?step (python|bun) "([^"]+)" \d+ (\w+)$/gm)]
    .map((m) => ({ part: m[1] as StepFunction["part"], name: m[2]!, fn: m[3]! }));
}

const gaveNoResult = (s: Step) =>
  s.result === "TIMEOUT" || s.result === "CUT" || s.result === "?" || (s.result === "SKIPPED" && s.note !== "nothing to check here");

export function rerunLines(logs: CheckLogs, script: string): string[] {
  const fns = stepFunctions(script);
  const missing = logs.steps.filter(gaveNoResult).flatMap((s) => fns.filter((f) => f.name === s.name).map((f) => ({ ...f, why: s.result === "SKIPPED" ? s.note : s.result })));
  if (!missing.length) return ["every step gave a result"];
  const out: string[] = [];
  for (const part of ["python", "bun"] as const) {
    const steps = missing.filter((m) => m.part === part);
    if (!steps.length) continue;
    out.push(`KINO_GPU_CHECK_PART=${part} KINO_GPU_CHECK_STEPS=${steps.map((s) => s.fn).join(",")} bash tools/gpu-check.sh`);
    for (const s of steps) out.push(`  ${s.fn}: ${s.name} (${s.why})`);
  }
  return out;
}
