// What each hand-set fast-path constant needs from a tools/gpu-check.sh run before it may be set, and
// the verdict the logs give (tools/gpu-verdicts.ts prints them, and with --apply sets the FLIPs):
//   FLIP         every check it needs passed, on CUDA, and where speed is the point it measured faster
//                than the path it replaces, at every shape measured (a kernel at the Wan shapes);
//   KEEP         a check failed, hung or measured slower: the reason and the figures;
//   NO EVIDENCE  the step or part that would tell was not run, skipped, or cut before its result;
//   SET          the constant is already true in the source.
// Of the three GEMM kernels at most one flips (gemm.cu picks one of them): the fastest passing one, by
// the geometric mean of its speed-ups over the one-block-per-tile kernel at the Wan shapes. The wgmma
// conv flips once it kept its promise at every case of tools/gpu-check-conv.py and beat mma.sync at
// every Wan-VAE level timed, and no op-sweep test of the conv3d wgmma path failed.
import { type CheckLogs, type DataRecord, findRecord, findStep, readBunTest } from "./gpu-verdicts-log.ts";

export const FLAGS = {
  WGMMA_ATTENTION_VERIFIED: "kernels/cuda/attention.cu",
  GEMM_PERSISTENT_VERIFIED: "kernels/cuda/gemm.cu",
  GEMM_PERSISTENT_TMA_VERIFIED: "kernels/cuda/gemm.cu",
  GEMM_PINGPONG_VERIFIED: "kernels/cuda/gemm.cu",
  CONV_WGMMA_VERIFIED: "kernels/cuda/conv.cu",
  GRAPHS_VERIFIED: "src/models/dit-graph.ts",
  BF16_ACTIVATIONS_VERIFIED: "src/models/dit-activations.ts",
  READBACK_OVERLAP_VERIFIED: "src/pipelines/readback-overlap.ts",
  STREAM_OVERLAP_VERIFIED: "src/worker/stream-overlap.ts",
} as const;
export type Flag = keyof typeof FLAGS;

export interface Verdict {
  flag: Flag;
  verdict: "FLIP" | "KEEP" | "NO EVIDENCE" | "SET";
  why: string;
  evidence: string[];
}

/** Fragments of tools/gpu-check.sh's step names (test/tools/gpu-verdicts.test.ts holds them to the script). */
export const STEPS = {
  hopper: "wgmma attention vs PyTorch",
  causal: "causal DiT as CUDA graphs",
  e2e: "end to end: kino serve",
  clip: "bidirectional t2v clip",
  readback: "readback of chunk i overlapped",
  conv: "conv3d vs PyTorch",
  kernelsBench: "GEMM and attention benchmarks",
  opSweep: "op sweep on CUDA",
  deviceLost: "a kernel fault",
} as const;

type Outcome = Omit<Verdict, "flag">;
const keep = (why: string, evidence: string[] = []): Outcome => ({ verdict: "KEEP", why, evidence });
const none = (why: string, evidence: string[] = []): Outcome => ({ verdict: "NO EVIDENCE", why, evidence });
const f1 = (x: number) => x.toFixed(1), x2 = (x: number) => `${x.toFixed(2)}×`;

/** Why a record is absent: the step's own result says whether that is a failure or a lack of evidence. */
function absent(logs: CheckLogs, stepKey: keyof typeof STEPS, what: string): Outcome {
  const step = findStep(logs, STEPS[stepKey]);
  if (!step) return none(`${what}: step "${STEPS[stepKey]}" is not in the logs`);
  const said = `step "${STEPS[stepKey]}" ${step.result}${step.note ? ` (${step.note})` : ""}`;
  if (step.result === "FAIL") return keep(`${what}: ${said}, without printing its result (see the log)`);
  if (step.result === "PASS" || step.result === "?") return none(`${what}: ${said}, but printed no VERDICT-DATA for it`);
  return none(`${what}: ${said}, before its result`);
}

/** A record from a backend other than CUDA proves nothing about the device. */
const offDevice = (r: DataRecord, what: string) => (r.backend !== undefined && r.backend !== "cuda" ? none(`${what} ran on the ${r.backend} backend, not CUDA`) : null);

