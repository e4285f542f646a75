// The device run's payload (tools/gpu-payload.sh) through tools/gpu-check.sh's find_kino, as the two
// device calls see it, on stand-in files: the first call carries only part 00 and must leave no
// executable; the second has every part and must unpack dist/kino and the build/ files the bun steps
// import (which the device has no other way to get: build/ is not carried), newer than the sources so
// that nothing there tries to rebuild them; a developer's own dist/kino and build/ files are left alone.
import { expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const SCRIPTS = ["gpu-check.sh", "gpu-check-steps.sh", "gpu-payload.sh"];

function tree(files: Record<string, Uint8Array | string>): string {
  const dir = mkdtempSync(join(tmpdir(), "kino-gpu-payload-"));
  mkdirSync(join(dir, "tools"));
  for (const s of SCRIPTS) cpSync(join(root, "tools", s), join(dir, "tools", s));
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body, { mode: path.startsWith("dist/") ? 0o755 : 0o644 });
  }
  return dir;
}

function run(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const r = Bun.spawnSync(cmd, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { rc: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

/** One device call: the check in its dry run (the steps stand-ins), its log in a fresh OUT. */
const check = (cwd: string, part: string) =>
  run(["bash", "tools/gpu-check.sh"], cwd, { KINO_GPU_CHECK_DRY_RUN: "1", KINO_GPU_CHECK_PART: part, OUT: mkdtempSync(join(tmpdir(), "kino-gpu-out-")) });

test("the payload's parts unpack only once all are there, into dist/kino and build/, newer than the sources; a developer's own build is kept", () => {
  const random = (n: number) => crypto.getRandomValues(new Uint8Array(n)); // incompressible: several parts
  const kino = new Uint8Array([...new TextEncoder().encode("#!/bin/sh\necho kino\n"), ...random(300_000)]);
  const built = { "build/h264.wasm": random(1000), "build/kino-cpu.wasm": random(1000), "build/kino-cpu-st.wasm": random(1000) };
  const here = tree({ "dist/kino": kino, ...built });
  const hourAgo = new Date(Date.now() - 3600_000);
  for (const path of Object.keys(built)) utimesSync(join(here, path), hourAgo, hourAgo); // built long before the device copies the tree
  const packed = run(["bash", "tools/gpu-payload.sh", "120K", "--no-build"], here);
  expect(packed.rc, packed.out).toBe(0);
  const parts = readdirSync(join(here, ".gpu")).sort();
  expect(parts).toEqual(["kino.xz.00", "kino.xz.01", "kino.xz.02"]);

  // the device: the tree, copied now (its sources newer than the payload's files), and part 00 only in the first call
  const device = tree({ "kernels/cpu/ops.c": "int x;" });
  mkdirSync(join(device, ".gpu"));
  cpSync(join(here, ".gpu/kino.xz.00"), join(device, ".gpu/kino.xz.00"));
  expect(check(device, "python").rc).toBe(0);
  expect(existsSync(join(device, "dist/kino"))).toBe(false);
  expect(existsSync(join(device, "build/h264.wasm"))).toBe(false);

  for (const p of parts.slice(1)) cpSync(join(here, ".gpu", p), join(device, ".gpu", p));
  expect(check(device, "bun").rc).toBe(0);
  expect(readFileSync(join(device, "dist/kino"))).toEqual(Buffer.from(kino));
  expect(statSync(join(device, "dist/kino")).mode & 0o100).toBe(0o100);
  for (const [path, body] of Object.entries(built)) {
    expect(readFileSync(join(device, path))).toEqual(Buffer.from(body));
    // touched after the copy: buildCpuWasm's "newer than every source" holds, so no clang is needed
    expect(statSync(join(device, path)).mtimeMs).toBeGreaterThanOrEqual(statSync(join(device, "kernels/cpu/ops.c")).mtimeMs);
  }
  expect(existsSync(join(device, ".gpu/unpacking"))).toBe(false);

  // a developer's checkout with its own dist/kino and build/ files: none is replaced
  const dev = tree({ "dist/kino": "#!/bin/sh\necho mine\n", "build/kino-cpu.wasm": "mine" });
  cpSync(join(here, ".gpu"), join(dev, ".gpu"), { recursive: true });
  expect(check(dev, "bun").rc).toBe(0);
  expect(readFileSync(join(dev, "dist/kino"), "utf8")).toBe("#!/bin/sh\necho mine\n");
  expect(readFileSync(join(dev, "build/kino-cpu.wasm"), "utf8")).toBe("mine");
}, 60_000);
