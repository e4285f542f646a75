// A device run whose budget cut steps, and the later run of only those (KINO_GPU_CHECK_STEPS), on
// tools/gpu-check.sh in its dry-run mode: what gpu-verdicts prints as the next device run, that the
// command runs exactly those steps, that the logs of both runs merge into every step with a result,
// and that a misspelt step function is refused before anything runs.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readCheckLogs } from "../../tools/gpu-verdicts-log.ts";
import { rerunLines, stepFunctions } from "../../tools/gpu-verdicts-rerun.ts";

const root = resolve(import.meta.dir, "../..");
const script = readFileSync(join(root, "tools/gpu-check.sh"), "utf8");

function check(env: Record<string, string>): { rc: number | null; log: string } {
  const out = mkdtempSync(join(tmpdir(), "kino-gpu-rerun-"));
  const r = Bun.spawnSync(["bash", "tools/gpu-check.sh"], { cwd: root, env: { ...process.env, KINO_GPU_CHECK_DRY_RUN: "1", OUT: out, ...env }, stdout: "pipe", stderr: "pipe" });
  return { rc: r.exitCode, log: readFileSync(join(out, "gpu-check.log"), "utf8") };
}

test("the steps a budget cut, then a run of only those: gpu-verdicts names them, and the two logs merge into results for all", () => {
  expect(stepFunctions(script).map((s) => s.fn)).toContain("op_sweep");
  // the bun part with room for its first steps only (1 s each, 2 s at least per step)
  const cut = check({ KINO_GPU_CHECK_PART: "bun", KINO_GPU_CHECK_DRY_SLEEP: "1", KINO_GPU_CHECK_BUDGET: "6", KINO_GPU_CHECK_MIN_STEP: "2" });
  const first = readCheckLogs([{ file: "cut", text: cut.log }]);
  const lines = rerunLines(first, script);
  const bunCommand = lines.find((l) => l.startsWith("KINO_GPU_CHECK_PART=bun "))!;
  const asked = /KINO_GPU_CHECK_STEPS=([\w,]+) /.exec(bunCommand)![1]!.split(",");
  expect(asked.at(-1)).toBe("op_sweep");
  expect(asked).not.toContain("causal_graphs"); // it ran
  expect(lines).toContain("  op_sweep: op sweep on CUDA (bun test) (budget spent)");
  // the python part's log was not given: its steps are the other command
  expect(lines.some((l) => l.startsWith("KINO_GPU_CHECK_PART=python KINO_GPU_CHECK_STEPS=unverified_hopper,conv3d,"))).toBe(true);

  const again = check({ KINO_GPU_CHECK_PART: "bun", KINO_GPU_CHECK_STEPS: asked.join(",") });
  expect(again.rc).toBe(0);
  const second = readCheckLogs([{ file: "again", text: again.log }]);
  for (const s of second.steps) {
    const fn = stepFunctions(script).find((f) => f.name === s.name)?.fn;
    if (!fn) continue; // device and build run every time
    expect(`${s.name}: ${s.result}`).toBe(`${s.name}: ${asked.includes(fn) ? "PASS" : "SKIPPED"}`);
  }
  const both = readCheckLogs([{ file: "cut", text: cut.log }, { file: "again", text: again.log }]);
  const bunSteps = stepFunctions(script).filter((f) => f.part === "bun").map((f) => f.name);
  expect(both.steps.filter((s) => bunSteps.includes(s.name)).every((s) => s.result === "PASS")).toBe(true);
  expect(rerunLines(both, script).some((l) => l.startsWith("KINO_GPU_CHECK_PART=bun"))).toBe(false);
}, 60_000);

test("a step function KINO_GPU_CHECK_STEPS names that gpu-check.sh does not have stops the run before any step", () => {
  const { rc, log } = check({ KINO_GPU_CHECK_STEPS: "op_sweep,multi_gpus" });
  expect(rc).toBe(2);
  expect(log).toContain("KINO_GPU_CHECK_STEPS: no step function 'multi_gpus' in tools/gpu-check.sh");
  expect(log).not.toContain("== device");
});
