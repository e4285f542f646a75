// generator.engine.num_gpus N runs one worker per GPU, each pinned to its device by the
// CUDA_VISIBLE_DEVICES it is spawned with. Observed from outside, as an operator would: GET /health's
// worker list, the startup log, and each worker process's environment in /proc — on a CPU machine with
// the tests' pipeline, which needs no GPU. That CUDA then really keeps each worker on its one GPU is
// checked on a GPU machine by tools/gpu-check.sh ("multi-GPU").
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer, type ServerProcess } from "../helpers/server-process.ts";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
const started: { server: ServerProcess; dir: string }[] = [];

afterEach(async () => {
  for (const { server, dir } of started.splice(0)) {
    server.proc.kill("SIGTERM");
    await server.proc.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

/** `kino serve` on the tests' pipeline with these engine settings; CUDA_VISIBLE_DEVICES unset unless given. */
async function serve(args: string[], cudaVisibleDevices?: string): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), "kino-gpus-"));
  const server = await spawnServer(
    dir,
    cudaVisibleDevices === undefined ? { args, unsetEnv: ["CUDA_VISIBLE_DEVICES"] } : { args, env: { CUDA_VISIBLE_DEVICES: cudaVisibleDevices } },
  );
  started.push({ server, dir });
  return server;
}

async function health(url: string): Promise<any> {
  const res = await fetch(`${url}/health`);
  expect(res.status).toBe(200);
  return res.json();
}

/** CUDA_VISIBLE_DEVICES as the kernel holds it for a running process (undefined when unset). */
function environOf(pid: number): string | undefined {
  const entries = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
  return entries.find((e) => e.startsWith("CUDA_VISIBLE_DEVICES="))?.slice("CUDA_VISIBLE_DEVICES=".length);
}

test("num_gpus 3: three worker processes, pinned to GPUs 0, 1, 2 — in /health, the log, and each process's environment", async () => {
  const server = await serve(["--generator.engine.num_gpus", "3", "--generator.engine.num_workers", "3"]);
  const { status, workers } = await health(server.url);
  expect(status).toBe("ok");
  expect(workers.map((w: any) => [w.index, w.gpu, w.state])).toEqual([[0, 0, "ready"], [1, 1, "ready"], [2, 2, "ready"]]);
  // What each worker found in its own environment, and the same read by the kernel from outside it.
  expect(workers.map((w: any) => w.device.cuda_visible_devices)).toEqual(["0", "1", "2"]);
  expect(workers.map((w: any) => environOf(w.pid))).toEqual(["0", "1", "2"]);
  expect(new Set(workers.map((w: any) => w.pid)).size).toBe(3);
  for (const w of workers) {
    expect(w.device).toEqual({ backend: "custom pipeline module", cuda_visible_devices: String(w.gpu), pci_bus_id: null });
    expect(server.output()).toContain(`kino: worker ${w.index} (pid ${w.pid}, CUDA_VISIBLE_DEVICES=${w.gpu}) runs on custom pipeline module`);
  }
});

test("a worker restarted after a crash comes back on its own GPU", async () => {
  const server = await serve(["--generator.engine.num_gpus", "2"]);
  const before = (await health(server.url)).workers;
  expect(before.map((w: any) => w.device.cuda_visible_devices)).toEqual(["0", "1"]); // num_workers 1 is raised to one per GPU
  process.kill(before[1].pid, "SIGKILL");
  let after: any[] = [];
  for (const deadline = Date.now() + 15000; Date.now() < deadline; await Bun.sleep(50)) {
    const res = await fetch(`${server.url}/health`);
    if (res.status !== 200) continue;
    after = (await res.json()).workers;
    if (after[1].pid !== before[1].pid) break;
  }
  expect(after[1].pid).not.toBe(before[1].pid);
  expect(after[1]).toMatchObject({ index: 1, gpu: 1, state: "ready", device: { cuda_visible_devices: "1" } });
  expect(environOf(after[1].pid)).toBe("1");
  expect(after[0].pid).toBe(before[0].pid);
});

test("the server's own CUDA_VISIBLE_DEVICES is the list of GPUs to use; two workers per GPU alternate over them", async () => {
  const server = await serve(["--generator.engine.num_gpus", "3", "--generator.engine.num_workers", "6"], "5,7,9");
  const { workers } = await health(server.url);
  expect(workers.map((w: any) => w.gpu)).toEqual([0, 1, 2, 0, 1, 2]);
  expect(workers.map((w: any) => w.device.cuda_visible_devices)).toEqual(["5", "7", "9", "5", "7", "9"]);
  expect(workers.map((w: any) => environOf(w.pid))).toEqual(["5", "7", "9", "5", "7", "9"]);
});