interface Row {
  label: string;
  kernel: string;
  kino: number;
  torch: number;
}
/** gpu-check-kernels.py's rows: [`LABEL [KERNEL]`, kino TFLOP/s, torch TFLOP/s]. */
export function rowsOf(r: DataRecord | undefined): Row[] {
  if (!r || !Array.isArray(r.rows)) return [];
  return (r.rows as [string, number, number][]).flatMap(([name, kino, torch]) => {
    const m = /^(.*) \[([^\]]+)\]$/.exec(name);
    return m ? [{ label: m[1]!, kernel: m[2]!, kino: Number(kino), torch: Number(torch) }] : []; // null (NaN) compares as not faster
  });
}

/** A kernels part's correctness: hung, skipped off sm_90, failed checks — or null when it passed. */
function kernelPart(r: DataRecord, part: string): Outcome | null {
  if (r.hung) return keep(`${part}: hung (the watchdog fired after ${r.watchdog_s ?? 120} s)`);
  if (Array.isArray(r.skipped) && r.skipped.includes(part)) return none(`${part}: not run, the GPU is not sm_90`);
  const failures = Array.isArray(r.failures) ? (r.failures as string[]) : [];
  if (failures.length) return keep(`${part}: ${failures.length} correctness check(s) failed: ${failures.slice(0, 3).join("; ")}${failures.length > 3 ? "; …" : ""}`);
  return null;
}

/** The candidate against the path it replaces, label by label: every shape faster, or the slower ones. */
function faster(cand: Row[], base: Row[], unit: string): { pairs: number; slower: string[]; evidence: string[]; geomean: number } {
  const evidence: string[] = [], slower: string[] = [];
  let logSum = 0, pairs = 0;
  for (const c of cand) {
    const b = base.find((r) => r.label === c.label);
    if (!b) continue;
    pairs++;
    const ratio = c.kino / b.kino;
    logSum += Math.log(ratio);
    evidence.push(`${c.label}: ${c.kernel} ${f1(c.kino)} vs ${b.kernel} ${f1(b.kino)} ${unit} (${x2(ratio)}; torch ${f1(c.torch)})`);
    if (!(ratio > 1)) slower.push(`${c.label} ${x2(ratio)}`);
  }
  return { pairs, slower, evidence, geomean: Math.exp(logSum / pairs) };
}

function wgmmaAttention(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "gpu-check-kernels", "wgmma");
  if (!r) return absent(logs, "hopper", "wgmma part");
  const broken = kernelPart(r, "wgmma");
  if (broken) return broken;
  const rows = rowsOf(r).filter((x) => x.label.startsWith("attention"));
  // mma.sync beside it in the same part; from the benchmarks step for a log of a script that did not time it there
  let base = rows.filter((x) => x.kernel === "mma.sync");
  if (!base.length) base = rowsOf(findRecord(logs, "gpu-check-kernels", "bench")).filter((x) => x.label.startsWith("attention") && x.kernel === "mma.sync");
  const cmp = faster(rows.filter((x) => x.kernel === "wgmma"), base, "TFLOP/s");
  if (!cmp.pairs) return none("wgmma part passed its correctness checks, but no mma.sync attention figures to compare with");
  if (cmp.slower.length) return keep(`passes, but slower than mma.sync at ${cmp.slower.join(", ")}`, cmp.evidence);
  return { verdict: "FLIP", why: `wgmma part: every correctness check passed; faster than mma.sync at all ${cmp.pairs} shapes`, evidence: cmp.evidence };
}

const GEMMS = [["persistent", "GEMM_PERSISTENT_VERIFIED"], ["persistent-tma", "GEMM_PERSISTENT_TMA_VERIFIED"], ["pingpong", "GEMM_PINGPONG_VERIFIED"]] as const;

