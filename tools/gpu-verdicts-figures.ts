// The figures of a tools/gpu-check.sh run as markdown rows in the shapes of docs/BENCHMARKS.md's GPU
// section (tools/gpu-verdicts.ts prints them to paste there): attention and GEMM TFLOP/s beside
// cuDNN / cuBLAS, the mma.sync GEMM's tile pick beside each tile forced and the mma.sync attention's
// query tiling beside each forced (tools/gpu-verdicts-tiles.ts), the wgmma attention's 176-key tiles
// beside its 128-key ones and its stream-K schedule beside whole items, the Hopper GEMMs side by side,
// conv3d's kernels beside cuDNN and the mma.sync conv's tile pick beside each tile forced, the DiT's seconds per chunk four ways, the clip graph, end to end
// through the server, the overlapped readback, a kernel fault's lost context, and the op sweep's counts. What a run did not measure is said, with the step's result, instead of a row.
import { type CheckLogs, type DataRecord, findRecord, findStep, readBunTest } from "./gpu-verdicts-log.ts";
import { STEPS, rowsOf } from "./gpu-verdicts-rules.ts";
import { attentionTilingTable, convTileTable, tileTable } from "./gpu-verdicts-tiles.ts";

const f1 = (x: number) => x.toFixed(1), f3 = (x: number) => x.toFixed(3), f4 = (x: number) => x.toFixed(4);
/** The row names as the docs write them: × for x between sizes. */
const pretty = (label: string) => label.replace(/(\d)x(\d)/g, "$1×$2").replace(/^gemm /, "GEMM ");

/** nvidia-smi's line from the device step (name, driver, memory, clock), past the dry run's own line. */
const deviceLine = (logs: CheckLogs) => findStep(logs, "device")?.runs[0]?.lines.find((l) => l.trim() && !l.startsWith("dry run: "));

function notMeasured(logs: CheckLogs, stepKey: keyof typeof STEPS): string {
  const step = findStep(logs, STEPS[stepKey]);
  return `(not measured: step "${STEPS[stepKey]}" ${step ? `${step.result}${step.note ? ` (${step.note})` : ""}` : "not in the logs"})`;
}

function kernelTables(logs: CheckLogs): string[] {
  const parts = ["wgmma", "bench", "persistent", "persistent-tma", "pingpong"];
  const recs = Object.fromEntries(parts.map((p) => [p, findRecord(logs, "gpu-check-kernels", p)])) as Record<string, DataRecord | undefined>;
  const out = ["| op | kino TFLOP/s | PyTorch (cuBLAS / cuDNN SDPA) | kino / torch |", "|---|---|---|---|"];
  const seen = new Set<string>();
  for (const p of ["wgmma", "bench"]) {
    for (const r of rowsOf(recs[p])) {
      const key = `${r.label} [${r.kernel}]`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(`| ${pretty(r.label)} (${r.kernel}) | ${f1(r.kino)} | ${f1(r.torch)} | ${(r.kino / r.torch).toFixed(2)} |`);
    }
  }
  if (!seen.size) out.splice(0, 2, `attention and GEMM beside cuBLAS / SDPA ${notMeasured(logs, "kernelsBench")}`);

  // the Hopper GEMMs: each column from its own part; one block per tile and cuBLAS from the first part that timed them
  const columns = [["wgmma", "one block per tile"], ["persistent", "persistent"], ["persistent-tma", "persistent + TMA store"], ["pingpong", "ping-pong"]] as const;
  const rows = ["persistent", "persistent-tma", "pingpong"].flatMap((p) => rowsOf(recs[p]).map((r) => ({ ...r, part: p })));
  if (!rows.length) return [...out, "", `Hopper GEMMs ${notMeasured(logs, "hopper")}`];
  const labels = [...new Set(rows.map((r) => r.label))];
  // a kernel's own part first; the TMA-store part times the register-epilogue persistent kernel at its bf16 outputs too
  const cell = (label: string, kernel: string) => {
    const same = rows.filter((x) => x.label === label && x.kernel === kernel);
    const r = same.find((x) => x.part === kernel) ?? same[0];
    return r ? f1(r.kino) : "—";
  };
  return [...out, "", `| shape | ${columns.map(([, c]) => c).join(" | ")} | cuBLAS |`, `|---|${columns.map(() => "---|").join("")}---|`,
    ...labels.map((l) => `| ${pretty(l).replace(/^GEMM /, "")} | ${columns.map(([k]) => cell(l, k)).join(" | ")} | ${f1(rows.find((x) => x.label === l)!.torch)} |`)];
}

