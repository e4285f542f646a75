// A fresh `npm ci` prints nothing a user must wonder about: every locked package runs on the Node.js
// version the README asks for, and every install script is approved in package.json's allowScripts.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), "utf8"));
const lock: { packages: Record<string, { version?: string; engines?: { node?: string }; hasInstallScript?: boolean }> } = readJson("package-lock.json");
const locked = Object.entries(lock.packages).filter(([path]) => path.startsWith("node_modules/"));

test("every locked package's engines allow the README's Node.js", () => {
  const major = /with Node\.js (\d+)/.exec(readFileSync(join(root, "README.md"), "utf8"))?.[1];
  expect(major).toBeDefined();
  const refused = locked
    .filter(([, p]) => p.engines?.node && !Bun.semver.satisfies(`${major}.0.0`, p.engines.node))
    .map(([path, p]) => `${path.slice("node_modules/".length)}@${p.version} needs node ${p.engines!.node}`);
  expect(refused).toEqual([]);
});

test("every install script is approved in allowScripts", () => {
  const allowed: Record<string, boolean> = readJson("package.json").allowScripts ?? {};
  const name = (path: string) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
  const unreviewed = locked
    .filter(([path, p]) => p.hasInstallScript && !allowed[name(path)] && !allowed[`${name(path)}@${p.version}`])
    .map(([path]) => name(path));
  expect(unreviewed).toEqual([]);
});