function gemms(logs: CheckLogs, current: Record<Flag, boolean>): Verdict[] {
  const judged = GEMMS.map(([part, flag]) => {
    const r = findRecord(logs, "gpu-check-kernels", part);
    if (!r) return { flag, geomean: 0, ...absent(logs, "hopper", `${part} part`) };
    const broken = kernelPart(r, part);
    if (broken) return { flag, geomean: 0, ...broken };
    const wan = rowsOf(r).filter((x) => x.label.includes("Wan"));
    const cmp = faster(wan.filter((x) => x.kernel === part), wan.filter((x) => x.kernel === "wgmma"), "TFLOP/s");
    if (!cmp.pairs) return { flag, geomean: 0, ...none(`${part} part passed its correctness checks, but printed no Wan-shape figures`) };
    if (cmp.slower.length) return { flag, geomean: 0, ...keep(`passes, but slower than the one-block-per-tile kernel at ${cmp.slower.join(", ")}`, cmp.evidence) };
    return { flag, geomean: cmp.geomean, verdict: "FLIP" as Verdict["verdict"], why: `${part} part: every correctness check passed; faster than one block per tile at all ${cmp.pairs} Wan shapes (geometric mean ${x2(cmp.geomean)})`, evidence: cmp.evidence };
  });
  const set = GEMMS.find(([, flag]) => current[flag]);
  const best = judged.filter((j) => j.verdict === "FLIP").sort((a, b) => b.geomean - a.geomean)[0];
  return judged.map(({ geomean, ...v }) => {
    if (current[v.flag]) return { ...v, verdict: "SET" as const, why: "already true in gemm.cu" };
    if (v.verdict !== "FLIP") return v;
    if (set) return { ...v, verdict: "KEEP" as const, why: `${v.why}; but ${set[1]} is already set and gemm.cu takes one: compare by hand` };
    if (v.flag !== best!.flag) return { ...v, verdict: "KEEP" as const, why: `${v.why}; but ${best!.flag} is faster (${x2(best!.geomean)}) and gemm.cu takes one` };
    return v;
  });
}

/** The verdict once a flag's own checks passed: KEEP where the op sweep failed a test of `files`
 *  (basenames; with `name`, only tests whose name it matches), else FLIP for `why` (also when the sweep
 *  did not run); the sweep's counts join the evidence. */
function flipUnlessSweepFailed(logs: CheckLogs, files: string[], evidence: string[], why: string, name?: RegExp): Outcome {
  const step = findStep(logs, STEPS.opSweep);
  const counts = step?.runs.map((r) => readBunTest(r.lines)).find((c) => c);
  if (!counts) {
    evidence.push(`op sweep: ${step ? `${step.result}, no bun test counts` : "not in the logs"}`);
    return { verdict: "FLIP", why, evidence };
  }
  const failed = counts.failed.filter((f) => files.some((file) => f.split(":")[0]!.endsWith(file)) && (!name || name.test(f)));
  evidence.push(`op sweep: ${counts.pass} pass, ${counts.fail} fail, none in ${files.join(", ")}${name ? ` matching ${name}` : ""}`);
  if (failed.length) return keep(`op sweep: ${failed.length} test(s) failed: ${failed.slice(0, 3).join("; ")}`, evidence);
  return { verdict: "FLIP", why, evidence };
}

/** gpu-check-conv.py's wgmma pass: correctness at every case, then faster than mma.sync at every level timed. */
function convWgmma(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "gpu-check-conv");
  if (!r) return absent(logs, "conv", "conv3d check");
  const w = r.wgmma as { skipped: boolean; hung: boolean; cases: number; total: number };
  if (w.hung) return keep("wgmma pass: hung (the watchdog fired after 45 s)");
  if (w.skipped) return none("wgmma pass: not run, the GPU is not sm_90");
  const failures = (r.failures as string[]).filter((f) => f.startsWith("conv wgmma"));
  if (failures.length) return keep(`wgmma pass: ${failures.length} check(s) failed: ${failures.slice(0, 3).join("; ")}${failures.length > 3 ? "; …" : ""}`);
  if (w.cases < w.total) return none(`wgmma pass: ran ${w.cases} of ${w.total} cases (the mma.sync pass before it failed: see the log)`);
  const rows = rowsOf(r);
  const cmp = faster(rows.filter((x) => x.kernel === "wgmma"), rows.filter((x) => x.kernel === "mma.sync"), "TFLOP/s");
  if (!cmp.pairs) return none(`wgmma pass kept its promise at all ${w.cases} cases, but printed no figures beside mma.sync`);
  if (cmp.slower.length) return keep(`passes, but slower than mma.sync at ${cmp.slower.join(", ")}`, cmp.evidence);
  return flipUnlessSweepFailed(logs, ["ops.test.ts"], cmp.evidence,
    `wgmma pass: the promise kept at all ${w.cases} cases; faster than mma.sync at all ${cmp.pairs} Wan-VAE levels (geometric mean ${x2(cmp.geomean)})`, /conv3d on wgmma/);
}

