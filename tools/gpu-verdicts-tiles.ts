// The mma.sync kernels' tile models judged by the steps of tools/gpu-check.sh that print per shape the
// tile the model picks on the GPU at hand and time mma.sync with that pick ([mma.sync]) and with each tile
// forced — step 10 (tools/gpu-check-kernels.py bench):
//   the GEMM's (kernels/cuda/gemm_mma_tiles.cuh): "  mma.sync picks 128xN for SHAPE (S SMs)", rows
//     [mma.sync 128x256], [mma.sync 128x192], [mma.sync 128x128];
//   the attention's query tiling (kernels/cuda/attention_mma_tiles.cuh): "  mma.sync attention picks bqN
//     for SHAPE (S SMs)", rows [mma.sync bq128], [mma.sync bq64];
// and step 8 (tools/gpu-check-conv.py):
//   the convolution's (kernels/cuda/conv_mma_tiles.cuh): "  mma.sync conv picks BMxBN for LEVEL (S SMs)",
//     rows [mma.sync 128x192], [mma.sync 256x96], [mma.sync 128x96] (at the 3-channel head, where the
//     narrow tile is the model's only one, [mma.sync 256x16]).
// Per model:
//   AGREES       at every shape the pick times within TILE_TOLERANCE of the fastest tile forced;
//   DISAGREES    at some shape a forced tile beat the pick by more: the shapes, the tile, the loss;
//   NO EVIDENCE  the step was not run, was cut before its table, or left a shape without figures.
// Advice, not a constant: tools/gpu-verdicts.ts prints it under "advice", and --apply touches no model.
// A model is for every GPU, so any GPU's run counts; the SM count it printed is reported beside it.
import { type CheckLogs, type DataRecord, findRecord, findStep } from "./gpu-verdicts-log.ts";
import { STEPS, rowsOf } from "./gpu-verdicts-rules.ts";

export const TILE_MODEL = "kernels/cuda/gemm_mma_tiles.cuh";
export const ATTENTION_TILING_MODEL = "kernels/cuda/attention_mma_tiles.cuh";
export const CONV_TILE_MODEL = "kernels/cuda/conv_mma_tiles.cuh";
/** The tiles step 10 forces (gpu-check-kernels.py's MMA_TILES, ATTENTION_TILINGS) and step 8 (gpu-check-conv.py's CONV_MMA_TILES). */
export const MMA_TILES = ["128x256", "128x192", "128x128"] as const;
export const ATTENTION_TILINGS = ["bq128", "bq64"] as const;
export const CONV_MMA_TILES = ["128x192", "256x96", "128x96", "256x16"] as const;
/** How far below the fastest forced tile the pick may time and still count as the best choice: the pick
 *  and its own tile forced are the same kernel timed twice (20 calls each), and such twins differ by up
 *  to a couple of percent from run to run; a loss beyond 3 % is the model's, not the clock's. */
export const TILE_TOLERANCE = 0.03;

export interface Advice {
  name: string;
  source: string;
  verdict: "AGREES" | "DISAGREES" | "NO EVIDENCE";
  why: string;
  evidence: string[];
}