/** The wgmma attention at D 128 with FlashAttention-3's 176-key tiles (KINO_CUDA_ATTENTION_BKV=176) beside
 *  its 128-key ones and SDPA, from the wgmma part (its VERDICT-DATA `bkv176`: cases and failures): which is
 *  faster at each Wan shape. A figure only: neither auto nor any constant follows from it. */
function bkvTable(logs: CheckLogs): string[] {
  const r = findRecord(logs, "gpu-check-kernels", "wgmma");
  if (!r) return [`176-key tiles ${notMeasured(logs, "hopper")}`];
  const b = r.bkv176 as { cases: number; failures: string[] } | undefined;
  if (!b) return ["(the wgmma part of this log did not run the 176-key tiles)"];
  const rows = rowsOf(r).filter((x) => x.label.startsWith("attention"));
  const t176 = rows.filter((x) => x.kernel === "wgmma-bkv176"), t128 = rows.filter((x) => x.kernel === "wgmma");
  const said = b.failures.length
    ? `176-key tiles: ${b.failures.length} correctness check(s) FAILED: ${b.failures.slice(0, 2).join("; ")}${b.failures.length > 2 ? "; …" : ""}`
    : `176-key tiles: every correctness check passed (${b.cases} cases, f32 and bf16 inputs)`;
  if (!t176.length) return [said];
  const pairs = t176.map((x) => [x, t128.find((y) => y.label === x.label)] as const);
  const faster = pairs.filter(([x, y]) => y && x.kino > y.kino).length, compared = pairs.filter(([, y]) => y).length;
  return [said, "| shape (D 128) | 128-key tiles | 176-key tiles | 176 / 128 | SDPA |", "|---|---|---|---|---|",
    ...pairs.map(([x, y]) => `| ${pretty(x.label)} | ${y ? f1(y.kino) : "—"} | ${f1(x.kino)} | ${y ? (x.kino / y.kino).toFixed(2) : "—"} | ${f1(x.torch)} |`),
    compared ? `176-key tiles faster at ${faster} of ${compared} shapes` : "(no 128-key figures beside them)"];
}

/** A kernel's attention rows beside the same kernel with its work not split ([KERNEL whole]): the wgmma
 *  attention's stream-K schedule (attention_split.cuh, KINO_CUDA_ATTENTION_SPLIT=0 for whole items) from
 *  the wgmma part, the mma.sync attention's parts over the keys (attention_mma_tiles.cuh,
 *  KINO_CUDA_ATTENTION_PARTS=1 for one) from the bench part. */
function wholeTable(part: "wgmma" | "bench", kernel: string, split: string, missing: string) {
  return (logs: CheckLogs): string[] => {
    const r = findRecord(logs, "gpu-check-kernels", part);
    if (!r) return [`${split} beside unsplit work ${notMeasured(logs, part === "wgmma" ? "hopper" : "kernelsBench")}`];
    const rows = rowsOf(r).filter((x) => x.label.startsWith("attention"));
    const whole = rows.filter((x) => x.kernel === `${kernel} whole`);
    if (!whole.length) return [`(the ${part} part of this log timed no ${kernel} attention unsplit: ${missing})`];
    const pairs = whole.map((w) => [rows.find((x) => x.kernel === kernel && x.label === w.label), w] as const);
    const faster = pairs.filter(([x, w]) => x && x.kino > w.kino).length, compared = pairs.filter(([x]) => x).length;
    return [`| shape (D 128) | ${split} | unsplit | ${split} / unsplit | SDPA |`, "|---|---|---|---|---|",
      ...pairs.map(([x, w]) => `| ${pretty(w.label)} | ${x ? f1(x.kino) : "—"} | ${f1(w.kino)} | ${x ? (x.kino / w.kino).toFixed(2) : "—"} | ${f1(w.torch)} |`),
      `${split} faster at ${faster} of ${compared} shapes (where the model keeps a shape unsplit, both rows time the same launch)`];
  };
}
const splitTable = wholeTable("wgmma", "wgmma", "stream-K", "its checks failed, or it predates the schedule");
const partsTable = wholeTable("bench", "mma.sync", "parts", "it predates the parts");