type Way = "eager bf16" | "graphs bf16" | "eager f32" | "graphs f32";
const steady = (r: DataRecord) => r.steadyS as Record<Way, number>;

function graphs(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "dit-graph");
  if (!r) return absent(logs, "causal", "causal DiT graphs");
  const off = offDevice(r, "dit-graph.ts");
  if (off) return off;
  const checks = r.checks as Record<string, boolean>, s = steady(r);
  const evidence = [`causal: launches bit for bit ${checks.bitForBit ? "PASS" : "FAIL"} (${Number(r.compared) - Number(r.differing)}/${r.compared}), recordings only while the window fills ${checks.recordings ? "PASS" : "FAIL"}, no cudaMalloc in the steady state ${checks.noSteadyMalloc ? "PASS" : "FAIL"}`,
    ...(["bf16", "f32"] as const).map((dt) => `steady s per chunk, ${dt} activations: graphs ${s[`graphs ${dt}`].toFixed(4)} vs eager ${s[`eager ${dt}`].toFixed(4)} (${x2(s[`eager ${dt}`] / s[`graphs ${dt}`])})`)];
  const failed = (["bitForBit", "recordings", "noSteadyMalloc"] as const).filter((c) => !checks[c]);
  if (failed.length) return keep(`dit-graph.ts check(s) failed: ${failed.join(", ")}`, evidence);
  const slower = (["bf16", "f32"] as const).filter((dt) => !(s[`graphs ${dt}`] < s[`eager ${dt}`]));
  if (slower.length) return keep(`graphs not faster than eager per steady chunk with ${slower.join(" and ")} activations`, evidence);
  const clip = findRecord(logs, "dit-clip-graph");
  if (!clip) return { ...absent(logs, "clip", "bidirectional clip graph (GRAPHS_VERIFIED turns it on for clips too)"), evidence };
  const clipOff = offDevice(clip, "dit-clip-graph.ts");
  if (clipOff) return clipOff;
  evidence.push(`clip: ${clip.identical}/${clip.predictions} predictions and the final latent ${clip.latentIdentical ? "identical" : "DIFFER"}; s/step later eager ${Number(clip.eagerLaterS).toFixed(3)} vs graph ${Number(clip.graphLaterS).toFixed(3)}`);
  if (!clip.ok) return keep("the bidirectional clip's graph differs from eager", evidence);
  return flipUnlessSweepFailed(logs, ["dit-graph.test.ts", "dit-sequence-graph.test.ts"], evidence,
    "graph launches equal eager bit for bit (causal and clip), recorded only while the window fills, no steady cudaMalloc, faster both ways");
}

function bf16Activations(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "dit-graph");
  if (!r) return absent(logs, "causal", "bf16 against f32 activations");
  const off = offDevice(r, "dit-graph.ts");
  if (off) return off;
  const s = steady(r), checks = r.checks as Record<string, boolean>;
  const evidence = [`x0 max abs err ${Number(r.x0Worst).toExponential(2)} of max|x0| (bound ${r.x0Bound}): ${checks.x0 ? "PASS" : "FAIL"}`,
    ...(["eager", "graphs"] as const).map((w) => `steady s per chunk, ${w}: bf16 ${s[`${w} bf16`].toFixed(4)} vs f32 ${s[`${w} f32`].toFixed(4)} (${x2(s[`${w} f32`] / s[`${w} bf16`])})`)];
  if (!checks.x0) return keep("x0 with bf16 activations is outside its bound of f32's", evidence);
  const slower = (["eager", "graphs"] as const).filter((w) => !(s[`${w} bf16`] < s[`${w} f32`]));
  if (slower.length) return keep(`bf16 activations not faster than f32 per steady chunk (${slower.join(", ")})`, evidence);
  return flipUnlessSweepFailed(logs, ["dit-activations.test.ts"], evidence, "x0 within its bound of f32 activations and faster, eager and as graphs");
}

