// A strict reader of Prometheus' text exposition format 0.0.4, written from the format's description
// (https://prometheus.io/docs/instrumenting/exposition_formats/) and independent of kino's writer, so
// the tests read /metrics as a scraper would and any deviation throws, naming the line.

export type Labels = Record<string, string>;
export interface Sample {
  name: string;
  labels: Labels;
  value: number;
}
export interface MetricFamily {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: Sample[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = "[a-zA-Z_][a-zA-Z0-9_]*";
const TYPES = ["counter", "gauge", "histogram", "summary", "untyped"];

export function parseExposition(text: string): Map<string, MetricFamily> {
  if (!text.endsWith("\n")) throw new Error("the exposition must end with a line feed");
  const families = new Map<string, MetricFamily>();
  const seen = new Set<string>();
  let current: MetricFamily | null = null;
  const lines = text.slice(0, -1).split("\n");
  for (const [i, line] of lines.entries()) {
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1} (${JSON.stringify(line)}): ${why}`);
    };
    if (line === "") fail("empty line");
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME})(?: (.*))?$`).exec(line);
    if (meta) {
      const [, keyword, name, rest = ""] = meta;
      let family = families.get(name!);
      if (family && family !== current) fail(`${name} was already written as its own group`);
      if (family && family.samples.length) fail(`${keyword} after the samples of ${name}`);
      if (!family) families.set(name!, (family = { name: name!, type: "untyped", help: "", samples: [] }));
      current = family;
      if (keyword === "HELP") {
        if (seen.has(`HELP ${name}`)) fail(`second HELP for ${name}`);
        family.help = unescape(rest, false, fail);
      } else {
        if (seen.has(`TYPE ${name}`)) fail(`second TYPE for ${name}`);
        if (!TYPES.includes(rest)) fail(`unknown type '${rest}'`);
        family.type = rest as MetricFamily["type"];
      }
      seen.add(`${keyword} ${name}`);
      continue;
    }
    if (line.startsWith("#")) continue; // a plain comment
    const sample = parseSample(line, fail);
    const family = current && belongs(sample.name, current) ? current : null;
    if (!family) fail(`sample ${sample.name} outside the group of its family (every family needs # TYPE before its samples)`);
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(key)) fail(`duplicate series ${key}`);
    seen.add(key);
    family!.samples.push(sample);
  }
  for (const family of families.values()) {
    if (!seen.has(`TYPE ${family.name}`)) throw new Error(`${family.name}: no # TYPE line`);
    if (family.type === "counter") for (const s of family.samples) if (!(s.value >= 0)) throw new Error(`${s.name}: a counter is ${s.value}`);
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

function belongs(sample: string, family: MetricFamily): boolean {
  if (family.type === "histogram") return [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`].includes(sample);
  if (family.type === "summary") return [family.name, `${family.name}_sum`, `${family.name}_count`].includes(sample);
  return sample === family.name;
}

function parseSample(line: string, fail: (why: string) => never): Sample {
  const head = new RegExp(`^(${NAME})`).exec(line) ?? fail("no metric name");
  const name = head[1]!;
  let at = name.length;
  const labels: Labels = {};
  if (line[at] === "{") {
    at++;
    while (line[at] !== "}") {
      const label = new RegExp(`^(${LABEL})="`).exec(line.slice(at)) ?? fail(`bad label at column ${at + 1}`);
      at += label[0].length;
      let raw = "";
      while (line[at] !== '"') {
        if (at >= line.length) fail("unterminated label value");
        if (line[at] === "\\") raw += line[at++];
        raw += line[at++];
      }
      at++;
      if (label[1]! in labels) fail(`label ${label[1]} twice`);
      labels[label[1]!] = unescape(raw, true, fail);
      if (line[at] === ",") at++;
      else if (line[at] !== "}") fail(`expected , or } at column ${at + 1}`);
    }
    at++;
  }
  const rest = /^ (\S+)(?: (-?\d+))?$/.exec(line.slice(at)) ?? fail("expected ' value [timestamp]' after the labels");
  return { name, labels, value: parseValue(rest[1]!, fail) };
}

function parseValue(text: string, fail: (why: string) => never): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) fail(`'${text}' is not a float`);
  return Number(text);
}

/** Label values may escape \\, \" and \n; HELP text \\ and \n. Anything else after a backslash is an error. */
function unescape(text: string, quoted: boolean, fail: (why: string) => never): string {
  return text.replace(/\\(.?)/g, (_, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    if (c === '"' && quoted) return '"';
    return fail(`bad escape \\${c}`);
  });
}

function checkHistogram(family: MetricFamily): void {
  const bySeries = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const series = bySeries.get(key) ?? { buckets: [] };
    bySeries.set(key, series);
    if (s.name.endsWith("_bucket")) {
      if (le === undefined) throw new Error(`${s.name}: a bucket without le`);
      series.buckets.push([parseValue(le, (why) => { throw new Error(`${s.name}: le ${why}`); }), s.value]);
    } else if (le !== undefined) throw new Error(`${s.name}: le on a non-bucket sample`);
    else if (s.name.endsWith("_sum")) series.sum = s.value;
    else series.count = s.value;
  }
  for (const [key, { buckets, sum, count }] of bySeries) {
    const where = `${family.name}${key}`;
    if (sum === undefined || count === undefined) throw new Error(`${where}: _sum and _count are required`);
    if (buckets.at(-1)?.[0] !== Infinity) throw new Error(`${where}: the last bucket must be le="+Inf"`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i]![0] > buckets[i - 1]![0])) throw new Error(`${where}: bucket bounds must increase`);
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`${where}: buckets must be cumulative`);
    }
    if (buckets.at(-1)![1] !== count) throw new Error(`${where}: the +Inf bucket (${buckets.at(-1)![1]}) is not _count (${count})`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(families: Map<string, MetricFamily>, name: string, labels: Labels = {}): number | undefined {
  const family = families.get(name) ?? [...families.values()].find((f) => belongs(name, f));
  const matches = family?.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) ?? [];
  if (matches.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${matches.length} samples`);
  return matches[0]?.value;
}

/** Scrapes a node's /metrics and reads it strictly; checks the status and content type a scraper expects. */
export async function scrape(url: string): Promise<Map<string, MetricFamily>> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${await res.text()}`);
  const type = res.headers.get("content-type");
  if (type !== "text/plain; version=0.0.4; charset=utf-8") throw new Error(`/metrics content type is ${type}`);
  return parseExposition(await res.text());
}