/** What tells one model's lines and rows from the others'. */
interface Model {
  name: string;
  source: string;
  /** The step that times it (a key of STEPS), and the script (and part) whose VERDICT-DATA has its rows and, for `verify`, the failed checks of its tiles forced. */
  step: keyof typeof STEPS;
  record: [script: string, part?: string];
  verify: [script: string, part?: string];
  /** Where those checks ran, as the evidence says it. */
  verifySaid: string;
  /** Where its picks are tested by hand. */
  test: string;
  /** "tile" or "tiling", as the messages say it. */
  noun: string;
  /** What a run timed ("mma.sync GEMM") and forced ("mma.sync tiles"), for the table's absence. */
  timed: string;
  forcedSaid: string;
  tiles: readonly string[];
  /** The picks line: [, pick, shape, SMs]. */
  picks: RegExp;
  picksSaid: string;
  /** A row's label of this model: [, shape, detail] (the GEMM's M×N×K). */
  row: RegExp;
  /** The verify step's failed check that forced `tile`. */
  forces: (failure: string, tile: string) => boolean;
}
const GEMM: Model = {
  name: "mma.sync GEMM tile model", source: TILE_MODEL, step: "kernelsBench", record: ["gpu-check-kernels", "bench"], verify: ["gpu-check-kernels", "verify"],
  verifySaid: "the verify step", test: "test/runtime/cuda-gemm-mma-tiles.test.ts", noun: "tile", timed: "mma.sync GEMM", forcedSaid: "mma.sync tiles",
  tiles: MMA_TILES, picks: /^ {2}mma\.sync picks (\d+x\d+) for (.+) \((\d+) SMs\)$/, picksSaid: "mma.sync picks", row: /^gemm (.+) (\d+x\d+x\d+)$/,
  forces: (f, tile) => f.startsWith(`mma.sync ${tile}:`),
};
const ATTENTION: Model = {
  name: "mma.sync attention tiling model", source: ATTENTION_TILING_MODEL, step: "kernelsBench", record: ["gpu-check-kernels", "bench"],
  verify: ["gpu-check-kernels", "verify"], verifySaid: "the verify step", test: "test/runtime/cuda-attention-mma-tiles.test.ts", noun: "tiling",
  timed: "mma.sync attention", forcedSaid: "mma.sync attention tilings", tiles: ATTENTION_TILINGS, picks: /^ {2}mma\.sync attention picks (bq\d+) for (.+) \((\d+) SMs\)$/,
  picksSaid: "mma.sync attention picks", row: /^attention \d+x\d+ (.+)()$/,
  // the verify step's forced tilings: "bf16 mma D=… (64 rows)" and its promise line
  forces: (f, tile) => f.endsWith(` (${tile.slice(2)} rows)`),
};
const CONV: Model = {
  name: "mma.sync conv tile model", source: CONV_TILE_MODEL, step: "conv", record: ["gpu-check-conv"], verify: ["gpu-check-conv"], verifySaid: "the conv step",
  test: "test/runtime/cuda-conv-mma-tiles.test.ts", noun: "tile", timed: "mma.sync conv3d", forcedSaid: "mma.sync conv tiles", tiles: CONV_MMA_TILES,
  picks: /^ {2}mma\.sync conv picks (\d+x\d+) for (.+) \((\d+) SMs\)$/, picksSaid: "mma.sync conv picks", row: /^conv3d (.+)()$/,
  // the correctness pass's forced tiles: "conv mma.sync 128x192: LABEL promise" (or "… ran KERNEL")
  forces: (f, tile) => f.startsWith(`conv mma.sync ${tile}:`),
};

/** One shape as step 10 measured it; a figure is absent where its row is (or is not a number). */
export interface TileShape {
  shape: string;
  /** The GEMM's M×N×K ("" for attention). */
  mnk: string;
  /** Whether the table has a row of this shape. */
  timed: boolean;
  pick: string | null;
  sms: number | null;
  pickTflops: number | null;
  forced: Partial<Record<string, number>>;
  /** The fastest forced tile among those whose correctness checks did not fail, and the pick's share of it. */
  best: { tile: string; tflops: number } | null;
  fraction: number | null;
}

const f1 = (x: number) => x.toFixed(1), f2 = (x: number) => x.toFixed(2);
/** A timing that failed is no figure: kc_timer_stop's -1 ms makes it negative, a NaN is null in the JSON. */
const figure = (x: number) => (Number.isFinite(x) && x > 0 ? x : null);

/** The step output the record came from (its picks lines precede its table), or without a record every run of the step. */
function benchLines(logs: CheckLogs, r: DataRecord | undefined, model: Model): string[] {
  if (r) return logs.steps.find((s) => s.name === r.step)?.runs.find((run) => run.log === r.log)?.lines ?? [];
  return findStep(logs, STEPS[model.step])?.runs.flatMap((run) => run.lines) ?? [];
}