function readbackOverlap(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "readback-overlap");
  if (!r) return absent(logs, "readback", "overlapped readback");
  type Mode = { firstS: number; intervalMs: number; streamS: number };
  const sync = r.sync as Mode, overlap = r.overlap as Mode;
  const evidence = [`same bytes as the synchronous readback: ${r.sameBytes ? "PASS" : "FAIL"} (${r.runs} runs each, ${r.chunks} chunks)`,
    `steady chunk interval: overlap ${overlap.intervalMs.toFixed(1)} vs sync ${sync.intervalMs.toFixed(1)} ms; first chunk ${overlap.firstS.toFixed(3)} vs ${sync.firstS.toFixed(3)} s`];
  if (!r.sameBytes) return keep("the overlapped readback sent other bytes than the synchronous one", evidence);
  if (!(overlap.intervalMs < sync.intervalMs)) return keep("the steady chunk interval did not drop", evidence);
  return { verdict: "FLIP", why: "same bytes, and the steady chunk interval dropped", evidence };
}

function streamOverlap(logs: CheckLogs): Outcome {
  const r = findRecord(logs, "readback-overlap");
  if (!r) return absent(logs, "readback", "the encoder thread");
  type Mode = { firstS: number; intervalMs: number; streamS: number };
  const sync = r.sync as Mode, thread = r.thread as Mode | undefined;
  if (!thread) return none("the encoder thread: the readback-overlap record has no \"thread\" mode (a log of an older check)");
  const evidence = [`same bytes as inline encoding: ${r.sameBytes ? "PASS" : "FAIL"} (${r.runs} runs each, ${r.chunks} chunks)`,
    `steady chunk interval: encoder thread ${thread.intervalMs.toFixed(1)} vs inline ${sync.intervalMs.toFixed(1)} ms; first chunk ${thread.firstS.toFixed(3)} vs ${sync.firstS.toFixed(3)} s`];
  if (!r.sameBytes) return keep("the encoder thread sent other bytes than inline encoding", evidence);
  if (!(thread.intervalMs < sync.intervalMs)) return keep("the steady chunk interval did not drop", evidence);
  return { verdict: "FLIP", why: "same bytes, and the steady chunk interval dropped", evidence };
}

/** A rule that cannot read its record (a field missing or null) gives no evidence rather than ending the tool. */
function guarded<T>(what: string, rule: () => T, fallback: (o: Outcome) => T): T {
  try {
    return rule();
  } catch (e) {
    return fallback(none(`${what}: its VERDICT-DATA could not be read (${(e as Error).message})`));
  }
}

/** Every flag's verdict, in FLAGS' order; `current`: the constants' values in the source now. */
export function judge(logs: CheckLogs, current: Record<Flag, boolean>): Verdict[] {
  const single: [Flag, (l: CheckLogs) => Outcome][] = [["WGMMA_ATTENTION_VERIFIED", wgmmaAttention], ["CONV_WGMMA_VERIFIED", convWgmma], ["GRAPHS_VERIFIED", graphs],
    ["BF16_ACTIVATIONS_VERIFIED", bf16Activations], ["READBACK_OVERLAP_VERIFIED", readbackOverlap], ["STREAM_OVERLAP_VERIFIED", streamOverlap]];
  const all: Verdict[] = [...guarded("GEMM parts", () => gemms(logs, current), (o) => GEMMS.map(([, flag]) => ({ flag, ...o }))),
    ...single.map(([flag, rule]) => (current[flag] ? { flag, verdict: "SET" as const, why: `already true in ${FLAGS[flag]}`, evidence: [] } : { flag, ...guarded(flag, () => rule(logs), (o) => o) }))];
  return (Object.keys(FLAGS) as Flag[]).map((flag) => all.find((v) => v.flag === flag)!);
}
