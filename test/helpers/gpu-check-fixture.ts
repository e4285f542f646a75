// Device output of tools/gpu-check.sh's steps, for test/tools/gpu-verdicts.test.ts: each step's lines as
// the script it runs prints them (the print each comes from is named beside it), with the figures and
// outcomes a test chooses, played through the real harness (KINO_GPU_CHECK_DRY_FIXTURES,
// tools/gpu-check-steps.sh) so the logs have the real step headers, TIMEOUT quoting and summary.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type E2eResult, formatE2e } from "../../tools/bench/e2e-realtime.ts";

const root = resolve(import.meta.dir, "../..");

/** Python's json.dumps with its defaults: ", " and ": " separators, non-ASCII as \uXXXX, every number a float. */
export function pyDumps(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? `${v}.0` : String(v);
  if (typeof v === "string") return JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (Array.isArray(v)) return `[${v.map(pyDumps).join(", ")}]`;
  if (v && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${pyDumps(k)}: ${pyDumps(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

/** Python's `{x:.Ne}`: the exponent at least two digits. */
const pyE = (x: number, digits: number) => x.toExponential(digits).replace(/e([+-])(\d)$/, "e$10$2");
/** gpu_check_common.report: `  ok   NAME rel err 1.23e-03 (tol 2e-03)`. */
const reportLine = (name: string, err: number, tol: number, ok = err <= tol) => `  ${ok ? "ok  " : "FAIL"} ${name.padEnd(58)} rel err ${pyE(err, 2)} (tol ${pyE(tol, 0)})`;
/** gpu-check-conv.py's report: wider names, and a ratio to the promise rather than a relative error. */
const convLine = (name: string, err: number, tol: number) => `  ${err <= tol ? "ok  " : "FAIL"} ${name.padEnd(70)} ${pyE(err, 2)} (tol ${pyE(tol, 0)})`;

type Row = [string, number, number];
/** gpu-check-kernels.py print_table(), then the end of the script: summary_line() (VERDICT-DATA) and the verdict line. */
function kernelsEnd(parts: string[], rows: Row[], failures: string[], extra: Record<string, unknown> = {}): string[] {
  const table = rows.length ? ["", `| ${"op".padEnd(60)} | kino TFLOP/s | torch TFLOP/s | kino/torch |`, `|${"-".repeat(62)}|--------------|---------------|------------|`,
    ...rows.map(([n, k, t]) => `| ${n.padEnd(60)} | ${k.toFixed(1).padStart(12)} | ${t.toFixed(1).padStart(13)} | ${(k / t).toFixed(2).padStart(10)} |`),
    "", "targets: GEMM ≥ 600, attention ≥ 450 TFLOP/s"] : [];
  const data = `VERDICT-DATA ${pyDumps({ script: "gpu-check-kernels", parts, failures, skipped: [], rows, ...extra })}`;
  return [...table, data, ...(failures.length ? ["", `${failures.length} correctness check(s) FAILED: [${failures.map((f) => `'${f}'`).join(", ")}]`] : ["", "all correctness checks passed"])];
}

export const ATTENTION = ["Lq=4680 Lk=4680", "Lq=4680 Lk=18720", "Lq=4680 Lk=32760", "Lq=Lk=18720 block-causal 4680"];
const SDPA = [526.3, 551.2, 558.4, 402.7];

/** gpu-check-kernels.py wgmma: its correctness lines (report, report_promise), then [wgmma], [wgmma-bkv176] (the 176-key
 *  tiles: `bkv176` their TFLOP/s, or "failing") and auto's [mma.sync] rows. */
export function wgmmaPart(o: { tflops: number[]; mma?: number[]; failing?: string; bkv176?: number[] | "failing"; whole?: number[] }): string[] {
  const name = "D=128 B=1 Lq=1560 Lk=1560 kv=1560 H=12 block=520/0 bias";
  const lines = ["", "wgmma attention (path 2, sm_90a) correctness:", reportLine("forced wgmma, D=80 refused (kc_attention: path 2 needs D 64 or 1…)", 0, 0.5),
    reportLine(`wgmma f32 in ${name}`, o.failing ? 0.31 : 3.07e-3, 2e-2), reportLine(`  promise wgmma f32 in ${name}`, 0.42, 1)];
  const failures = o.failing ? [`wgmma f32 in ${name}`] : [];
  if (o.failing) lines.push("    nan/inf: 0, max err by row slice: ['3.1e-01', '2.9e-01', '0.0e+00', '0.0e+00', '0.0e+00', '0.0e+00', '0.0e+00', '0.0e+00']", "  wgmma benchmarks skipped: its correctness checks failed");
  const b176 = o.bkv176 === "failing" ? [`wgmma bkv176 f32 in ${name}`] : [];
  if (o.bkv176 === "failing") lines.push(reportLine(`wgmma bkv176 f32 in ${name}`, 0.27, 2e-2), "  wgmma 176-key tile benchmarks skipped: 1 of its correctness checks failed");
  const rows: Row[] = o.failing ? [] : ATTENTION.flatMap((l, i) => [[`attention 12x128 ${l} [wgmma]`, o.tflops[i]!, SDPA[i]!] as Row,
    ...(o.whole ? [[`attention 12x128 ${l} [wgmma whole]`, o.whole[i]!, SDPA[i]!] as Row] : []),
    ...(Array.isArray(o.bkv176) ? [[`attention 12x128 ${l} [wgmma-bkv176]`, o.bkv176[i]!, SDPA[i]!] as Row] : []),
    [`attention 12x128 ${l} [mma.sync]`, (o.mma ?? [175.2, 171.4, 172.3, 160.5])[i]!, SDPA[i]!] as Row]);
  return [...lines, ...kernelsEnd(["wgmma"], rows, failures, o.bkv176 ? { bkv176: { cases: 10, failures: b176 } } : {})];
}

export const GEMM_SHAPES: [string, string, string][] = [["4096³", "4096x4096x4096", ""], ["Wan QKV", "4680x4608x1536", ""], ["Wan O / cross-Q", "4680x1536x1536", ""],
  ["Wan FFN up", "4680x8960x1536", "gelu"], ["Wan FFN down", "4680x1536x8960", "gated residual"]];
const ONE_BLOCK = [773.2, 553.1, 498.4, 617.3, 703.6], CUBLAS = [862.1, 748.2, 667.3, 779.4, 807.5];

/** gpu-check-kernels.py persistent|pingpong|persistent-tma: correctness lines, then per shape (unverified_gemm's loop) the rows of
 *  each kernel beside the one-block-per-tile one, at `speedup` × its TFLOP/s (per shape label, or one for all). */
export function gemmPart(part: string, o: { speedup: number | Record<string, number>; failing?: boolean; hang?: boolean }): string[] {
  const path = { persistent: "wgmma-persistent", pingpong: "wgmma-pingpong", "persistent-tma": "wgmma-persistent-tma" }[part]!;
  const lines = ["", `${path} GEMM (sm_90a) correctness:`, reportLine(`${part}: a f32 4680x4608x1536 [${path}]`, o.failing ? 0.12 : 1.9e-4, 2e-3),
    reportLine(`${part}: a bf16 → bf16 4680x4608x1536`, 2.6e-3, 8e-3)];
  const failures = o.failing ? [`${part}: a f32 4680x4608x1536 [${path}]`] : [];
  if (o.failing) return [...lines, `  ${part} GEMM benchmarks skipped: its correctness checks failed`, ...kernelsEnd([part], [], failures)];
  lines.push("", `${part} GEMM benchmarks (bf16 in, f32 out; the torch column is cuBLAS without the epilogue):`);
  const kernels = part === "persistent-tma" ? ["wgmma", "persistent", part] : ["wgmma", part];
  const rows: Row[] = [];
  GEMM_SHAPES.forEach(([label, mnk, epi], i) => {
    const up = typeof o.speedup === "number" ? o.speedup : (o.speedup[label] ?? 1.05);
    for (const k of kernels) {
      const tf = (base: number) => +(k === "wgmma" ? base : base * (k === part ? up : 1.02)).toFixed(2);
      if (part === "persistent-tma" && (label === "Wan QKV" || label === "Wan FFN up")) rows.push([`gemm ${label} ${label === "Wan QKV" ? "split 3" : "+gelu"} → bf16 [${k}]`, tf(ONE_BLOCK[i]! * 0.97), CUBLAS[i]!]);
      rows.push([`gemm ${label} ${mnk} [${k}]`, tf(ONE_BLOCK[i]!), CUBLAS[i]!]);
      if (epi) rows.push([`gemm ${label} +${epi} [${k}]`, tf(ONE_BLOCK[i]! * 0.98), CUBLAS[i]!]);
    }
  });
  // the watchdog's hung(): the table so far and summary_line(hung=name), the process ended there
  if (o.hang) return [...lines, "", `FAIL ${path} GEMM did not finish within 60 s (deadlock?); results so far:`, ...kernelsEnd([part], rows.slice(0, 3), [], { hung: part, watchdog_s: 60 }).slice(0, -2)];
  return [...lines, ...kernelsEnd([part], rows, failures)];
}

/** gpu-check-kernels.py bench: "benchmarks (…):", per GEMM shape the tile mma.sync's model picks
 *  ("  mma.sync picks 128xN for SHAPE (S SMs)", printed as each shape starts), per attention shape the
 *  query tiling the mma.sync attention's model picks ("  mma.sync attention picks bqN for SHAPE (S SMs)"),
 *  then the table: per GEMM shape the default path's row, mma.sync's with the tile it picks and with each
 *  tile forced; per attention shape mma.sync with the tiling it picks and with each forced. By default an
 *  H200's 132 SMs with both models right at every shape; `tiles` and `tilings` (TFLOP/s per forced tile or
 *  tiling, per shape), `sms` and `pickShare` (the picks' rows as a share of their own tile forced: the same
 *  kernel timed twice) choose otherwise. */
const MMA_PICKS = ["128x256", "128x192", "128x256", "128x256", "128x256"];
export const MMA_GEMM: Record<string, number[]> = { "128x256": [512.4, 410.2, 402.9, 468.1, 489.3], "128x192": [470.3, 431.7, 371.8, 441.5, 452.0],
  "128x128": [351.2, 318.4, 301.5, 340.2, 347.8] };
/** The attention shapes the bench times both mma.sync tilings at (gpu-check-kernels.py's tiling_shapes), SDPA there, and the picks on 132 SMs. */
export const TILING_SHAPES = [...ATTENTION, "Lq=Lk=3120", "Lq=Lk=1020"];
const TILING_SDPA = [...SDPA, 471.6, 312.9];
const TILING_PICKS = ["bq128", "bq128", "bq128", "bq128", "bq128", "bq64"];
export const MMA_ATTENTION: Record<string, number[]> = { bq128: [175.2, 171.4, 172.3, 160.5, 158.3, 97.4], bq64: [150.4, 148.9, 149.6, 141.2, 139.8, 101.2] };
export function benchPart(o: { tiles?: Record<string, number[]>; tilings?: Record<string, number[]>; sms?: number; pickShare?: number;
  whole?: number } = {}): string[] {
  const tiles = o.tiles ?? MMA_GEMM, tilings = o.tilings ?? MMA_ATTENTION;
  const pickLines = [...GEMM_SHAPES.map(([label], i) => `  mma.sync picks ${MMA_PICKS[i]} for ${label} (${o.sms ?? 132} SMs)`),
    ...TILING_SHAPES.map((label, i) => `  mma.sync attention picks ${TILING_PICKS[i]} for ${label} (${o.sms ?? 132} SMs)`)];
  const rows: Row[] = GEMM_SHAPES.flatMap(([label, mnk], i) => [[`gemm ${label} ${mnk} [auto]`, ONE_BLOCK[i]!, CUBLAS[i]!] as Row,
    [`gemm ${label} ${mnk} [mma.sync]`, +(tiles[MMA_PICKS[i]!]![i]! * (o.pickShare ?? 1)).toFixed(2), CUBLAS[i]!] as Row,
    ...Object.entries(tiles).map(([tile, tf]) => [`gemm ${label} ${mnk} [mma.sync ${tile}]`, tf[i]!, CUBLAS[i]!] as Row)]);
  rows.push(...TILING_SHAPES.flatMap((l, i) => [[`attention 12x128 ${l} [mma.sync]`, +(tilings[TILING_PICKS[i]!]![i]! * (o.pickShare ?? 1)).toFixed(2), TILING_SDPA[i]!] as Row,
    ...Object.entries(tilings).map(([tiling, tf]) => [`attention 12x128 ${l} [mma.sync ${tiling}]`, tf[i]!, TILING_SDPA[i]!] as Row),
    // its keys in one part, at `whole` × the pick where given
    ...(o.whole ? [[`attention 12x128 ${l} [mma.sync whole]`, +(tilings[TILING_PICKS[i]!]![i]! * o.whole).toFixed(2), TILING_SDPA[i]!] as Row] : [])]));
  return ["", "benchmarks (bf16 inputs, f32 accumulation and output):", ...pickLines, ...kernelsEnd(["bench"], rows, [])];
}

export const CONV_LEVELS = ["384→384 3³ 104x60 T1", "384→384 3³ 208x120 T2", "192→192 3³ 416x240 T4", "96→96 3³ 832x480 T4"];
const CONV_HEAD = "96→3 3³ 832x480 T4 (head)";
const CUDNN = [262.4, 402.7, 417.3, 388.1, 12.8];
/** The mma.sync conv's tile model on an H200's 132 SMs at the levels and the head, and each tile forced
 *  there (TFLOP/s; the wide tiles at the levels, the narrow one at the head, as gpu-check-conv.py times
 *  them): by default the pick the fastest at each. */
const CONV_PICKS = ["128x192", "128x192", "128x192", "256x96", "256x16"];
export const CONV_TILES: Record<string, (number | null)[]> = { "128x192": [151.2, 238.4, 247.9, 160.3, null], "256x96": [140.5, 221.0, 230.1, 231.6, null],
  "128x96": [120.3, 200.7, 210.2, 215.4, null], "256x16": [null, null, null, null, 31.4] };
/** The pick's row at each level and the head: its tile's forced figure, times `pickShare` (the same kernel timed twice). */
const convPicked = (tiles: Record<string, (number | null)[]>, i: number, pickShare = 1) => +(tiles[CONV_PICKS[i]!]![i]! * pickShare).toFixed(2);

/** tools/gpu-check-conv.py: the correctness lines (with `brokenTiles`, a forced tile failing its promise),
 *  the model's picks, the mma.sync pass's rows — with the tile its model picks and with each tile forced
 *  (`tiles`, `sms`, `pickShare` as benchPart's) — and the wgmma pass's (at `speedup` × mma.sync, per level
 *  label or one for all; none where it failed, hung or was skipped), print_table(), summary_line()
 *  (VERDICT-DATA) and the last line. */
export function convPart(o: { speedup: number | Record<string, number>; failing?: boolean; hang?: boolean; skipped?: boolean;
  tiles?: Record<string, (number | null)[]>; sms?: number; pickShare?: number; brokenTiles?: string[] }): string[] {
  const tiles = o.tiles ?? CONV_TILES;
  const promise = (path: string, label: string, err: number) => convLine(`conv ${path}: ${label} promise`, err, 1);
  const failures = (o.brokenTiles ?? []).map((t) => `conv mma.sync ${t}: Wan middle 384→384 3³ 60x104 promise`);
  const lines = ["conv3d correctness (promise: |err| / bound ≤ 1):", promise("mma.sync", "Wan middle 384→384 3³ 60x104", 0.21),
    ...Object.keys(CONV_TILES).map((t) => promise(`mma.sync ${t}`, "Wan middle 384→384 3³ 60x104", o.brokenTiles?.includes(t) ? 2.4e3 : 0.2)),
    promise("simt", "Wan middle 384→384 3³ 60x104", 0.03), "       auto picks mma.sync for Wan middle 384→384 3³ 60x104",
    ...[...CONV_LEVELS, CONV_HEAD].map((l, i) => `  mma.sync conv picks ${CONV_PICKS[i]} for ${l} (${o.sms ?? 132} SMs)`), "", "conv3d wgmma (path 3, sm_90a) correctness:"];
  const rows: Row[] = [...CONV_LEVELS, CONV_HEAD].flatMap((l, i) => [[`conv3d ${l} [mma.sync]`, convPicked(tiles, i, o.pickShare), CUDNN[i]!] as Row,
    ...Object.entries(tiles).flatMap(([t, tf]) => (tf[i] == null ? [] : [[`conv3d ${l} [mma.sync ${t}]`, tf[i]!, CUDNN[i]!] as Row]))]);
  if (o.skipped) lines.push("  skipped: not an sm_90 GPU with the driver's tensor-map encoder");
  else {
    const err = o.failing ? 3.71 : 0.24;
    lines.push(promise("wgmma", "Wan level 1 384→384 3³ 120x208", err));
    if (o.failing) failures.push("conv wgmma: Wan level 1 384→384 3³ 120x208 promise");
    lines.push(promise("mma.sync", "Wan head 96→3 3³ (120x208 crop)", 0.19));
    if (o.failing) lines.push("  wgmma benchmarks skipped: its correctness checks failed or did not all run");
    else if (!o.hang) {
      CONV_LEVELS.forEach((l, i) => {
        const up = typeof o.speedup === "number" ? o.speedup : (o.speedup[l] ?? 1.3);
        rows.push([`conv3d ${l} [wgmma]`, +(convPicked(tiles, i, o.pickShare) * up).toFixed(2), CUDNN[i]!]);
      });
    }
  }
  const table = ["", `| ${"op".padEnd(50)} | kino TFLOP/s | cuDNN TFLOP/s | kino/cuDNN |`, `|${"-".repeat(52)}|--------------|---------------|------------|`,
    ...rows.map(([n, k, t]) => `| ${n.padEnd(50)} | ${k.toFixed(1).padStart(12)} | ${t.toFixed(1).padStart(13)} | ${(k / t).toFixed(2).padStart(10)} |`)];
  const data = (hung: boolean) => `VERDICT-DATA ${pyDumps({ script: "gpu-check-conv", failures, wgmma: { skipped: !!o.skipped, hung, cases: o.skipped ? 0 : o.hang ? 9 : 16, total: 16 }, rows })}`;
  // hung(): the message, the table so far and summary_line(), the process ended there
  if (o.hang) return [...lines, "", "FAIL conv3d wgmma did not finish within 45 s (deadlock?); results so far:", ...table, data(true)];
  return [...lines, ...table, data(false), ...(failures.length ? ["", `${failures.length} conv3d check(s) FAILED: [${failures.map((f) => `'${f}'`).join(", ")}]`] : ["", "all conv3d checks passed"])];
}

export type Way = "eager bf16" | "graphs bf16" | "eager f32" | "graphs f32";
/** tools/bench/dit-graph.ts on CUDA: its `chunk c:` lines, report()'s PASS/FAIL lines, the chunk-time line, and VERDICT-DATA. */
export function ditGraph(o: { steadyS: Record<Way, number>; x0Worst?: number; bitForBit?: boolean }): string[] {
  const ways = Object.keys(o.steadyS) as Way[], firstS = { "eager bf16": 0.379, "graphs bf16": 0.512, "eager f32": 0.401, "graphs f32": 0.538 };
  const checks = { bitForBit: o.bitForBit ?? true, recordings: true, x0: (o.x0Worst ?? 4.1e-3) <= 2e-2, noSteadyMalloc: true };
  const compared = 12, differing = checks.bitForBit ? 0 : 2;
  return [...Array.from({ length: 10 }, (_, c) => `chunk ${c}: ${ways.map((w) => `${w} ${(c ? o.steadyS[w] : firstS[w]).toFixed(3)} s`).join(", ")}`),
    `${checks.bitForBit ? "PASS" : "FAIL"} graph launches equal eager forwards bit for bit (bf16 and f32 activations): ${compared - differing}/${compared} predictions identical (max abs diff ${checks.bitForBit ? 0 : 0.0078125})`,
    "PASS recordings per stream of 10 chunks (denoising forward / context pass), 7 expected each, all while the window fills: graphs bf16: recorded 1, updated in place 6, launched without recording 33 / recorded 1, updated in place 6, launched without recording 3; per chunk 1+1 ×7, 0+0 ×3",
    `${checks.x0 ? "PASS" : "FAIL"} x0 prediction with bf16 activations vs f32 activations: max abs err ${(o.x0Worst ?? 4.1e-3).toExponential(2)} of max|x0| over 12 steps (bound 0.02)`,
    `chunk time (4 steps + context pass, 832x480, window 21): first chunk ${ways.map((w) => `${w} ${firstS[w].toFixed(3)} s`).join(", ")}; steady (chunks ≥ 7) ${ways.map((w) => `${w} ${o.steadyS[w].toFixed(4)} s (host ${(o.steadyS[w] / 3).toFixed(4)} s)`).join(", ")}; ` +
      `speed-up of bf16 activations (f32 time / bf16 time): eager ${(o.steadyS["eager f32"] / o.steadyS["eager bf16"]).toFixed(3)}x, graphs ${(o.steadyS["graphs f32"] / o.steadyS["graphs bf16"]).toFixed(3)}x; ${(12 / o.steadyS["graphs bf16"]).toFixed(1)} video fps with graphs and bf16 activations`,
    "PASS no cudaMalloc in the steady state: cudaMalloc calls so far after chunks 7…9: 412 → 412 → 412; blocks handed out per denoising step: eager bf16 2950, graphs bf16 0, eager f32 2950, graphs f32 0 (graphs: every steady step a launch)",
    `VERDICT-DATA ${JSON.stringify({ script: "dit-graph", backend: "cuda", width: 832, height: 480, chunks: 10, steadyFrom: 7, checks, compared, differing, x0Worst: o.x0Worst ?? 4.1e-3, x0Bound: 0.02,
      videoFramesPerChunk: 12, firstS, steadyS: o.steadyS, hostSteadyS: Object.fromEntries(ways.map((w) => [w, o.steadyS[w] / 3])) })}`];
}

/** tools/bench/dit-clip-graph.ts: the PASS line, the s/step line, VERDICT-DATA. */
export function clipGraph(): string[] {
  return ["PASS bidirectional t2v clip as one graph (832x480, 81 frames, 21x30x52 tokens, bf16 activations, 3 guided steps): 6/6 predictions identical to eager (max abs diff 0), final latent identical; recorded 1, launched without recording 5",
    "s/step (cond + uncond forward): eager first 4.912 s, later 3.871 s; graph first (recording) 5.104 s, later (launches) 3.862 s; eager / graph 1.002x",
    `VERDICT-DATA ${JSON.stringify({ script: "dit-clip-graph", backend: "cuda", width: 832, height: 480, frames: 81, steps: 3, activations: "bf16", ok: true, identical: 6, predictions: 6, latentIdentical: true, eagerFirstS: 4.912, eagerLaterS: 3.871, graphFirstS: 5.104, graphLaterS: 3.862 })}`];
}

/** tools/bench/readback-overlap.ts: backend line, the PASS line, its table, VERDICT-DATA. */
export function readbackOverlap(o: { syncMs: number; overlapMs: number; threadMs: number }): string[] {
  const sync = { firstS: 0.412, intervalMs: o.syncMs, streamS: 5.31 }, overlap = { firstS: 0.409, intervalMs: o.overlapMs, streamS: 4.62 };
  const thread = { firstS: 0.413, intervalMs: o.threadMs, streamS: 5.02 };
  return ["backend: CUDA on NVIDIA H200 (sm_90, 139.8 GiB)", "PASS: overlapped readback and the encoder thread send the synchronous readback's bytes (2 runs each, 13 chunks at 832x480)",
    "| chunk i beside chunk i + 1's DiT | first chunk s | steady chunk interval ms | stream s |", "|---|---|---|---|",
    ...Object.entries({ sync, overlap, thread }).map(([m, r]) => `| ${m} | ${r.firstS.toFixed(3)} | ${r.intervalMs.toFixed(1)} | ${r.streamS.toFixed(2)} |`),
    `VERDICT-DATA ${JSON.stringify({ script: "readback-overlap", sameBytes: true, runs: 2, chunks: 13, sync, overlap, thread })}`];
}

export const E2E: E2eResult = {
  kino: "dist/kino", backend: "CUDA on NVIDIA H200", model: "random wan-1.3b checkpoint", device: "cuda", width: 832, height: 480, fps: 16, framesPerChunk: 12,
  warmupChunks: 7, measuredChunks: 10, checkpointWriteS: 9.84, serverReadyS: 31.2, coldFirstChunkS: 2.114, firstChunkS: 0.47, videoStartToFirstChunkS: 0.452,
  steadyFps: 31.7, realTimeFactor: 31.7 / 16, chunkIntervalMedianS: 0.377, chunkIntervalMaxS: 0.402, framesReceived: 201, mediaChunks: 17,
  server: { pid: 4242, exitCode: 0, stopS: 0.8, workerPids: [4250], workersLeft: [] },
};
/** tools/bench/e2e-realtime.ts without --json: its log lines (stderr), formatE2e's table and VERDICT-DATA. */
export function e2eRealtime(): string[] {
  const targets = { fps: 30, firstChunkS: 0.5 };
  return ["e2e-realtime: writing a random wan-1.3b checkpoint to /tmp/kino-e2e-Xa91/model", "e2e-realtime: starting dist/kino serve on cuda",
    "e2e-realtime: ready after 31.2 s: CUDA on NVIDIA H200", formatE2e(E2E, targets), `VERDICT-DATA ${JSON.stringify({ script: "e2e-realtime", ...E2E, targets })}`];
}

/** bun test's report (the op sweep): `FILE:`, `(pass)`/`(fail) NAME [ms]`, the counts. */
export function opSweep(failed: [string, string][] = []): string[] {
  const files = ["test/runtime/cuda.test.ts", "test/models/dit-graph.test.ts", "test/models/dit-sequence-graph.test.ts", "test/models/dit-activations.test.ts", "test/models/dit-context-pass.test.ts", "test/runtime/ops.test.ts"];
  return ["bun test v1.4.4 (38afee6c8)", ...files.flatMap((f) => ["", `${f}:`, `(pass) ${f.split("/").pop()} runs on CUDA [812.00ms]`,
    ...failed.filter(([ff]) => ff === f).flatMap(([, t]) => ["error: expect(received).toBe(expected)", "", `(fail) ${t} [1204.00ms]`])]),
    "", ` ${412 - failed.length} pass`, ` ${failed.length} fail`, " 5210 expect() calls", `Ran 412 tests across ${files.length} files. [84.31s]`];
}

export interface StepFixture {
  lines: string[];
  rc?: number;
  /** Seconds to sleep after printing: a step its cap cuts. */
  sleep?: number;
}
/** gpu-check-kernels.py verify: GEMM correctness per path (`failing`: the checks that fail, by report name, as
 *  "mma.sync 128x192: a f32 4680x1536x1536"), the attention heading, and the end of the script. */
export function verifyPart(failing: string[] = []): string[] {
  return ["GEMM correctness (out = a·wᵀ + bias):", reportLine("mma.sync: a f32 133x264x200", 1.2e-4, 2e-3), ...failing.map((f) => reportLine(f, 0.31, 2e-3)),
    "attention correctness:", ...kernelsEnd(["verify"], [], failing)];
}

/** Steps that print nothing a verdict reads, in their scripts' formats. */
export const QUIET: Record<string, StepFixture> = {
  device: { lines: ["NVIDIA H200, 570.124.06, 143771 MiB, 1980 MHz"] },
  build: { lines: ["built in 96 s: -rwxr-xr-x 1 root root 5281544 Jan  1 00:00 build/libkino_cuda.so", "sm_90a SASS: 1204 HGMMA, 96 UTMALDG (TMA), 8 UTMASTG (TMA store), 3310 HMMA instructions"] },
  conv3d: { lines: convPart({ speedup: 1.3 }) },
  kernels_verify: { lines: verifyPart() },
  vae_decode: { lines: ["CUDA on NVIDIA H200 (sm_90, 139.8 GiB):"] },
  multi_gpu: { lines: ["multi-GPU: 1 GPU on this machine: checking that num_gpus 2 is refused instead", "  ok   num_gpus 2 on 1 GPU refused, worker 1 sees no GPU (3.1 s): kino: could not load the model …"] },
};

/** Plays `steps` (by tools/gpu-check.sh's function names; a string is a shell script to run instead) through the real script in
 *  dry-run mode as one part of a split run; returns its log's path. Steps not given print the dry run's line and pass. */
export function runCheck(part: "python" | "bun", steps: Record<string, StepFixture | string>, env: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "kino-gpu-fixture-")), fixtures = join(dir, "steps"), out = join(dir, "out");
  mkdirSync(fixtures);
  mkdirSync(out);
  for (const [fn, s] of Object.entries(steps)) {
    writeFileSync(join(fixtures, `${fn}.sh`), typeof s === "string" ? s : `cat <<'KINO_FIXTURE_EOF'\n${s.lines.join("\n")}\nKINO_FIXTURE_EOF\n${s.sleep ? `sleep ${s.sleep}\n` : ""}exit ${s.rc ?? 0}\n`);
  }
  Bun.spawnSync(["bash", "tools/gpu-check.sh"], { cwd: root, env: { ...process.env, KINO_GPU_CHECK_DRY_RUN: "1", KINO_GPU_CHECK_DRY_FIXTURES: fixtures, KINO_GPU_CHECK_PART: part, OUT: out, ...env }, stdout: "ignore", stderr: "ignore" });
  return join(out, "gpu-check.log");
}
