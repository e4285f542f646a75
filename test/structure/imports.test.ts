// The layers of src/ point one way (docs/ARCHITECTURE.md, "Layers"): a folder imports only folders
// below it, and no module imports itself back through others — in src/ and in the Python tools alike.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");

/** src/ folders from the top (the command line) down to the kernels' bindings; config is read by all. */
const LAYERS = ["cli", "http", "api", "cluster", "engine", "worker", "media", "pipelines", "models", "runtime", "config"];

const files = (pattern: string, cwd: string) => [...new Bun.Glob(pattern).scanSync(join(ROOT, cwd))].map((f) => join(cwd, f)).sort();

/** Repo-relative paths of the src/ modules a TypeScript file imports (static, dynamic and re-exports). */
function tsImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const specs = [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!);
  return specs.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s))).filter((p) => p.startsWith("src/"));
}

/** Sibling modules a Python tool imports (`import x`, `from x import y`, comma lists). */
function pyImports(file: string, siblings: Set<string>): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const names = [...text.matchAll(/^\s*(?:from\s+(\w+)\s+import|import\s+([\w, ]+))/gm)].flatMap((m) =>
    m[1] ? [m[1]] : m[2]!.split(",").map((n) => n.trim().split(/\s+/)[0]!),
  );
  return [...new Set(names)].filter((n) => siblings.has(n)).map((n) => join(dirname(file), `${n}.py`));
}

/** Every cycle's members (strongly connected components of more than one module, or a self-import). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const srcGraph = new Map(files("src/**/*.ts", ".").map((f) => [f, tsImports(f)]));

describe("imports", () => {
  test("every src/ folder is a known layer", () => {
    const folders = new Set([...srcGraph.keys()].map((f) => f.split("/")[1]!));
    expect([...folders].filter((f) => !LAYERS.includes(f))).toEqual([]);
  });

  test("src/ folders import only the layers below them", () => {
    const upward: string[] = [];
    for (const [file, imports] of srcGraph) {
      const from = LAYERS.indexOf(file.split("/")[1]!);
      for (const target of imports) {
        const to = LAYERS.indexOf(target.split("/")[1]!);
        if (to < from) upward.push(`${file} → ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  test("no src/ module imports itself back", () => {
    expect(cycles(srcGraph)).toEqual([]);
  });

  test("no Python tool imports itself back", () => {
    const py = files("tools/**/*.py", ".");
    const graph = new Map<string, string[]>();
    for (const file of py) {
      const siblings = new Set(py.filter((f) => dirname(f) === dirname(file)).map((f) => f.slice(dirname(f).length + 1, -3)));
      graph.set(file, pyImports(file, siblings));
    }
    expect(cycles(graph)).toEqual([]);
  });

  test("the checker sees a cycle and an upward import", () => {
    expect(cycles(new Map([["a", ["b"]], ["b", ["a"]], ["c", ["a"]]]))).toEqual([["a", "b"]]);
    expect(tsImports("src/http/app.ts").some((p) => p.startsWith("src/api/"))).toBe(true);
  });
});
