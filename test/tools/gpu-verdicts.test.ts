// tools/gpu-verdicts.ts on logs of tools/gpu-check.sh: the real script run in its dry-run mode with each
// step's device output played through the harness (test/helpers/gpu-check-fixture.ts: the lines the
// check scripts print, figures chosen per case), split in its python and bun parts as a run on the device
// is. What a user sees: the merged step table, each constant's verdict and why, the rows for
// docs/BENCHMARKS.md, and --apply setting exactly the FLIP constants in a copy of the sources.
import { expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  CONV_LEVELS, CONV_TILES, MMA_ATTENTION, MMA_GEMM, QUIET, type StepFixture, TILING_SHAPES, type Way, benchPart, clipGraph, convPart, ditGraph, e2eRealtime,
  gemmPart, opSweep, readbackOverlap, runCheck, verifyPart, wgmmaPart,
} from "../helpers/gpu-check-fixture.ts";
import { FLAGS, STEPS } from "../../tools/gpu-verdicts-rules.ts";
import { ATTENTION_TILINGS, CONV_MMA_TILES, MMA_TILES } from "../../tools/gpu-verdicts-tiles.ts";

const root = resolve(import.meta.dir, "../..");
const TILES = "mma.sync GEMM tile model (kernels/cuda/gemm_mma_tiles.cuh)";
const TILINGS = "mma.sync attention tiling model (kernels/cuda/attention_mma_tiles.cuh)";
const CONV_MODEL = "mma.sync conv tile model (kernels/cuda/conv_mma_tiles.cuh)";

function verdicts(args: string[]) {
  const r = Bun.spawnSync([process.execPath, "tools/gpu-verdicts.ts", ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const out = r.stdout.toString();
  const lines = out.split("\n");
  /** flag → [verdict, why], and the evidence lines under it */
  const judged: Record<string, [string, string, string[]]> = {};
  for (const [i, line] of lines.entries()) {
    const m = /^(FLIP|KEEP|NO EVIDENCE|SET) +(\w+) \([^)]+\): (.*)$/.exec(line);
    if (!m) continue;
    const evidence: string[] = [];
    for (let j = i + 1; lines[j]?.startsWith("            "); j++) evidence.push(lines[j]!.trim());
    judged[m[2]!] = [m[1]!, m[3]!, evidence];
  }
  /** advice name → [verdict, why], and the evidence lines under it */
  const advice: Record<string, [string, string, string[]]> = {};
  for (const [i, line] of lines.entries()) {
    const m = /^(AGREES|DISAGREES|NO EVIDENCE) +(.+?) \(([^)]+)\): (.*)$/.exec(line);
    if (!m || m[2]!.includes("_VERIFIED")) continue;
    const evidence: string[] = [];
    for (let j = i + 1; lines[j]?.startsWith("            "); j++) evidence.push(lines[j]!.trim());
    advice[`${m[2]} (${m[3]})`] = [m[1]!, m[4]!, evidence];
  }
  const steps = [...out.matchAll(/^(PASS|FAIL|TIMEOUT|SKIPPED|CUT|\?) +\d+ s {2}(.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  return { rc: r.exitCode, out, err: r.stderr.toString(), judged, advice, tiles: advice[TILES], tilings: advice[TILINGS], convTiles: advice[CONV_MODEL], steps, verdict: (flag: string) => judged[flag]?.[0] };
}

const FAST: Record<Way, number> = { "eager bf16": 0.951, "graphs bf16": 0.812, "eager f32": 1.103, "graphs f32": 0.967 };
interface Device {
  wgmma?: Parameters<typeof wgmmaPart>[0];
  gemm?: Record<string, Parameters<typeof gemmPart>[1]>;
  conv?: Parameters<typeof convPart>[0];
  steadyS?: Record<Way, number>;
  bench?: Parameters<typeof benchPart>[0];
  sweepFailed?: [string, string][];
  /** The steady chunk interval with the encoder thread (the inline one is 412.3 ms). */
  threadMs?: number;
}
function pythonPart(d: Device = {}, extra: Record<string, StepFixture | string> = {}, env: Record<string, string> = {}) {
  const gemm: Record<string, Parameters<typeof gemmPart>[1]> = { persistent: { speedup: 1.04 }, pingpong: { speedup: 1.09 }, "persistent-tma": { speedup: 1.06 }, ...d.gemm };
  const hopper = [...wgmmaPart(d.wgmma ?? { tflops: [452.1, 461.3, 470.2, 380.5] }),
    ...(["persistent", "pingpong", "persistent-tma"] as const).flatMap((p) => gemmPart(p, gemm[p]!))];
  const failed = !!d.wgmma?.failing || d.wgmma?.bkv176 === "failing" || Object.values(gemm).some((g) => g.failing || g.hang);
  const conv = d.conv ?? { speedup: 1.3 };
  return runCheck("python", { ...QUIET, unverified_hopper: { lines: hopper, rc: failed ? 1 : 0 }, kernels_bench: { lines: benchPart(d.bench) },
    conv3d: { lines: convPart(conv), rc: conv.failing || conv.hang || conv.brokenTiles?.length ? 1 : 0 }, ...extra }, env);
}
function bunPart(d: Device = {}, extra: Record<string, StepFixture | string> = {}, env: Record<string, string> = {}) {
  return runCheck("bun", {
    ...QUIET, causal_graphs: { lines: ditGraph({ steadyS: d.steadyS ?? FAST }) }, e2e_realtime: { lines: e2eRealtime() }, clip_graph: { lines: clipGraph() },
    readback_overlap: { lines: readbackOverlap({ syncMs: 412.3, overlapMs: 377.9, threadMs: d.threadMs ?? 398.6 }) }, op_sweep: { lines: opSweep(d.sweepFailed), rc: d.sweepFailed?.length ? 1 : 0 }, ...extra,
  }, env);
}

/** A copy of the files the constants live in, under a temporary root. */
function sourcesCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "kino-verdict-src-"));
  for (const file of new Set(Object.values(FLAGS))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(root, file), join(dir, file));
  }
  return dir;
}
/** The lines of `file` that differ between the checkout and the copy: [line number, checkout's, copy's]. */
function changedLines(copy: string, file: string): [number, string, string][] {
  const a = readFileSync(join(root, file), "utf8").split("\n"), b = readFileSync(join(copy, file), "utf8").split("\n");
  expect(b.length).toBe(a.length);
  return a.flatMap((line, i) => (line === b[i] ? [] : [[i + 1, line, b[i]!] as [number, string, string]]));
}

