// npm run bench:startup — the single executable: its size, and the time from exec to the first
// /health 200 (model loaded in its worker), run from an empty folder like a user would.
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = 5;
const binary = join(import.meta.dir, "../../dist/kino");
const dir = mkdtempSync(join(tmpdir(), "kino-startup-"));
copyFileSync(binary, join(dir, "kino"));

async function timeToHealthy(port: number): Promise<number> {
  const started = performance.now();
  const proc = Bun.spawn([join(dir, "kino"), "serve", "--server.port", String(port), "--server.host", "127.0.0.1"], { cwd: dir, stdout: "ignore", stderr: "ignore" });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) return performance.now() - started;
      if (performance.now() - started > 60_000) throw new Error("not healthy after 60 s");
      await Bun.sleep(5);
    }
  } finally {
    proc.kill();
    await proc.exited;
  }
}

const times: number[] = [];
for (let i = 0; i < RUNS; i++) times.push(await timeToHealthy(20000 + Math.floor(Math.random() * 5000)));
times.sort((a, b) => a - b);
console.log(`dist/kino: ${(statSync(binary).size / 2 ** 20).toFixed(1)} MiB`);
console.log(`exec → /health 200: median ${times[RUNS >> 1]!.toFixed(0)} ms, min ${times[0]!.toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms (${RUNS} runs)`);
rmSync(dir, { recursive: true, force: true });
