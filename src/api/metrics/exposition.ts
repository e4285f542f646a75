// Prometheus' text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): counters, gauges and histograms with
// labels, each family written as one block — `# HELP`, `# TYPE`, then its samples. Small enough to
// own: prom-client would bring a default process-metrics set kino does not want and its own registry
// globals, and the format is a few escaping rules.

export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Record<string, string>;
type Kind = "counter" | "gauge" | "histogram";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A sample value as Prometheus reads it: Go's float syntax, with +Inf, -Inf and NaN spelled out. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/** A label value inside double quotes: backslash, double quote and line feed escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text: backslash and line feed escaped (a double quote stays as it is). */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function labelText(names: readonly string[], values: readonly string[], extra?: [string, string]): string {
  const pairs = names.map((name, i) => `${name}="${escapeLabelValue(values[i]!)}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

/** One metric family: a name, its help, its label names, and one series per label-value combination. */
abstract class Family<Series> {
  protected readonly series = new Map<string, { values: string[]; data: Series }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly kind: Kind,
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`metric name '${name}' is not a Prometheus name`);
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || label === "le") throw new Error(`metric ${name}: '${label}' cannot be a label name`);
    }
  }

  /** A fresh series: zero, or an empty histogram. */
  protected abstract empty(): Series;

  /** Shows the series at zero before anything happened, so a first event reads as a change from 0. */
  init(labels: Labels = {}): void {
    this.at(labels);
  }

  /** The series for these labels (created empty on first use); every label name must be given, and no other. */
  protected at(labels: Labels): Series {
    const given = Object.keys(labels);
    if (given.length !== this.labelNames.length || !this.labelNames.every((n) => typeof labels[n] === "string")) {
      throw new Error(`metric ${this.name} takes labels {${this.labelNames.join(", ")}}, got {${given.join(", ")}}`);
    }
    const values = this.labelNames.map((n) => labels[n]!);
    const key = JSON.stringify(values);
    let entry = this.series.get(key);
    if (!entry) this.series.set(key, (entry = { values, data: this.empty() }));
    return entry.data;
  }

  /** Forgets every series (a gauge set afresh at each scrape, whose label sets come and go). */
  clear(): void {
    this.series.clear();
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.kind}`];
    for (const { values, data } of this.series.values()) lines.push(...this.sampleLines(values, data));
    return lines.join("\n") + "\n";
  }

  protected abstract sampleLines(values: string[], data: Series): string[];
}

export class Counter extends Family<{ value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    if (!name.endsWith("_total")) throw new Error(`counter ${name}: a counter's name ends in _total`);
    super(name, help, labelNames, "counter");
  }

  protected empty() {
    return { value: 0 };
  }

  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} only goes up (got ${by})`);
    this.at(labels).value += by;
  }

  protected sampleLines(values: string[], data: { value: number }): string[] {
    return [`${this.name}${labelText(this.labelNames, values)} ${formatValue(data.value)}`];
  }
}

export class Gauge extends Family<{ value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "gauge");
  }

  protected empty() {
    return { value: 0 };
  }

  set(labels: Labels, value: number): void {
    this.at(labels).value = value;
  }

  protected sampleLines(values: string[], data: { value: number }): string[] {
    return [`${this.name}${labelText(this.labelNames, values)} ${formatValue(data.value)}`];
  }
}

interface HistogramSeries {
  /** Observations ≤ each bound, not yet cumulative. */
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Family<HistogramSeries> {
  readonly buckets: readonly number[];

  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []) {
    super(name, help, labelNames, "histogram");
    if (!buckets.length || buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!))) {
      throw new Error(`histogram ${name}: buckets must be finite and increasing`);
    }
    this.buckets = buckets;
  }

  protected empty(): HistogramSeries {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  observe(labels: Labels, value: number): void {
    const series = this.at(labels);
    const index = this.buckets.findIndex((bound) => value <= bound);
    if (index >= 0) series.counts[index]! += 1;
    series.sum += value;
    series.count += 1;
  }

  protected sampleLines(values: string[], data: HistogramSeries): string[] {
    const lines: string[] = [];
    let cumulative = 0;
    for (const [i, bound] of this.buckets.entries()) {
      cumulative += data.counts[i]!;
      lines.push(`${this.name}_bucket${labelText(this.labelNames, values, ["le", formatValue(bound)])} ${cumulative}`);
    }
    lines.push(`${this.name}_bucket${labelText(this.labelNames, values, ["le", "+Inf"])} ${data.count}`);
    lines.push(`${this.name}_sum${labelText(this.labelNames, values)} ${formatValue(data.sum)}`);
    lines.push(`${this.name}_count${labelText(this.labelNames, values)} ${data.count}`);
    return lines;
  }
}

/** The families one /metrics page shows, in the order they were registered; names are unique. */
export class Registry {
  private readonly families = new Map<string, Family<unknown>>();

  add<F extends Family<any>>(family: F): F {
    if (this.families.has(family.name)) throw new Error(`metric ${family.name} is registered twice`);
    this.families.set(family.name, family as Family<unknown>);
    return family;
  }

  render(): string {
    return [...this.families.values()].map((f) => f.render()).join("");
  }
}