test("every check passes and measures faster: each constant FLIPs (of the GEMMs the fastest), the figures come out as rows; --apply sets exactly those lines", () => {
  const logs = [pythonPart(), bunPart()];
  const r = verdicts(logs);
  expect(r.rc, r.err).toBe(0);
  expect(r.steps).toHaveLength(15);
  expect(r.steps.every((s) => s.startsWith("PASS "))).toBe(true);
  expect(r.steps[0]).toBe("PASS device [log 1 PASS, log 2 PASS]");
  expect(r.steps.find((s) => s.includes(STEPS.hopper))).toEndWith("[log 1]");
  expect(r.steps.find((s) => s.includes(STEPS.opSweep))).toEndWith("[log 2]");
  expect(Object.fromEntries(Object.entries(r.judged).map(([f, [v]]) => [f, v]))).toEqual({
    WGMMA_ATTENTION_VERIFIED: "FLIP", GEMM_PERSISTENT_VERIFIED: "KEEP", GEMM_PERSISTENT_TMA_VERIFIED: "KEEP", GEMM_PINGPONG_VERIFIED: "FLIP",
    CONV_WGMMA_VERIFIED: "FLIP", GRAPHS_VERIFIED: "FLIP", BF16_ACTIVATIONS_VERIFIED: "FLIP", READBACK_OVERLAP_VERIFIED: "FLIP", STREAM_OVERLAP_VERIFIED: "FLIP",
  });
  expect(r.judged.CONV_WGMMA_VERIFIED![1]).toBe("wgmma pass: the promise kept at all 16 cases; faster than mma.sync at all 4 Wan-VAE levels (geometric mean 1.30×)");
  expect(r.judged.CONV_WGMMA_VERIFIED![2]).toContain("conv3d 384→384 3³ 208x120 T2: wgmma 309.9 vs mma.sync 238.4 TFLOP/s (1.30×; torch 402.7)");
  expect(r.judged.CONV_WGMMA_VERIFIED![2]).toContain("op sweep: 412 pass, 0 fail, none in ops.test.ts matching /conv3d on wgmma/");
  expect(r.judged.GEMM_PINGPONG_VERIFIED![1]).toContain("faster than one block per tile at all 6 Wan shapes (geometric mean 1.09×)");
  expect(r.judged.GEMM_PERSISTENT_VERIFIED![1]).toContain("but GEMM_PINGPONG_VERIFIED is faster (1.09×) and gemm.cu takes one");
  expect(r.judged.WGMMA_ATTENTION_VERIFIED![2]).toContain("attention 12x128 Lq=4680 Lk=4680: wgmma 452.1 vs mma.sync 175.2 TFLOP/s (2.58×; torch 526.3)");
  expect(r.judged.READBACK_OVERLAP_VERIFIED![2]).toContain("steady chunk interval: overlap 377.9 vs sync 412.3 ms; first chunk 0.409 vs 0.412 s");
  expect(r.judged.STREAM_OVERLAP_VERIFIED![2]).toContain("steady chunk interval: encoder thread 398.6 vs inline 412.3 ms; first chunk 0.413 vs 0.412 s");
  expect(r.judged.GRAPHS_VERIFIED![2]).toContain("op sweep: 412 pass, 0 fail, none in dit-graph.test.ts, dit-sequence-graph.test.ts");
  // the rows for docs/BENCHMARKS.md
  for (const row of ["| attention 12×128 Lq=4680 Lk=4680 (wgmma) | 452.1 | 526.3 | 0.86 |", "| GEMM Wan QKV 4680×4608×1536 (auto) | 553.1 | 748.2 | 0.74 |",
    "| GEMM Wan QKV 4680×4608×1536 (mma.sync) | 431.7 | 748.2 | 0.58 |", "| GEMM Wan QKV 4680×4608×1536 (mma.sync 128x256) | 410.2 | 748.2 | 0.55 |",
    "| GEMM Wan QKV 4680×4608×1536 (mma.sync 128x192) | 431.7 | 748.2 | 0.58 |", "| GEMM Wan QKV 4680×4608×1536 (mma.sync 128x128) | 318.4 | 748.2 | 0.43 |",
    "| Wan FFN up +gelu | 605.0 | 629.1 | 641.3 | 659.4 | 779.4 |", "| Wan QKV split 3 → bf16 | 536.5 | 547.2 | 568.7 | — | 748.2 |",
    "| s per chunk, first / steady (chunks ≥ 7) | 0.379 / 0.9510 | 0.512 / 0.8120 | 0.401 / 1.1030 | 0.538 / 0.9670 |", "| video fps of DiT throughput, steady | 12.6 | 14.8 | 10.9 | 12.4 |",
    "| session.start → first media chunk, the next session (a new prompt) | 0.470 s | ≤ 0.5 s: met |", "| steady video fps (frames per wall s, chunks 7–16) | 31.7 | ≥ 30: met |",
    "| real-time factor (media s per wall s) | 1.98× | ≥ 1.875× (30 fps of 16 fps video) |", "| overlap | 0.409 | 377.9 | 4.62 |", "| op sweep on CUDA (bun test, 6 files) | 412 pass, 0 fail |",
    "| 384→384 3³ 208x120 T2 | 238.4 | 309.9 | 402.7 | 1.30 |", "| 96→3 3³ 832x480 T4 (head) | 31.4 | — | 12.8 | — |"]) {
    expect(r.out).toContain(`\n${row}\n`);
  }
  // the mma.sync tile model: advice beside the verdicts, its table among the figures
  expect(r.tiles!.slice(0, 2)).toEqual(["AGREES", "at all 5 shapes on 132 SMs the pick is within 3 % of the fastest tile forced"]);
  expect(r.tiles![2]).toContain("Wan QKV 4680x4608x1536: picks 128x192 at 431.7 TFLOP/s, 1.00 of the fastest forced (128x192); forced 128x256 410.2, 128x192 431.7, 128x128 318.4");
  expect(r.out).toContain("\n== advice (no constant: --apply changes none of these)\n");
  for (const row of ["| shape (132 SMs) | model picks | the pick | 128x256 forced | 128x192 forced | 128x128 forced | pick / fastest forced |",
    "| Wan QKV 4680×4608×1536 | 128x192 | 431.7 | 410.2 | 431.7 | 318.4 | 1.00 |"]) {
    expect(r.out).toContain(`\n${row}\n`);
  }
  expect(r.out).toContain("device: NVIDIA H200, 570.124.06, 143771 MiB, 1980 MHz");
  expect(r.out).toContain("| what | NVIDIA H200 | target |");
  expect(r.out).toContain("to set WGMMA_ATTENTION_VERIFIED, GEMM_PINGPONG_VERIFIED, CONV_WGMMA_VERIFIED, GRAPHS_VERIFIED, BF16_ACTIVATIONS_VERIFIED, READBACK_OVERLAP_VERIFIED, STREAM_OVERLAP_VERIFIED: the same command with --apply");

  const before = Object.values(FLAGS).map((f) => readFileSync(join(root, f), "utf8"));
  const copy = sourcesCopy();
  const applied = verdicts([...logs, "--apply", "--root", copy]);
  expect(applied.rc, applied.err).toBe(0);
  expect(applied.out).toContain(`--apply: set WGMMA_ATTENTION_VERIFIED, GEMM_PINGPONG_VERIFIED, CONV_WGMMA_VERIFIED, GRAPHS_VERIFIED, BF16_ACTIVATIONS_VERIFIED, READBACK_OVERLAP_VERIFIED, STREAM_OVERLAP_VERIFIED to true in kernels/cuda/attention.cu, kernels/cuda/gemm.cu, kernels/cuda/conv.cu, src/models/dit-graph.ts, src/models/dit-activations.ts, src/pipelines/readback-overlap.ts, src/worker/stream-overlap.ts (under ${copy})`);
  const flipped = (file: string) => changedLines(copy, file).map(([, was, now]) => `${was} → ${now}`);
  expect(flipped("kernels/cuda/attention.cu")).toEqual(["constexpr bool WGMMA_ATTENTION_VERIFIED = false; → constexpr bool WGMMA_ATTENTION_VERIFIED = true;"]);
  expect(flipped("kernels/cuda/gemm.cu")).toEqual(["constexpr bool GEMM_PINGPONG_VERIFIED = false; → constexpr bool GEMM_PINGPONG_VERIFIED = true;"]);
  expect(flipped("kernels/cuda/conv.cu")).toEqual(["constexpr bool CONV_WGMMA_VERIFIED = false; → constexpr bool CONV_WGMMA_VERIFIED = true;"]);
  expect(flipped("src/models/dit-graph.ts")).toEqual(["export const GRAPHS_VERIFIED = false; → export const GRAPHS_VERIFIED = true;"]);
  expect(flipped("src/models/dit-activations.ts")).toEqual(["export const BF16_ACTIVATIONS_VERIFIED = false; → export const BF16_ACTIVATIONS_VERIFIED = true;"]);
  expect(flipped("src/pipelines/readback-overlap.ts")).toEqual(["export const READBACK_OVERLAP_VERIFIED = false; → export const READBACK_OVERLAP_VERIFIED = true;"]);
  expect(flipped("src/worker/stream-overlap.ts")).toEqual(["export const STREAM_OVERLAP_VERIFIED = false; → export const STREAM_OVERLAP_VERIFIED = true;"]);
  // once set, the same logs set nothing more: the GEMMs judged beside the one already set
  const again = verdicts([...logs, "--apply", "--root", copy]);
  expect(again.verdict("WGMMA_ATTENTION_VERIFIED")).toBe("SET");
  expect(again.judged.GEMM_PERSISTENT_VERIFIED![1]).toContain("GEMM_PINGPONG_VERIFIED is already set and gemm.cu takes one: compare by hand");
  expect(again.out).toContain("--apply: nothing to set");
  expect(flipped("kernels/cuda/gemm.cu")).toHaveLength(1);
  // the checkout's own sources untouched
  expect(Object.values(FLAGS).map((f) => readFileSync(join(root, f), "utf8"))).toEqual(before);
}, 60_000);