/** Tiles whose forced correctness checks failed ("mma.sync 128x192: a f32 …", "conv mma.sync 128x192: …"): no candidates for the fastest. */
function brokenTiles(logs: CheckLogs, model: Model): string[] {
  const failures = findRecord(logs, ...model.verify)?.failures;
  if (!Array.isArray(failures)) return [];
  return model.tiles.filter((t) => failures.some((f) => model.forces(String(f), t)));
}

/** Per shape, in the order step 10 ran them: the pick, its figure, each forced tile's and the fastest. */
export function tileShapes(logs: CheckLogs, model: Model = GEMM): TileShape[] {
  const r = findRecord(logs, ...model.record);
  const shapes = new Map<string, TileShape>();
  const shapeNamed = (shape: string) => {
    if (!shapes.has(shape)) shapes.set(shape, { shape, mnk: "", timed: false, pick: null, sms: null, pickTflops: null, forced: {}, best: null, fraction: null });
    return shapes.get(shape)!;
  };
  for (const line of benchLines(logs, r, model)) {
    const m = model.picks.exec(line);
    if (m) Object.assign(shapeNamed(m[2]!), { pick: m[1]!, sms: Number(m[3]) });
  }
  for (const row of rowsOf(r)) {
    const g = model.row.exec(row.label), tile = /^mma\.sync(?: (\S+))?$/.exec(row.kernel);
    if (!g || !tile || (tile[1] && !model.tiles.includes(tile[1]))) continue;
    const s = shapeNamed(g[1]!);
    s.mnk = g[2]!;
    s.timed = true;
    if (tile[1]) s.forced[tile[1]] = figure(row.kino) ?? undefined;
    else s.pickTflops = figure(row.kino);
  }
  const broken = brokenTiles(logs, model);
  for (const s of shapes.values()) {
    for (const tile of model.tiles) {
      const tf = s.forced[tile];
      if (tf !== undefined && !broken.includes(tile) && (!s.best || tf > s.best.tflops)) s.best = { tile, tflops: tf };
    }
    if (s.best && s.pickTflops !== null) s.fraction = s.pickTflops / s.best.tflops;
  }
  return [...shapes.values()];
}

const named = (s: TileShape) => `${s.shape}${s.mnk ? ` ${s.mnk}` : ""}`;

function evidenceOf(s: TileShape, model: Model): string {
  const forced = model.tiles.map((t) => `${t} ${s.forced[t] === undefined ? "—" : f1(s.forced[t]!)}`).join(", ");
  if (s.pick === null) return `${named(s)}: no "${model.picksSaid}" line for it; forced ${forced}`;
  if (s.pickTflops === null) return `${named(s)}: picks ${s.pick}, not timed; forced ${forced}`;
  if (!s.best) return `${named(s)}: picks ${s.pick} at ${f1(s.pickTflops)} TFLOP/s; no forced tile timed`;
  return `${named(s)}: picks ${s.pick} at ${f1(s.pickTflops)} TFLOP/s, ${f2(s.fraction!)} of the fastest forced (${s.best.tile}); forced ${forced}`;
}

/** Why the model's step left no record: its own result, as the constants' rules say it. */
function noRecord(logs: CheckLogs, model: Model): string {
  const name = STEPS[model.step], step = findStep(logs, name);
  if (!step) return `step "${name}" is not in the logs`;
  const said = `step "${name}" ${step.result}${step.note ? ` (${step.note})` : ""}`;
  return step.result === "PASS" || step.result === "?" ? `${said}, but printed no VERDICT-DATA for it` : `${said}, before its table`;
}

/** A shape where the pick lost: to another tile (the model's error), or to its own tile forced (the pick's run is not that tile's). */
const lossOf = (s: TileShape) => {
  const loses = `loses ${f1((1 - s.fraction!) * 100)} %`;
  return s.best!.tile === s.pick ? `${s.shape}: picks ${s.pick}, which forced runs faster than picked (the pick ${loses})` : `${s.shape}: picks ${s.pick}, ${s.best!.tile} forced is faster (the pick ${loses})`;
};