/** conv3d at the Wan-VAE decoder's levels: mma.sync and wgmma beside cuDNN (TFLOP/s). */
function convTable(logs: CheckLogs): string[] {
  const rows = rowsOf(findRecord(logs, "gpu-check-conv"));
  if (!rows.length) return [`conv3d beside cuDNN ${notMeasured(logs, "conv")}`];
  const levels = [...new Set(rows.map((r) => r.label))];
  const cell = (label: string, kernel: string) => rows.find((r) => r.label === label && r.kernel === kernel)?.kino;
  return ["| level (conv3d) | mma.sync | wgmma | cuDNN | wgmma / mma.sync |", "|---|---|---|---|---|", ...levels.map((l) => {
    const mma = cell(l, "mma.sync"), wg = cell(l, "wgmma");
    const show = (x: number | undefined) => (x === undefined ? "—" : f1(x));
    return `| ${l.replace(/^conv3d /, "")} | ${show(mma)} | ${show(wg)} | ${f1(rows.find((r) => r.label === l)!.torch)} | ${mma && wg ? (wg / mma).toFixed(2) : "—"} |`;
  })];
}

function ditTable(logs: CheckLogs): string[] {
  const r = findRecord(logs, "dit-graph");
  if (!r) return [`causal DiT ${notMeasured(logs, "causal")}`];
  const ways = ["eager bf16", "graphs bf16", "eager f32", "graphs f32"];
  const first = r.firstS as Record<string, number>, steady = r.steadyS as Record<string, number>, host = r.hostSteadyS as Record<string, number>;
  const perWay = (f: (w: string) => string) => ways.map(f).join(" | ");
  const fps = (w: string) => f1(Number(r.videoFramesPerChunk) / steady[w]!);
  return [`| what (${r.backend}, ${r.width}x${r.height}) | ${ways.join(" | ")} |`, "|---|---|---|---|---|",
    `| s per chunk, first / steady (chunks ≥ ${r.steadyFrom}) | ${perWay((w) => `${f3(first[w]!)} / ${f4(steady[w]!)}`)} |`,
    `| host s per steady chunk (until the last op is enqueued) | ${perWay((w) => f4(host[w]!))} |`,
    `| video fps of DiT throughput, steady | ${perWay(fps)} |`,
    `| predictions equal eager bit for bit (both dtypes) | — | ${Number(r.compared) - Number(r.differing)}/${r.compared} | — | ${Number(r.compared) - Number(r.differing)}/${r.compared} |`,
    `| x0 max abs err / max\\|x0\\| against f32 activations (bound ${r.x0Bound}) | ${Number(r.x0Worst).toExponential(2)} | — | — | — |`];
}

function clipTable(logs: CheckLogs): string[] {
  const r = findRecord(logs, "dit-clip-graph");
  if (!r) return [`bidirectional clip graph ${notMeasured(logs, "clip")}`];
  return ["| what | eager | graph |", "|---|---|---|",
    `| s per step (both forwards), first / later | ${f3(Number(r.eagerFirstS))} / ${f3(Number(r.eagerLaterS))} | ${f3(Number(r.graphFirstS))} / ${f3(Number(r.graphLaterS))} |`,
    `| predictions and final latent equal eager bit for bit | — | ${r.identical}/${r.predictions}, latent ${r.latentIdentical ? "identical" : "DIFFERS"} |`];
}

function e2eTable(logs: CheckLogs): string[] {
  const r = findRecord(logs, "e2e-realtime");
  if (!r) return [`end to end ${notMeasured(logs, "e2e")}`];
  const n = (k: string) => Number(r[k]);
  const t = (r.targets ?? {}) as { fps?: number; firstChunkS?: number };
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  const last = n("warmupChunks") + n("measuredChunks") - 1;
  return [`| what | ${deviceLine(logs)?.split(",")[0] ?? "GPU"} | target |`, "|---|---|---|",
    `| checkpoint written / spawn → ready | ${r.checkpointWriteS === null ? "—" : `${f1(n("checkpointWriteS"))} s`} / ${f1(n("serverReadyS"))} s | — |`,
    `| session.start → first media chunk, the server's first session | ${f3(n("coldFirstChunkS"))} s | — |`,
    `| session.start → first media chunk, the next session (a new prompt) | ${f3(n("firstChunkS"))} s | ${t.firstChunkS !== undefined ? `≤ ${t.firstChunkS} s: ${met(n("firstChunkS") <= t.firstChunkS)}` : "—"} |`,
    `| steady video fps (frames per wall s, chunks ${n("warmupChunks")}–${last}) | ${f1(n("steadyFps"))} | ${t.fps !== undefined ? `≥ ${t.fps}: ${met(n("steadyFps") >= t.fps)}` : "—"} |`,
    `| real-time factor (media s per wall s) | ${n("realTimeFactor").toFixed(2)}× | ${t.fps !== undefined ? `≥ ${(t.fps / n("fps")).toFixed(3).replace(/\.?0+$/, "")}× (${t.fps} fps of ${n("fps")} fps video)` : "—"} |`];
}