test("the wgmma attention's stream-K schedule: a figure table beside unsplit items saying where it is faster", () => {
  const r = verdicts([pythonPart({ wgmma: { tflops: [452.1, 461.3, 470.2, 380.5], whole: [390.3, 401.2, 405.7, 380.1] } })]);
  for (const line of ["| shape (D 128) | stream-K | unsplit | stream-K / unsplit | SDPA |", "| attention 12×128 Lq=4680 Lk=32760 | 470.2 | 405.7 | 1.16 | 558.4 |",
    "stream-K faster at 4 of 4 shapes (where the model keeps a shape unsplit, both rows time the same launch)"]) {
    expect(r.out).toContain(`\n${line}\n`);
  }
  expect(r.judged.WGMMA_ATTENTION_VERIFIED![0]).toBe("FLIP");
  // a log of a script from before the schedule: said, not a table
  expect(verdicts([pythonPart()]).out).toContain("\n(the wgmma part of this log timed no wgmma attention unsplit: its checks failed, or it predates the schedule)\n");
});

test("a kernel fault on purpose: the step's PASS line, or what kept it from running", () => {
  const pass = "PASS the backend's next call threw DeviceLostError (cudaErrorIllegalAddress, 700): The CUDA device context is lost (cudaErrorIllegalAddress, error 700): cuda fill: …";
  expect(verdicts([pythonPart(), bunPart({}, { device_lost: { lines: ["before the fault: a fill and its readback work (1024 values, first 1)", pass] } })]).out)
    .toContain(`\n### a kernel fault: the CUDA backend's next call\n${pass}\n`);
  const failed = verdicts([pythonPart(), bunPart({}, { device_lost: { lines: ["FAIL the backend's next call succeeded"], rc: 1 } })]).out;
  expect(failed).toContain("\nFAIL the backend's next call succeeded\n");
  expect(verdicts([pythonPart()]).out).toMatch(/\nthe lost context \(not measured: step "a kernel fault" (SKIPPED|not in the logs)[^\n]*\n/);
});

test("the mma.sync attention's parts over the keys: a figure table beside one part", () => {
  const r = verdicts([pythonPart({ bench: { whole: 0.9 } })]);
  expect(r.out).toContain("\n| shape (D 128) | parts | unsplit | parts / unsplit | SDPA |\n");
  expect(r.out).toMatch(/\nparts faster at \d+ of 6 shapes \(where the model keeps a shape unsplit, both rows time the same launch\)\n/);
  expect(verdicts([pythonPart()]).out).toContain("\n(the bench part of this log timed no mma.sync attention unsplit: it predates the parts)\n");
});

test("the wgmma attention's 176-key tiles: a figure table beside the 128-key ones and SDPA saying which is faster; WGMMA_ATTENTION_VERIFIED judged on the 128-key kernel alone", () => {
  const faster = verdicts([pythonPart({ wgmma: { tflops: [452.1, 461.3, 470.2, 380.5], bkv176: [488.3, 470.1, 468.2, 391.2] } })]);
  expect(faster.rc, faster.err).toBe(0);
  expect(faster.verdict("WGMMA_ATTENTION_VERIFIED")).toBe("FLIP");
  expect(faster.judged.WGMMA_ATTENTION_VERIFIED![2]).not.toContain("bkv176");
  for (const line of ["176-key tiles: every correctness check passed (10 cases, f32 and bf16 inputs)", "| shape (D 128) | 128-key tiles | 176-key tiles | 176 / 128 | SDPA |",
    "| attention 12×128 Lq=4680 Lk=4680 | 452.1 | 488.3 | 1.08 | 526.3 |", "| attention 12×128 Lq=4680 Lk=32760 | 470.2 | 468.2 | 1.00 | 558.4 |",
    "176-key tiles faster at 3 of 4 shapes", "| attention 12×128 Lq=4680 Lk=4680 (wgmma-bkv176) | 488.3 | 526.3 | 0.93 |"]) {
    expect(faster.out).toContain(`\n${line}\n`);
  }
  // failing: no rows of theirs, the failure named, the 128-key kernel's verdict untouched (the step FAILs)
  const failing = verdicts([pythonPart({ wgmma: { tflops: [452.1, 461.3, 470.2, 380.5], bkv176: "failing" } })]);
  expect(failing.verdict("WGMMA_ATTENTION_VERIFIED")).toBe("FLIP");
  expect(failing.steps.find((s) => s.includes(STEPS.hopper))).toStartWith("FAIL ");
  expect(failing.out).toContain("\n176-key tiles: 1 correctness check(s) FAILED: wgmma bkv176 f32 in D=128 B=1 Lq=1560 Lk=1560 kv=1560 H=12 block=520/0 bias\n");
  expect(failing.out).not.toContain("wgmma-bkv176");
  // a log of a script from before the 176-key tiles
  expect(verdicts([pythonPart()]).out).toContain("\n(the wgmma part of this log did not run the 176-key tiles)\n");
}, 60_000);

test("the mma.sync tile model: a forced tile faster beyond the tolerance DISAGREES (any GPU, its SM count said), within it or failing its checks not; a failed timing or the step cut before its table: NO EVIDENCE", () => {
  // an A100's 108 SMs, the pick's row 0.99 of its own tile forced: 128x192 forced beats it by 7.5 % at Wan O / cross-Q, by 2.4 % (within the tolerance) at 4096³
  const tiles = { ...MMA_GEMM, "128x192": [520.0, 431.7, 431.0, 441.5, 452.0] };
  const log = pythonPart({ bench: { tiles, sms: 108, pickShare: 0.99 } });
  const r = verdicts([log]);
  expect(r.rc, r.err).toBe(0);
  expect(r.tiles!.slice(0, 2)).toEqual(["DISAGREES", "Wan O / cross-Q: picks 128x256, 128x192 forced is faster (the pick loses 7.5 %) on 108 SMs; tolerance 3 %"]);
  expect(r.tiles![2]).toContain("4096³ 4096x4096x4096: picks 128x256 at 507.3 TFLOP/s, 0.98 of the fastest forced (128x192); forced 128x256 512.4, 128x192 520.0, 128x128 351.2");
  expect(r.tiles![2]).toContain("the model lives in kernels/cuda/gemm_mma_tiles.cuh: change it there by hand, with its picks in test/runtime/cuda-gemm-mma-tiles.test.ts");
  expect(r.out).toContain("\n| Wan O / cross-Q 4680×1536×1536 | 128x256 | 398.9 | 402.9 | 431.0 | 301.5 | 0.93 |\n");
  expect(r.out).toContain("\n| shape (108 SMs) | model picks |");

  // the pick's run 10 % slower than its own tile forced: the pick is not what it names
  const slowPick = verdicts([pythonPart({ bench: { pickShare: 0.9 } })]);
  expect(slowPick.tiles![0]).toBe("DISAGREES");
  expect(slowPick.tiles![1]).toStartWith("4096³: picks 128x256, which forced runs faster than picked (the pick loses 10.0 %); Wan QKV: picks 128x192, which forced");

  // the faster tile failed its correctness checks in the verify step: no choice, the pick is the fastest of the rest
  const broken = verdicts([pythonPart({ bench: { tiles, sms: 108, pickShare: 0.99 } }, { kernels_verify: { lines: verifyPart(["mma.sync 128x192: a f32 4680x1536x1536"]), rc: 1 } })]);
  expect(broken.tiles!.slice(0, 2)).toEqual(["AGREES", "at all 5 shapes on 108 SMs the pick is within 3 % of the fastest tile forced"]);
  expect(broken.tiles![2]).toContain("not counted as the fastest: 128x192 (their forced correctness checks failed in the verify step)");

  // a timing that failed at one shape (kc_timer_stop's -1 ms: negative TFLOP/s), the pick right at the others: nothing to judge there
  const failedTiming = verdicts([pythonPart({ bench: { tiles: { ...MMA_GEMM, "128x256": [512.4, 410.2, 402.9, -2576.1, 489.3] } } })]);
  expect(failedTiming.tiles!.slice(0, 2)).toEqual(["NO EVIDENCE", "within 3 % of the fastest at 4 of 5 shapes on 132 SMs; no figures to judge Wan FFN up"]);
  expect(failedTiming.tiles![2]).toContain("Wan FFN up 4680x8960x1536: picks 128x256, not timed; forced 128x256 —, 128x192 441.5, 128x128 340.2");

  // the log ends after the picks, before the table: the picks said, nothing judged
  const whole = readFileSync(log, "utf8");
  const cut = join(mkdtempSync(join(tmpdir(), "kino-verdict-tiles-")), "gpu-check.log");
  writeFileSync(cut, whole.slice(0, whole.indexOf("| op ", whole.indexOf("mma.sync picks 128x256 for Wan FFN down"))));
  const c = verdicts([cut]);
  expect(c.steps.at(-1)).toStartWith("CUT GEMM and attention benchmarks");
  expect(c.tiles!.slice(0, 2)).toEqual(["NO EVIDENCE", 'step "GEMM and attention benchmarks" CUT (the log ends inside this step), before its table']);
  expect(c.tiles![2]).toContain("Wan FFN down: picks 128x256, not timed; forced 128x256 —, 128x192 —, 128x128 —");
  expect(c.out).toContain('\nmma.sync tiles forced (not measured: step "GEMM and attention benchmarks" CUT (the log ends inside this step), before its table)\n');
}, 60_000);

test("the mma.sync attention's tiling model, judged as the GEMM's: its picks beside both tilings forced, a loss beyond the tolerance DISAGREES, a tiling failing its checks no candidate", () => {
  // the fixture's H200: 128 rows at the Wan shapes and 3120 tokens, 64 at 1020, each the fastest
  const r = verdicts([pythonPart()]);
  expect(r.rc, r.err).toBe(0);
  expect(r.tilings!.slice(0, 2)).toEqual(["AGREES", "at all 6 shapes on 132 SMs the pick is within 3 % of the fastest tiling forced"]);
  expect(r.tilings![2]).toContain("Lq=Lk=1020: picks bq64 at 101.2 TFLOP/s, 1.00 of the fastest forced (bq64); forced bq128 97.4, bq64 101.2");
  expect(r.out).toContain("\n| shape (132 SMs) | model picks | the pick | bq128 forced | bq64 forced | pick / fastest forced |\n");
  expect(r.out).toContain("\n| Lq=Lk=18720 block-causal 4680 | bq128 | 160.5 | 160.5 | 141.2 | 1.00 |\n");

  // an A100's run where 64 rows beat the pick by 5.6 % at the block-causal clip, by 2.4 % (within the tolerance) at 4680 keys
  const tilings = { ...MMA_ATTENTION, bq64: [179.5, 148.9, 149.6, 170.1, 139.8, 101.2] };
  const lost = verdicts([pythonPart({ bench: { tilings, sms: 108 } })]);
  expect(lost.tilings!.slice(0, 2)).toEqual(["DISAGREES", "Lq=Lk=18720 block-causal 4680: picks bq128, bq64 forced is faster (the pick loses 5.6 %) on 108 SMs; tolerance 3 %"]);
  expect(lost.tilings![2]).toContain("the model lives in kernels/cuda/attention_mma_tiles.cuh: change it there by hand, with its picks in test/runtime/cuda-attention-mma-tiles.test.ts");
  expect(lost.tiles![0]).toBe("AGREES"); // the GEMM's model is judged apart

  // the 64-row tiling failed a forced correctness check in the verify step: the pick is the fastest of the rest
  const failed = "bf16 mma D=128 B=1 Lq=130 Lk=260 kv=260 H=2 block=50/100 (64 rows)";
  const broken = verdicts([pythonPart({ bench: { tilings, sms: 108 } }, { kernels_verify: { lines: verifyPart([failed]), rc: 1 } })]);
  expect(broken.tilings!.slice(0, 2)).toEqual(["AGREES", "at all 6 shapes on 108 SMs the pick is within 3 % of the fastest tiling forced"]);
  expect(broken.tilings![2]).toContain("not counted as the fastest: bq64 (their forced correctness checks failed in the verify step)");
  expect(broken.tiles![2]).not.toContain("not counted as the fastest"); // nor is a GEMM tile
}, 60_000);

test("the mma.sync conv's tile model, judged as the GEMM's on the conv step's picks and forced tiles: a loss beyond the tolerance DISAGREES, a tile failing its promise no candidate", () => {
  // the fixture's H200: 128x192 at the 384- and 192-channel levels, 256x96 at 96 channels, the narrow tile at the head, each the fastest
  const r = verdicts([pythonPart()]);
  expect(r.rc, r.err).toBe(0);
  expect(r.convTiles!.slice(0, 2)).toEqual(["AGREES", "at all 5 shapes on 132 SMs the pick is within 3 % of the fastest tile forced"]);
  expect(r.convTiles![2]).toContain("96→96 3³ 832x480 T4: picks 256x96 at 231.6 TFLOP/s, 1.00 of the fastest forced (256x96); forced 128x192 160.3, 256x96 231.6, 128x96 215.4, 256x16 —");
  expect(r.out).toContain("\n| shape (132 SMs) | model picks | the pick | 128x192 forced | 256x96 forced | 128x96 forced | 256x16 forced | pick / fastest forced |\n");
  expect(r.out).toContain("\n| 96→3 3³ 832×480 T4 (head) | 256x16 | 31.4 | — | — | — | 31.4 | 1.00 |\n");
  // the forced rows leave the conv table (mma.sync beside wgmma and cuDNN) as it was
  expect(r.out).toContain("\n| 384→384 3³ 208x120 T2 | 238.4 | 309.9 | 402.7 | 1.30 |\n");

  // an A100's run where 256x96 beats the pick by 4.6 % at 208x120, the GEMM's model right
  const tiles = { ...CONV_TILES, "256x96": [140.5, 250.0, 230.1, 231.6, null] };
  const lost = verdicts([pythonPart({ conv: { speedup: 1.3, tiles, sms: 108 } })]);
  expect(lost.convTiles!.slice(0, 2)).toEqual(["DISAGREES", "384→384 3³ 208x120 T2: picks 128x192, 256x96 forced is faster (the pick loses 4.6 %) on 108 SMs; tolerance 3 %"]);
  expect(lost.convTiles![2]).toContain("the model lives in kernels/cuda/conv_mma_tiles.cuh: change it there by hand, with its picks in test/runtime/cuda-conv-mma-tiles.test.ts");
  expect(lost.tiles![0]).toBe("AGREES");

  // 256x96 forced broke its promise in the conv step's correctness pass: the pick is the fastest of the rest
  const broken = verdicts([pythonPart({ conv: { speedup: 1.3, tiles, sms: 108, brokenTiles: ["256x96"] } })]);
  expect(broken.steps.find((s) => s.includes(STEPS.conv))).toStartWith("FAIL ");
  expect(broken.convTiles!.slice(0, 2)).toEqual(["AGREES", "at all 5 shapes on 108 SMs the pick is within 3 % of the fastest tile forced"]);
  expect(broken.convTiles![2]).toContain("not counted as the fastest: 256x96 (their forced correctness checks failed in the conv step)");
  expect(broken.judged.CONV_WGMMA_VERIFIED![0]).toBe("FLIP"); // a forced mma.sync tile is no wgmma check
}, 60_000);

// The fixture's conv lines in the real script's format: its picks print, its tiles and levels, and the tool's list of the tiles.
test("the conv picks lines, tiles and levels of the fixture and the tool are gpu-check-conv.py's", () => {
  const script = readFileSync(join(root, "tools/gpu-check-conv.py"), "utf8");
  const print = /print\(f"( {2}mma\.sync conv picks .*)", flush=True\)/.exec(script)![1]!;
  const format = new RegExp(`^${print.split(/\{[^}]*\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("(.+?)")}$`);
  const picks = convPart({ speedup: 1.3 }).filter((l) => l.includes("mma.sync conv picks"));
  expect(picks).toHaveLength(5);
  for (const line of picks) expect(line).toMatch(format);
  const tiles = JSON.parse(/^CONV_MMA_TILES = (\[.*\])$/m.exec(script)![1]!);
  expect(Object.keys(CONV_TILES)).toEqual(tiles);
  expect([...CONV_MMA_TILES]).toEqual(tiles);
  const levels = [...script.matchAll(/\("(\d+→\d+ 3³ [^"]+)", \d+, \d+, \d+, \d+, \d+\)/g)].map((m) => m[1]!);
  expect([...CONV_LEVELS, "96→3 3³ 832x480 T4 (head)"]).toEqual(levels);
});

// The fixture's bench lines in the real script's format: its picks prints and its forced tiles and tilings, and the tool's lists of them.
test("the mma.sync picks lines, tiles and tilings of the fixture and the tool are gpu-check-kernels.py's", () => {
  const script = readFileSync(join(root, "tools/gpu-check-kernels.py"), "utf8");
  const format = (what: string) => {
    const print = new RegExp(`print\\(f"( {2}${what} .*)", flush=True\\)`).exec(script)![1]!;
    return new RegExp(`^${print.split(/\{[^}]*\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("(.+?)")}$`);
  };
  const picks = benchPart().filter((l) => l.includes("mma.sync picks")), attention = benchPart().filter((l) => l.includes("mma.sync attention picks"));
  expect(picks).toHaveLength(5);
  for (const line of picks) expect(line).toMatch(format("mma\\.sync picks"));
  expect(attention).toHaveLength(TILING_SHAPES.length);
  for (const line of attention) expect(line).toMatch(format("mma\\.sync attention picks"));
  const tiles = JSON.parse(/^MMA_TILES = (\[.*\])$/m.exec(script)![1]!), tilings = JSON.parse(/^ATTENTION_TILINGS = (\[.*\])$/m.exec(script)![1]!);
  expect(Object.keys(MMA_GEMM)).toEqual(tiles);
  expect([...MMA_TILES]).toEqual(tiles);
  expect(Object.keys(MMA_ATTENTION)).toEqual(tilings);
  expect([...ATTENTION_TILINGS]).toEqual(tilings);
  // the shapes: the script's tiling_shapes labels, in order
  const extra = [...script.matchAll(/\("(Lq=Lk=\d+)", \d+, \d+, 0, 0\)/g)].map((m) => m[1]!);
  expect(TILING_SHAPES.slice(4)).toEqual(extra);
});

test("a FAIL in the attention or the wgmma conv check keeps its constant with the failed check; a failed graph test in the op sweep keeps GRAPHS_VERIFIED", () => {
  const r = verdicts([pythonPart({ wgmma: { tflops: [], failing: "yes" }, conv: { speedup: 1.3, failing: true } }),
    bunPart({ sweepFailed: [["test/models/dit-graph.test.ts", "graph launches equal eager on CUDA"]] })]);
  expect(r.rc, r.err).toBe(0);
  expect(r.steps.find((s) => s.includes(STEPS.hopper))).toStartWith("FAIL ");
  expect(r.steps.find((s) => s.includes(STEPS.opSweep))).toStartWith("FAIL ");
  expect(r.judged.WGMMA_ATTENTION_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "wgmma: 1 correctness check(s) failed: wgmma f32 in D=128 B=1 Lq=1560 Lk=1560 kv=1560 H=12 block=520/0 bias"]);
  expect(r.verdict("GEMM_PINGPONG_VERIFIED")).toBe("FLIP"); // the GEMM parts ran in processes of their own
  expect(r.steps.find((s) => s.includes(STEPS.conv))).toStartWith("FAIL ");
  expect(r.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "wgmma pass: 1 check(s) failed: conv wgmma: Wan level 1 384→384 3³ 120x208 promise"]);
  expect(r.out).toContain("| 384→384 3³ 104x60 T1 | 151.2 | — | 262.4 | — |"); // mma.sync still has its rows
  expect(r.judged.GRAPHS_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "op sweep: 1 test(s) failed: test/models/dit-graph.test.ts: graph launches equal eager on CUDA"]);
  expect(r.verdict("BF16_ACTIVATIONS_VERIFIED")).toBe("FLIP");
  expect(r.out).toContain("| op sweep on CUDA (bun test, 6 files) | 411 pass, 1 fail |\n  failed: test/models/dit-graph.test.ts: graph launches equal eager on CUDA");
  // mma.sync attention still has its rows, from the benchmarks step, both tilings
  expect(r.out).toContain("| attention 12×128 Lq=4680 Lk=32760 (mma.sync) | 172.3 | 558.4 | 0.31 |");
  expect(r.out).toContain("| attention 12×128 Lq=4680 Lk=32760 (mma.sync bq64) | 149.6 | 558.4 | 0.27 |");
}, 60_000);

