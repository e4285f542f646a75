// kino's Prometheus writer against the tests' strict reader: escaping, histogram layout, and the
// reader itself refusing what a scraper would refuse (so the server tests' parse can fail).
import { describe, expect, test } from "bun:test";
import { Counter, Gauge, Histogram, Registry } from "../../src/api/metrics/exposition.ts";
import { parseExposition, sampleValue } from "../helpers/prometheus.ts";

describe("the exposition writer", () => {
  test("label values and help text are escaped and read back exactly", () => {
    const registry = new Registry();
    const gauge = registry.add(new Gauge("kino_test_info", 'help with "quotes", a \\ backslash\nand a second line', ["name"]));
    const awkward = 'a "quoted" C:\\path\nnext line, {braces} = and, commas';
    gauge.set({ name: awkward }, 1.5);
    gauge.set({ name: "" }, -2);
    const text = registry.render();
    expect(text).toContain('kino_test_info{name="a \\"quoted\\" C:\\\\path\\nnext line, {braces} = and, commas"} 1.5\n');
    const families = parseExposition(text);
    expect(families.get("kino_test_info")!.help).toBe('help with "quotes", a \\ backslash\nand a second line');
    expect(sampleValue(families, "kino_test_info", { name: awkward })).toBe(1.5);
    expect(sampleValue(families, "kino_test_info", { name: "" })).toBe(-2);
  });

  test("a histogram has cumulative buckets, +Inf equal to _count, and _sum", () => {
    const registry = new Registry();
    const histogram = registry.add(new Histogram("kino_test_seconds", "test", [0.1, 1, 2.5], ["route"]));
    for (const v of [0.05, 0.1, 0.5, 3, 100]) histogram.observe({ route: "/a" }, v);
    const text = registry.render();
    expect(text).toBe(
      [
        "# HELP kino_test_seconds test",
        "# TYPE kino_test_seconds histogram",
        'kino_test_seconds_bucket{route="/a",le="0.1"} 2',
        'kino_test_seconds_bucket{route="/a",le="1"} 3',
        'kino_test_seconds_bucket{route="/a",le="2.5"} 3',
        'kino_test_seconds_bucket{route="/a",le="+Inf"} 5',
        'kino_test_seconds_sum{route="/a"} 103.65',
        'kino_test_seconds_count{route="/a"} 5',
        "",
      ].join("\n"),
    );
    const families = parseExposition(text);
    expect(sampleValue(families, "kino_test_seconds_count", { route: "/a" })).toBe(5);
  });

  test("families are written whole, in registration order, with a series at zero once initialized", () => {
    const registry = new Registry();
    const counter = registry.add(new Counter("kino_test_total", "count", ["status"]));
    const gauge = registry.add(new Gauge("kino_test_up", "up"));
    counter.inc({ status: "ok" }, 0);
    gauge.set({}, 1);
    counter.inc({ status: "bad" });
    counter.inc({ status: "ok" }, 2);
    const families = parseExposition(registry.render());
    expect([...families.keys()]).toEqual(["kino_test_total", "kino_test_up"]);
    expect(sampleValue(families, "kino_test_total", { status: "ok" })).toBe(2);
    expect(sampleValue(families, "kino_test_total", { status: "bad" })).toBe(1);
  });

  test("misuse is refused at once, naming the metric", () => {
    expect(() => new Counter("kino_requests", "x")).toThrow(/kino_requests: a counter's name ends in _total/);
    expect(() => new Gauge("kino-bad", "x")).toThrow(/not a Prometheus name/);
    expect(() => new Histogram("kino_h", "x", [1, 0.5])).toThrow(/increasing/);
    expect(() => new Histogram("kino_h", "x", [1], ["le"])).toThrow(/cannot be a label name/);
    expect(() => new Counter("kino_x_total", "x", ["a"]).inc({ b: "1" })).toThrow(/takes labels \{a\}, got \{b\}/);
    expect(() => new Counter("kino_x_total", "x").inc({}, -1)).toThrow(/only goes up/);
    const registry = new Registry();
    registry.add(new Gauge("kino_same", "x"));
    expect(() => registry.add(new Gauge("kino_same", "y"))).toThrow(/registered twice/);
  });
});

describe("the tests' reader is strict", () => {
  const good = "# HELP a_total a\n# TYPE a_total counter\na_total 1\n";
  test.each([
    ["no final line feed", good.slice(0, -1), /end with a line feed/],
    ["a sample before its TYPE", "a_total 1\n", /outside the group/],
    ["a family split in two groups", `${good}# TYPE b gauge\nb 1\n# HELP a_total again\n`, /already written as its own group/],
    ["an unknown escape", '# TYPE g gauge\ng{l="\\t"} 1\n', /bad escape/],
    ["an unquoted label value", "# TYPE g gauge\ng{l=1} 1\n", /bad label/],
    ["a value that is not a float", "# TYPE g gauge\ng one\n", /not a float/],
    ["a duplicate series", "# TYPE g gauge\ng 1\ng 2\n", /duplicate series/],
    ["a negative counter", "# TYPE a_total counter\na_total -1\n", /a counter is -1/],
    ["a histogram without +Inf", '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', /le="\+Inf"/],
    ["a histogram whose +Inf is not _count", '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', /is not _count/],
    ["buckets that go down", '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', /cumulative/],
  ])("refuses %s", (_, text, message) => {
    expect(() => parseExposition(text)).toThrow(message);
  });
});