test("one GPU: the worker inherits the server's CUDA_VISIBLE_DEVICES, or gets GPU 0", async () => {
  const inherited = await serve([], "3");
  expect((await health(inherited.url)).workers).toMatchObject([{ index: 0, gpu: 0, device: { cuda_visible_devices: "3" } }]);
  const plain = await serve([]);
  expect((await health(plain.url)).workers).toMatchObject([{ index: 0, gpu: 0, device: { cuda_visible_devices: "0" } }]);
});

test("device cpu: no GPU is assigned and the environment is left alone", async () => {
  const server = await serve(["--generator.engine.device", "cpu", "--generator.engine.num_workers", "2"]);
  const { workers } = await health(server.url);
  expect(workers.map((w: any) => [w.gpu, w.device.cuda_visible_devices])).toEqual([[null, null], [null, null]]);
  expect(server.output()).toMatch(/kino: worker 1 \(pid \d+\) runs on custom pipeline module/);
});

/** `kino serve` that must refuse to start: its exit code and what it printed. */
function refused(args: string[], env: Record<string, string> = {}): { code: number | null; stderr: string } {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "CUDA_VISIBLE_DEVICES")) as Record<string, string>;
  const proc = Bun.spawnSync([process.execPath, MAIN, "serve", "--server.port", "0", "--server.host", "127.0.0.1", ...args], { env: { ...clean, ...env } });
  return { code: proc.exitCode, stderr: proc.stderr.toString() };
}

test("combinations that cannot work are refused at start, saying why", () => {
  const cpu = refused(["--generator.engine.device", "cpu", "--generator.engine.num_gpus", "2"]);
  expect(cpu.code).toBe(2);
  expect(cpu.stderr).toContain("generator.engine.num_gpus: is 2, but generator.engine.device is cpu: the CPU backend uses no GPU");
  const uneven = refused(["--generator.engine.num_gpus", "2", "--generator.engine.num_workers", "3"]);
  expect(uneven.code).toBe(2);
  expect(uneven.stderr).toContain("generator.engine.num_workers: is 3, not a multiple of generator.engine.num_gpus (2)");
  const hidden = refused(["--generator.engine.num_gpus", "2"], { CUDA_VISIBLE_DEVICES: "4" });
  expect(hidden.code).toBe(1);
  expect(hidden.stderr).toContain("kino: generator.engine.num_gpus is 2, but this server's CUDA_VISIBLE_DEVICES=4 lets it see 1 GPU: lower num_gpus or list 2 GPUs there");
});

/** GPUs `nvidia-smi -L` lists here (0 without a driver). */
function gpusHere(): number {
  try {
    const out = Bun.spawnSync(["nvidia-smi", "-L"]).stdout.toString();
    return out.split("\n").filter((line) => line.startsWith("GPU ")).length;
  } catch {
    return 0;
  }
}

// With two GPUs this config starts and serves (tools/gpu-check.sh checks that case); anywhere else it must refuse.
test.skipIf(gpusHere() >= 2)("num_gpus 2 on the real model needs CUDA in every worker: without it the start fails naming the worker, never a quiet CPU fallback", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kino-gpus-"));
  try {
    const result = refused(["--generator.engine.num_gpus", "2", "--server.output_dir", dir]);
    expect(result.code).toBe(1);
    // No driver, an old one, no library, or (one GPU) worker 1's GPU 1 that is not there.
    const reason = /(no NVIDIA driver|NVIDIA driver \S+ is older than .+|CUDA unavailable \(.+\)|no GPU answers as CUDA_VISIBLE_DEVICES=1 \(.+\))/.source;
    expect(result.stderr).toMatch(
      new RegExp(`kino: worker [01] of 2 \\(GPU [01], CUDA_VISIBLE_DEVICES=[01]\\) could not load the model: generator\\.engine\\.num_gpus is 2, so this worker needs a CUDA GPU, but ${reason}\n`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

test("serve --help says how num_gpus and num_workers go together", () => {
  const help = Bun.spawnSync([process.execPath, MAIN, "serve", "--help"]).stdout.toString();
  expect(help).toMatch(/--generator\.engine\.num_gpus +1 +GPUs to use: one worker each, pinned by CUDA_VISIBLE_DEVICES/);
  expect(help).toContain("GPUs: --generator.engine.num_gpus N starts one worker process per GPU, worker i pinned to GPU i mod N");
  expect(help).toContain("num_gpus > 1 is refused with device cpu");
});