test("persistent passes but is slower than the default at a Wan shape: KEEP; a failing and a hung GEMM: KEEP; slower graphs and bf16: KEEP", () => {
  const slowBf16: Record<Way, number> = { "eager bf16": 1.151, "graphs bf16": 1.312, "eager f32": 1.103, "graphs f32": 0.967 };
  const r = verdicts([pythonPart({ gemm: { persistent: { speedup: { "Wan QKV": 0.94 } }, pingpong: { speedup: 1.2, failing: true }, "persistent-tma": { speedup: 1.1, hang: true } },
    conv: { speedup: { "384→384 3³ 104x60 T1": 0.92 } } }), bunPart({ steadyS: slowBf16, threadMs: 420.5 })]);
  expect(r.rc, r.err).toBe(0);
  const [v, why, evidence] = r.judged.GEMM_PERSISTENT_VERIFIED!;
  expect(v).toBe("KEEP");
  expect(why).toBe("passes, but slower than the one-block-per-tile kernel at gemm Wan QKV 4680x4608x1536 0.94×");
  expect(evidence).toContain("gemm Wan QKV 4680x4608x1536: persistent 519.9 vs wgmma 553.1 TFLOP/s (0.94×; torch 748.2)");
  expect(evidence).toContain("gemm Wan FFN down +gated residual: persistent 724.0 vs wgmma 689.5 TFLOP/s (1.05×; torch 807.5)");
  expect(r.judged.GEMM_PINGPONG_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "pingpong: 1 correctness check(s) failed: pingpong: a f32 4680x4608x1536 [wgmma-pingpong]"]);
  expect(r.judged.GEMM_PERSISTENT_TMA_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "persistent-tma: hung (the watchdog fired after 60 s)"]);
  expect(r.judged.GRAPHS_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "graphs not faster than eager per steady chunk with bf16 activations"]);
  expect(r.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "passes, but slower than mma.sync at conv3d 384→384 3³ 104x60 T1 0.92×"]);
  expect(r.judged.CONV_WGMMA_VERIFIED![2]).toContain("conv3d 96→96 3³ 832x480 T4: wgmma 301.1 vs mma.sync 231.6 TFLOP/s (1.30×; torch 388.1)");
  expect(r.judged.BF16_ACTIVATIONS_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "bf16 activations not faster than f32 per steady chunk (eager, graphs)"]);
  expect(r.judged.STREAM_OVERLAP_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "the steady chunk interval did not drop"]);
  expect(r.out).toContain("to set WGMMA_ATTENTION_VERIFIED, READBACK_OVERLAP_VERIFIED: the same command with --apply");
}, 60_000);