function judgeModel(logs: CheckLogs, model: Model): Advice {
  const advice = (verdict: Advice["verdict"], why: string, evidence: string[]): Advice => ({ name: model.name, source: model.source, verdict, why, evidence });
  try {
    const shapes = tileShapes(logs, model);
    const evidence = shapes.map((s) => evidenceOf(s, model));
    const broken = brokenTiles(logs, model);
    if (broken.length) evidence.push(`not counted as the fastest: ${broken.join(", ")} (their forced correctness checks failed in ${model.verifySaid})`);
    if (!findRecord(logs, ...model.record)) return advice("NO EVIDENCE", noRecord(logs, model), evidence);
    const judged = shapes.filter((s) => s.fraction !== null && s.pick !== null);
    const sms = [...new Set(shapes.flatMap((s) => (s.sms === null ? [] : [s.sms])))];
    const on = sms.length ? ` on ${sms.join(" and ")} SMs` : "";
    if (!judged.length) return advice("NO EVIDENCE", `step "${STEPS[model.step]}" printed no pick with its figure and the forced ${model.noun}s' beside it`, evidence);
    const tol = `${TILE_TOLERANCE * 100} %`;
    const lost = judged.filter((s) => s.fraction! < 1 - TILE_TOLERANCE);
    if (lost.length) {
      return advice("DISAGREES", `${lost.map(lossOf).join("; ")}${on}; tolerance ${tol}`,
        [...evidence, `the model lives in ${model.source}: change it there by hand, with its picks in ${model.test}`]);
    }
    const missing = shapes.filter((s) => !judged.includes(s));
    if (missing.length) return advice("NO EVIDENCE", `within ${tol} of the fastest at ${judged.length} of ${shapes.length} shapes${on}; no figures to judge ${missing.map((s) => s.shape).join(", ")}`, evidence);
    return advice("AGREES", `at all ${judged.length} shapes${on} the pick is within ${tol} of the fastest ${model.noun} forced`, evidence);
  } catch (e) {
    return advice("NO EVIDENCE", `step "${STEPS[model.step]}": its VERDICT-DATA could not be read (${(e as Error).message})`, []);
  }
}

/** The mma.sync GEMM's tile model, judged. */
export const tileModel = (logs: CheckLogs): Advice => judgeModel(logs, GEMM);
/** The mma.sync attention's tiling model, judged. */
export const attentionTilingModel = (logs: CheckLogs): Advice => judgeModel(logs, ATTENTION);
/** The mma.sync convolution's tile model, judged. */
export const convTileModel = (logs: CheckLogs): Advice => judgeModel(logs, CONV);

/** The figures table: per shape the model's pick beside each tile forced (TFLOP/s). */
function table(logs: CheckLogs, model: Model): string[] {
  const shapes = tileShapes(logs, model).filter((s) => s.timed);
  if (!shapes.length) return [findRecord(logs, ...model.record) ? `(step "${STEPS[model.step]}" of this log timed no ${model.timed})` : `${model.forcedSaid} forced (not measured: ${noRecord(logs, model)})`];
  const sms = [...new Set(shapes.flatMap((s) => (s.sms === null ? [] : [s.sms])))];
  const show = (x: number | null | undefined) => (x == null ? "—" : f1(x));
  return [`| shape (${sms.length ? `${sms.join(", ")} SMs` : "SMs not printed"}) | model picks | the pick | ${model.tiles.map((t) => `${t} forced`).join(" | ")} | pick / fastest forced |`, `|---|---|---|${model.tiles.map(() => "---|").join("")}---|`,
    ...shapes.map((s) => `| ${named(s).replace(/(\d)x(\d)/g, "$1×$2")} | ${s.pick ?? "—"} | ${show(s.pickTflops)} | ${model.tiles.map((t) => show(s.forced[t])).join(" | ")} | ${s.fraction === null ? "—" : f2(s.fraction)} |`)];
}
export const tileTable = (logs: CheckLogs) => table(logs, GEMM);
export const attentionTilingTable = (logs: CheckLogs) => table(logs, ATTENTION);
export const convTileTable = (logs: CheckLogs) => table(logs, CONV);
