// tools/gpu-check.sh's time budget (tools/gpu-check-steps.sh), where no GPU is: the harness itself run
// on stand-in steps — a step that passes, one that fails, one that finds nothing to check, one past its
// cap (cut, with its children, and its last lines quoted), one whose cap the budget cuts, and one the
// budget no longer fits — and the real script in its dry-run mode: every step in order, the
// unverified kernels and paths before the long op sweep, the end-to-end session right after the causal DiT
// steps, and a small budget cutting the tail.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");

function bash(script: string, env: Record<string, string>) {
  const r = Bun.spawnSync(["bash", "-c", script], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { rc: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

/** The summary's rows: [result, seconds, name + note]. */
function summaryRows(out: string): [string, number, string][] {
  const table = out.slice(out.lastIndexOf("== summary"));
  return [...table.matchAll(/^(PASS|FAIL|TIMEOUT|SKIPPED) +(\d+) s {2}(.*)$/gm)].map((m) => [m[1]!, Number(m[2]), m[3]!]);
}

test("steps under caps and one budget: PASS, FAIL, SKIPPED, TIMEOUT with what was measured, the rest skipped once the budget is spent", () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-gpu-steps-"));
  const late = join(dir, "child-outlived-its-step");
  const script = `
    source tools/gpu-check-steps.sh
    passes() { echo "attention 171.5 TFLOP/s"; }
    fails() { echo "FAIL gemm 97x70x520"; return 3; }
    no_bun() { echo "skipped: no bun"; return 77; }
    hangs() { echo "chunk 0: 0.379 s"; echo "chunk 1: 1.101 s"; (sleep 3; touch "${late}") & sleep 30; }
    long() { echo "sweep: 40 pass"; sleep 30; }
    export -f passes fails no_bun hangs long
    run_step "passes" 3 passes
    run_step "fails" 3 fails
    run_step "no bun" 3 no_bun
    run_step "hangs" 1 hangs
    run_step "long" 30 long
    run_step "too late" 10 passes
    summary`;
  const started = performance.now();
  const { rc, out } = bash(script, { KINO_GPU_CHECK_BUDGET: "5", KINO_GPU_CHECK_MIN_STEP: "2" });
  const took = (performance.now() - started) / 1000;
  expect(rc).toBe(1); // a step failed or timed out
  // the hung step is cut at its cap, and what it printed is quoted under the TIMEOUT line
  expect(out).toContain("TIMEOUT after 1 s (hangs); what was measured so far:\n  > chunk 0: 0.379 s\n  > chunk 1: 1.101 s");
  const rows = summaryRows(out);
  expect(rows.map(([r, , n]) => `${r} ${n}`)).toEqual([
    "PASS passes",
    "FAIL fails (exit 3)",
    "SKIPPED no bun (nothing to check here)",
    "TIMEOUT hangs (cap 1 s)",
    expect.stringMatching(/^TIMEOUT long \(cap cut to the budget's [34] s\)$/),
    "SKIPPED too late (budget spent)",
  ]);
  expect(rows[3]![1]).toBeLessThanOrEqual(2);
  // the whole run kept to the budget (plus the harness's own second or so)
  expect(took).toBeLessThan(8);
  // the hung step's child went with it: it never got to write its file
  Bun.sleepSync(3500 - (performance.now() - started - took * 1000));
  expect(existsSync(late)).toBe(false);
}, 30_000);

test("GPU_CHECK_RESERVE cuts a step's cap to leave the next step its seconds, never below the minimum step", () => {
  const script = `
    source tools/gpu-check-steps.sh
    long() { echo "attention: 3 of 4 shapes"; sleep 30; }
    passes() { echo "conv3d ok"; }
    export -f long passes
    GPU_CHECK_RESERVE=4 run_step "hopper" 30 long
    run_step "conv" 30 passes
    GPU_CHECK_RESERVE=100 run_step "starved" 30 long
    summary`;
  const started = performance.now();
  const { out } = bash(script, { KINO_GPU_CHECK_BUDGET: "10", KINO_GPU_CHECK_MIN_STEP: "2" });
  expect((performance.now() - started) / 1000).toBeLessThan(12);
  const rows = summaryRows(out).map(([r, , n]) => `${r} ${n}`);
  expect(rows[0]).toMatch(/^TIMEOUT hopper \(cap cut to [56] s, 4 s kept for the steps after it\)$/);
  expect(rows[1]).toMatch(/^PASS conv \(cap cut to the budget's [345] s\)$/);
  // a reserve larger than what is left still runs the step for the minimum (2 s here), not 0 s
  expect(rows[2]).toBe("TIMEOUT starved (cap cut to 2 s, 100 s kept for the steps after it)");
}, 30_000);

test("the device run's budget (two parts of 330 s): every step before a key one running to its cap still leaves that one its time", () => {
  // gpu-check.sh's steps as written: [part, name, cap, reserve]; device and build run in both parts
  const text = readFileSync(join(root, "tools/gpu-check.sh"), "utf8");
  const steps = [...text.matchAll(/^(?:GPU_CHECK_RESERVE=(\d+) )?(?:step (python|bun)|run_step) "([^"]+)" (\d+) \w+$/gm)]
    .map((m) => ({ reserve: Number(m[1] ?? 0), part: m[2] ?? "both", name: m[3]!, cap: Number(m[4]) }));
  expect(steps.length).toBe(15);
  // the worst case: nvidia-smi hanging to its cap, the build as long as on a slow device (its longest
  // file, gemm_wgmma_persistent.cu, took 36 s of one core here), then kept by the bun part; every
  // later step to its limit — run_step's arithmetic (tools/gpu-check-steps.sh)
  const limits = (part: string, budget = 330, minStep = 15) => {
    let left = budget;
    const out: Record<string, number> = {};
    for (const s of steps.filter((s) => s.part === "both" || s.part === part)) {
      if (left < minStep) { out[s.name] = 0; continue; }
      let limit = Math.min(s.cap, left);
      if (s.reserve > 0 && left - s.reserve < limit) limit = Math.max(left - s.reserve, minStep);
      const took = s.name.startsWith("build") ? (part === "python" ? 60 : 5) : limit;
      out[s.name] = limit;
      left -= took;
    }
    return out;
  };
  const at = (l: Record<string, number>, fragment: string) => Object.entries(l).find(([n]) => n.includes(fragment))![1];
  const python = limits("python"), bun = limits("bun");
  // step 3 (the unverified Hopper kernels: four processes, each with a 60 s watchdog) and step 8
  // (conv3d, its wgmma pass last), in the python part; steps 4 (graphs) and 5 (end to end) in the bun part
  expect(at(python, "wgmma attention vs PyTorch")).toBeGreaterThanOrEqual(130);
  expect(at(python, "conv3d vs PyTorch")).toBeGreaterThanOrEqual(120);
  expect(at(bun, "causal DiT as CUDA graphs")).toBe(150);
  expect(at(bun, "end to end: kino serve")).toBeGreaterThanOrEqual(120);
});

test("gpu-check.sh dry run: every step in order, the unverified paths first and the op sweep last; a small budget skips the tail", () => {
  const out1 = mkdtempSync(join(tmpdir(), "kino-gpu-check-"));
  const all = bash("bash tools/gpu-check.sh", { KINO_GPU_CHECK_DRY_RUN: "1", OUT: out1 });
  expect(all.rc).toBe(0);
  const names = summaryRows(all.out).map(([r, , n]) => `${r} ${n}`);
  expect(names.length).toBe(15);
  expect(names.every((n) => n.startsWith("PASS "))).toBe(true);
  const at = (s: string) => names.findIndex((n) => n.includes(s));
  for (const s of ["persistent wgmma GEMM", "ping-pong wgmma GEMM", "wgmma attention", "causal DiT as CUDA graphs", "bidirectional t2v clip", "readback of chunk i", "conv3d"]) {
    expect(at(s), s).toBeGreaterThan(at("build"));
    expect(at(s), s).toBeLessThan(at("GEMM and attention kernels vs PyTorch"));
  }
  expect(at("op sweep")).toBe(14);
  // the headline end-to-end session right after the causal DiT figures it is mostly made of
  expect(at("end to end: kino serve")).toBe(at("causal DiT as CUDA graphs") + 1);
  expect(all.out).toContain("dry run: would run e2e_realtime");
  expect(all.out).toContain("dry run: would run clip_graph");
  // the log lands in $OUT too
  expect(existsSync(join(out1, "gpu-check.log"))).toBe(true);

  const short = bash("bash tools/gpu-check.sh", { KINO_GPU_CHECK_DRY_RUN: "1", KINO_GPU_CHECK_DRY_SLEEP: "1", KINO_GPU_CHECK_BUDGET: "6", KINO_GPU_CHECK_MIN_STEP: "2", OUT: mkdtempSync(join(tmpdir(), "kino-gpu-check-")) });
  const rows = summaryRows(short.out);
  expect(rows.length).toBe(15);
  const ran = rows.filter(([r]) => r === "PASS").length;
  expect(ran).toBeGreaterThanOrEqual(3);
  expect(ran).toBeLessThanOrEqual(6);
  expect(rows.slice(ran).every(([r, , n]) => r === "SKIPPED" && n.endsWith("(budget spent)"))).toBe(true);
  expect(short.rc).toBe(0); // skipped for time is not a failure
}, 60_000);

test("gpu-check.sh in two parts: the python part runs the steps without bun, the bun part the rest, device and build in both", () => {
  const run = (part: string) => summaryRows(bash("bash tools/gpu-check.sh", { KINO_GPU_CHECK_DRY_RUN: "1", KINO_GPU_CHECK_PART: part, OUT: mkdtempSync(join(tmpdir(), "kino-gpu-check-")) }).out);
  const python = run("python"), bun = run("bun");
  expect(python.length).toBe(15);
  expect(bun.length).toBe(15);
  for (const rows of [python, bun]) expect(rows.slice(0, 2).map(([r]) => r)).toEqual(["PASS", "PASS"]);
  // every step after the build runs in exactly one of the two parts
  for (let i = 2; i < 15; i++) expect([python[i]![0], bun[i]![0]].sort(), python[i]![2]).toEqual(["PASS", "SKIPPED"]);
  const ranIn = (rows: typeof python, s: string) => rows.find(([, , n]) => n.includes(s))![0] === "PASS";
  expect(ranIn(python, "wgmma attention")).toBe(true);
  expect(ranIn(python, "conv3d")).toBe(true);
  expect(ranIn(bun, "end to end: kino serve")).toBe(true);
  expect(ranIn(bun, "image models at real size")).toBe(true);
  expect(ranIn(bun, "op sweep")).toBe(true);
}, 60_000);