function readbackTable(logs: CheckLogs): string[] {
  const r = findRecord(logs, "readback-overlap");
  if (!r) return [`overlapped readback ${notMeasured(logs, "readback")}`];
  const row = (mode: string) => {
    const m = r[mode] as { firstS: number; intervalMs: number; streamS: number } | undefined;
    return m ? [`| ${mode} | ${f3(m.firstS)} | ${f1(m.intervalMs)} | ${m.streamS.toFixed(2)} |`] : [];
  };
  return ["| chunk i beside chunk i + 1's DiT | first chunk s | steady chunk interval ms | stream s |", "|---|---|---|---|",
    ...row("sync"), ...row("overlap"), ...row("thread")];
}

/** A kernel fault on purpose (tools/gpu-check-device-lost.ts): whether the backend's next call said the
 *  context was lost, as the worker's replacement relies on. */
function deviceLost(logs: CheckLogs): string[] {
  const step = findStep(logs, STEPS.deviceLost);
  const said = step?.runs.flatMap((r) => r.lines).find((l) => /^(PASS|FAIL) the backend's next call/.test(l));
  return [said ?? `the lost context ${notMeasured(logs, "deviceLost")}`];
}

function opSweep(logs: CheckLogs): string[] {
  const step = findStep(logs, STEPS.opSweep);
  const counts = step?.runs.map((r) => readBunTest(r.lines)).find((c) => c);
  if (!counts) return [`op sweep ${notMeasured(logs, "opSweep")}`];
  return [`| op sweep on CUDA (bun test${counts.files !== null ? `, ${counts.files} files` : ""}) | ${counts.pass} pass, ${counts.fail} fail |`,
    ...counts.failed.map((f) => `  failed: ${f}`)];
}

/** Every table, each under a heading line naming what it is. */
export function figures(logs: CheckLogs): string[] {
  const device = deviceLine(logs);
  const tables: [string, (l: CheckLogs) => string[]][] = [["attention and GEMM (TFLOP/s), then the Hopper GEMMs side by side", kernelTables],
    ["mma.sync GEMM: the tile model's pick beside each tile forced (TFLOP/s; the advice above judges it)", tileTable],
    ["mma.sync attention: the tiling model's pick beside each tiling forced (TFLOP/s; the advice above judges it)", attentionTilingTable],
    ["wgmma attention, 176- beside 128-key tiles (TFLOP/s; auto picks neither by this)", bkvTable],
    ["wgmma attention, stream-K beside whole items (TFLOP/s)", splitTable],
    ["mma.sync attention, its keys in the parts its model picks beside one part (TFLOP/s)", partsTable],
    ["conv3d at the Wan-VAE decoder's levels (TFLOP/s)", convTable],
    ["mma.sync conv3d: the tile model's pick beside each tile forced (TFLOP/s; the advice above judges it)", convTileTable],
    ["causal DiT, Wan2.1-1.3B at real size (tools/bench/dit-graph.ts)", ditTable], ["bidirectional t2v clip as one graph", clipTable],
    ["end to end through kino serve", e2eTable], ["readback overlapped with the next chunk", readbackTable],
    ["a kernel fault: the CUDA backend's next call", deviceLost], ["op sweep", opSweep]];
  // a record with a field missing costs its table, not the others
  const sections = tables.map(([title, table]) => [title, () => {
    try {
      return table(logs);
    } catch (e) {
      return [`(could not be made from its VERDICT-DATA: ${(e as Error).message})`];
    }
  }] as const);
  return [`device: ${device ?? "(no device line)"}`, ...sections.flatMap(([title, lines]) => ["", `### ${title}`, ...lines()])];
}