test("a step cut by its cap or a budget spent before it: NO EVIDENCE for what it had not printed; a log cut mid-step: NO EVIDENCE", () => {
  // the hopper and causal steps keep back 120 s for the next (GPU_CHECK_RESERVE): here they get the minimum step, 2 s
  const tight = { KINO_GPU_CHECK_BUDGET: "3", KINO_GPU_CHECK_MIN_STEP: "2" };
  // the hopper step prints the wgmma and persistent parts whole, then hangs inside pingpong until the budget cuts it
  const hopper = { lines: [...wgmmaPart({ tflops: [452.1, 461.3, 470.2, 380.5] }), ...gemmPart("persistent", { speedup: 1.04 }), "", "wgmma-pingpong GEMM (sm_90a) correctness:"], sleep: 30 };
  const python = pythonPart({}, { unverified_hopper: hopper }, tight);
  const bun = bunPart({}, { causal_graphs: { lines: ditGraph({ steadyS: FAST }).slice(0, 5), sleep: 30 } }, tight);
  const r = verdicts([python, bun]);
  expect(r.rc, r.err).toBe(0);
  expect(r.steps.find((s) => s.includes(STEPS.hopper))).toMatch(/^TIMEOUT .*\(cap cut to 2 s, 120 s kept for the steps after it\) \[log 1\]$/);
  expect(r.steps.find((s) => s.includes(STEPS.readback))).toBe("SKIPPED readback of chunk i overlapped with the DiT of chunk i + 1, and its encoding on a thread (bun) (budget spent) [log 2]");
  expect(r.verdict("WGMMA_ATTENTION_VERIFIED")).toBe("FLIP");
  expect(r.verdict("GEMM_PERSISTENT_VERIFIED")).toBe("FLIP"); // the only GEMM with a whole result
  expect(r.judged.GEMM_PINGPONG_VERIFIED![0]).toBe("NO EVIDENCE");
  expect(r.judged.GEMM_PINGPONG_VERIFIED![1]).toMatch(/^pingpong part: step "wgmma attention vs PyTorch" TIMEOUT \(cap cut to 2 s, 120 s kept for the steps after it\), before its result$/);
  expect(r.verdict("GEMM_PERSISTENT_TMA_VERIFIED")).toBe("NO EVIDENCE");
  expect(r.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", 'conv3d check: step "conv3d vs PyTorch" SKIPPED (budget spent), before its result']);
  expect(r.judged.GRAPHS_VERIFIED![1]).toMatch(/^causal DiT graphs: step "causal DiT as CUDA graphs" TIMEOUT/);
  expect(r.verdict("BF16_ACTIVATIONS_VERIFIED")).toBe("NO EVIDENCE");
  expect(r.judged.READBACK_OVERLAP_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", 'overlapped readback: step "readback of chunk i overlapped" SKIPPED (budget spent), before its result']);
  expect(r.out).toContain("end to end (not measured: step \"end to end: kino serve\" SKIPPED (budget spent))");
  expect(r.tiles!.slice(0, 2)).toEqual(["NO EVIDENCE", 'step "GEMM and attention benchmarks" SKIPPED (budget spent), before its table']);

  // the whole command killed inside the readback step: no summary, the log ends there
  const whole = readFileSync(bunPart(), "utf8");
  const cut = join(mkdtempSync(join(tmpdir(), "kino-verdict-cut-")), "gpu-check.log");
  writeFileSync(cut, whole.slice(0, whole.indexOf("PASS: overlapped readback")));
  const c = verdicts([cut]);
  expect(c.steps.at(-1)).toBe("CUT readback of chunk i overlapped with the DiT of chunk i + 1, and its encoding on a thread (bun) (the log ends inside this step)");
  expect(c.judged.READBACK_OVERLAP_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", 'overlapped readback: step "readback of chunk i overlapped" CUT (the log ends inside this step), before its result']);
  expect(c.verdict("GRAPHS_VERIFIED")).toBe("FLIP"); // its step and the clip's printed their results before the cut
  expect(c.verdict("WGMMA_ATTENTION_VERIFIED")).toBe("NO EVIDENCE"); // the python part's log not given
}, 60_000);

test("the real DiT graph scripts through the harness (--cpu): their VERDICT-DATA carries the figures their prose prints, and a run off CUDA proves nothing", () => {
  const log = bunPart({}, {
    causal_graphs: `exec "${process.execPath}" tools/bench/dit-graph.ts --cpu\n`, clip_graph: `exec "${process.execPath}" tools/bench/dit-clip-graph.ts --cpu\n`,
  });
  const text = readFileSync(log, "utf8");
  const r = verdicts([log]);
  expect(r.rc, r.err).toBe(0);
  expect(r.judged.GRAPHS_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", "dit-graph.ts ran on the wasm backend, not CUDA"]);
  expect(r.judged.BF16_ACTIVATIONS_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", "dit-graph.ts ran on the wasm backend, not CUDA"]);
  const prose = /first chunk eager bf16 ([\d.]+) s, graphs bf16 ([\d.]+) s, eager f32 ([\d.]+) s, graphs f32 ([\d.]+) s; steady \(chunks ≥ 7\) eager bf16 ([\d.]+) s \(host [\d.]+ s\), graphs bf16 ([\d.]+) s \(host [\d.]+ s\), eager f32 ([\d.]+) s \(host [\d.]+ s\), graphs f32 ([\d.]+) s/.exec(text)!;
  expect(prose).not.toBeNull();
  expect(r.out).toContain(`| s per chunk, first / steady (chunks ≥ 7) | ${prose[1]} / ${prose[5]} | ${prose[2]} / ${prose[6]} | ${prose[3]} / ${prose[7]} | ${prose[4]} / ${prose[8]} |`);
  expect(r.out).toContain("| what (wasm, 64x64) |");
  const clip = /eager first ([\d.]+) s, later ([\d.]+) s; graph first \(recording\) ([\d.]+) s, later \(launches\) ([\d.]+) s/.exec(text)!;
  expect(r.out).toContain(`| s per step (both forwards), first / later | ${clip[1]} / ${clip[2]} | ${clip[3]} / ${clip[4]} |`);
  expect(r.out).toContain("| predictions and final latent equal eager bit for bit | — | 6/6, latent identical |");
}, 60_000);

// The real gpu-check-kernels.py where torch is (as on the device machines), its CUDA library and device
// stubbed: a GPU that is not sm_90 makes each Hopper part print its skip and its VERDICT-DATA line.
const hasTorch = Bun.spawnSync(["python3", "-c", "import torch"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
test.skipIf(!hasTorch)("the real gpu-check-kernels.py on a stubbed sm_80 device: every Hopper part NO EVIDENCE, not an sm_90 GPU", () => {
  const stub = join(mkdtempSync(join(tmpdir(), "kino-verdict-py-")), "stubbed.py");
  writeFileSync(stub, [
    "import ctypes, runpy, sys, unittest.mock as mock", "import torch",
    "ctypes.CDLL = lambda *a, **k: mock.MagicMock()", "torch.Generator = lambda *a, **k: mock.MagicMock()",
    "torch.cuda.is_available = lambda: True", "torch.cuda.get_device_capability = lambda *a: (8, 0)", "sys.path.insert(0, 'tools')",
    "sys.argv = ['tools/gpu-check-kernels.py', *sys.argv[1:]]", "runpy.run_path('tools/gpu-check-kernels.py', run_name='__main__')"].join("\n"));
  // the four parts unverified_hopper runs, in one process here (torch's import is most of the time)
  const log = pythonPart({}, { unverified_hopper: `exec python3 ${stub} wgmma persistent pingpong persistent-tma\n` });
  const r = verdicts([log]);
  expect(r.rc, r.err).toBe(0);
  expect(readFileSync(log, "utf8")).toContain('VERDICT-DATA {"script": "gpu-check-kernels", "parts": ["wgmma", "persistent", "pingpong", "persistent-tma"], "failures": [], "skipped": ["wgmma", "persistent", "pingpong", "persistent-tma"], "rows": []}');
  expect(r.judged.WGMMA_ATTENTION_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", "wgmma: not run, the GPU is not sm_90"]);
  for (const [flag, part] of [["GEMM_PERSISTENT_VERIFIED", "persistent"], ["GEMM_PINGPONG_VERIFIED", "pingpong"], ["GEMM_PERSISTENT_TMA_VERIFIED", "persistent-tma"]]) {
    expect(r.judged[flag!]!.slice(0, 2)).toEqual(["NO EVIDENCE", `${part}: not run, the GPU is not sm_90`]);
  }
}, 60_000);

test("the wgmma conv: a hang or a failed conv3d-on-wgmma test in the op sweep keeps CONV_WGMMA_VERIFIED (another path's failure does not); off sm_90 NO EVIDENCE", () => {
  const hung = verdicts([pythonPart({ conv: { speedup: 1.3, hang: true } }), bunPart()]);
  expect(hung.rc, hung.err).toBe(0);
  expect(hung.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["KEEP", "wgmma pass: hung (the watchdog fired after 45 s)"]);
  expect(hung.out).toContain("| 192→192 3³ 416x240 T4 | 247.9 | — | 417.3 | — |"); // the table printed before the watchdog ended it

  const wgmmaTest = "ops on cuda, conv3d on wgmma > conv3d x [1,40,2,9,17] w [130,40,3,3,3] f32 (Cin 40, Cout 130, 306 voxels)";
  const sweep = verdicts([pythonPart(), bunPart({ sweepFailed: [["test/runtime/ops.test.ts", wgmmaTest]] })]);
  expect(sweep.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["KEEP", `op sweep: 1 test(s) failed: test/runtime/ops.test.ts: ${wgmmaTest}`]);
  const other = verdicts([pythonPart(), bunPart({ sweepFailed: [["test/runtime/ops.test.ts", "ops on cuda, conv3d on simt > conv3d x [1,1,1,1,1] w [1,1,1,1,1] f32"]] })]);
  expect(other.verdict("CONV_WGMMA_VERIFIED")).toBe("FLIP");

  const skipped = verdicts([pythonPart({ conv: { speedup: 1.3, skipped: true } })]);
  expect(skipped.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", "wgmma pass: not run, the GPU is not sm_90"]);
  expect(skipped.out).toContain("| 96→96 3³ 832x480 T4 | 231.6 | — | 388.1 | — |");
}, 60_000);

// The real gpu-check-conv.py where torch is, its CUDA library stubbed as an sm_80 device's (kc_set_paths
// refuses the wgmma conv path, every call's tensors fail to reach a GPU): the wgmma pass says it
// skipped, in its VERDICT-DATA too.
test.skipIf(!hasTorch)("the real gpu-check-conv.py on a stubbed sm_80 device: CONV_WGMMA_VERIFIED NO EVIDENCE, not an sm_90 GPU", () => {
  const stub = join(mkdtempSync(join(tmpdir(), "kino-verdict-conv-")), "stubbed.py");
  writeFileSync(stub, [
    "import ctypes, runpy, sys, unittest.mock as mock", "import torch",
    "lib = mock.MagicMock()", "lib.kc_set_paths.side_effect = lambda ctx, gemm, attention, conv: 10002 if conv == 3 else 0",
    "ctypes.CDLL = lambda *a, **k: lib", "torch.Generator = lambda *a, **k: mock.MagicMock()", "torch.cuda.is_available = lambda: True", "sys.path.insert(0, 'tools')",
    "sys.argv = ['tools/gpu-check-conv.py']", "runpy.run_path('tools/gpu-check-conv.py', run_name='__main__')"].join("\n"));
  const log = pythonPart({}, { conv3d: `exec python3 ${stub}\n` });
  const text = readFileSync(log, "utf8");
  expect(text).toContain("conv3d wgmma (path 3, sm_90a) correctness:\n  skipped: not an sm_90 GPU with the driver's tensor-map encoder");
  expect(text).toMatch(/VERDICT-DATA \{"script": "gpu-check-conv", "failures": \[.*\], "wgmma": \{"skipped": true, "hung": false, "cases": 0, "total": 16\}, "rows": \[\]\}/);
  const r = verdicts([log]);
  expect(r.rc, r.err).toBe(0);
  expect(r.judged.CONV_WGMMA_VERIFIED!.slice(0, 2)).toEqual(["NO EVIDENCE", "wgmma pass: not run, the GPU is not sm_90"]);
}, 60_000);

test("the step names the rules look for are tools/gpu-check.sh's, each once; bad input is refused naming what is wrong", () => {
  const log = runCheck("python", {});
  const steps = verdicts([log]).steps;
  for (const fragment of Object.values(STEPS)) expect(steps.filter((s) => s.includes(fragment)), fragment).toHaveLength(1);

  const notLog = join(mkdtempSync(join(tmpdir(), "kino-verdict-bad-")), "notes.txt");
  writeFileSync(notLog, "PASS everything\n");
  expect(verdicts([notLog])).toMatchObject({ rc: 2, err: `gpu-verdicts: ${notLog}: no "== STEP (cap …)" line in it: not a tools/gpu-check.sh log\n` });
  expect(verdicts(["/nonexistent/gpu-check.log"]).err).toStartWith("gpu-verdicts: cannot read the log /nonexistent/gpu-check.log: ");
  expect(verdicts([log, "--aply"])).toMatchObject({ rc: 2, err: "gpu-verdicts: unknown option --aply (options: --apply, --root DIR)\n" });
  expect(verdicts([]).err).toStartWith("gpu-verdicts: usage: bun tools/gpu-verdicts.ts OUT1/gpu-check.log");
  // a record missing its figures, and a line that is not JSON: said, and the rest still judged
  const odd = bunPart({}, { causal_graphs: { lines: ['VERDICT-DATA {"script":"dit-graph","backend":"cuda","checks":{"bitForBit":true,"recordings":true,"x0":true,"noSteadyMalloc":true}}'] },
    clip_graph: { lines: ["VERDICT-DATA {not json"] } });
  const o = verdicts([odd]);
  expect(o.rc, o.err).toBe(0);
  expect(o.judged.GRAPHS_VERIFIED![0]).toBe("NO EVIDENCE");
  expect(o.judged.GRAPHS_VERIFIED![1]).toStartWith("GRAPHS_VERIFIED: its VERDICT-DATA could not be read (");
  expect(o.verdict("READBACK_OVERLAP_VERIFIED")).toBe("FLIP");
  expect(o.out).toContain(`warning: ${odd}: a VERDICT-DATA line in "bidirectional t2v clip as one CUDA graph, Wan2.1-1.3B at 832x480, 81 frames (bun)" is not JSON (`);
  expect(o.out).toMatch(/### causal DiT, Wan2.1-1.3B at real size \(tools\/bench\/dit-graph.ts\)\n\(could not be made from its VERDICT-DATA: /);
  // a constant declared twice is not guessed at
  const copy = sourcesCopy();
  const gemm = join(copy, "kernels/cuda/gemm.cu");
  writeFileSync(gemm, `${readFileSync(gemm, "utf8")}\nconstexpr bool GEMM_PINGPONG_VERIFIED = false;\n`);
  expect(verdicts([log, "--root", copy])).toMatchObject({ rc: 2, err: 'gpu-verdicts: kernels/cuda/gemm.cu: 2 declarations of GEMM_PINGPONG_VERIFIED (one "constexpr bool GEMM_PINGPONG_VERIFIED = …;" or "export const GEMM_PINGPONG_VERIFIED = …;" line expected)\n' });
}, 60_000);
