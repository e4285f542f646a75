// Backend selection for generator.engine.device: one log line says which backend runs and why.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cudaUnavailableReason, openBackend } from "../../src/runtime/device.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();

describe("openBackend", () => {
  test("cpu opens the WebAssembly backend and says so", async () => {
    const lines: string[] = [];
    const be = await openBackend("cpu", { threads: 1, log: (l) => lines.push(l) });
    expect(be.name).toBe("wasm");
    expect(lines).toEqual(["runtime: using WebAssembly SIMD128, 1 thread (device: cpu)"]);
    be.dispose();
  });
  test("auto takes CUDA when a device answers, else WebAssembly with the reason", async () => {
    const lines: string[] = [];
    const be = await openBackend("auto", { log: (l) => lines.push(l) });
    expect(lines.length).toBe(1);
    if (be.name === "cuda") expect(lines[0]).toContain("a CUDA device answered");
    else expect(lines[0]).toMatch(/^runtime: (no NVIDIA driver|NVIDIA driver .+|CUDA unavailable \(.+\)): using WebAssembly SIMD128, \d threads? \(device: auto\)$/);
    be.dispose();
  });
  test("cuda either opens or fails with the reason, never falls back", async () => {
    const lines: string[] = [];
    try {
      const be = await openBackend("cuda", { log: (l) => lines.push(l) });
      expect(be.name).toBe("cuda");
      be.dispose();
    } catch (e) {
      expect((e as Error).message).toMatch(/^generator\.engine\.device is cuda, but CUDA is unavailable: .+/);
      expect(lines).toEqual([]);
    }
  });
  test("CUDA error 35 says whether a driver is there at all", () => {
    const error35 = "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (error 35)";
    const dir = mkdtempSync(join(tmpdir(), "kino-driver-"));
    try {
      expect(cudaUnavailableReason(error35, join(dir, "absent"))).toBe("no NVIDIA driver");
      const version = join(dir, "version");
      writeFileSync(version, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Tue Oct 26 23:33:59 UTC 2021\n");
      expect(cudaUnavailableReason(error35, version)).toBe("NVIDIA driver 470.82.01 is older than this build's CUDA runtime needs");
      expect(cudaUnavailableReason("CUDA library unavailable: not built")).toBe("CUDA unavailable (CUDA library unavailable: not built)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("auto under a multi-GPU config takes CUDA or fails with the config's reason, never WebAssembly", async () => {
    const lines: string[] = [];
    try {
      const be = await openBackend("auto", { requireCuda: "generator.engine.num_gpus is 2", log: (l) => lines.push(l) });
      expect(be.name).toBe("cuda");
      be.dispose();
    } catch (e) {
      expect((e as Error).message).toMatch(/^generator\.engine\.num_gpus is 2, so this worker needs a CUDA GPU, but .+/);
      expect(lines).toEqual([]);
    }
  });
  test("no device under CUDA_VISIBLE_DEVICES names the index it was pinned to", () => {
    const error100 = "no device: cudaGetDeviceCount: no CUDA-capable device is detected (error 100)";
    expect(cudaUnavailableReason(error100, undefined, "3")).toBe("no GPU answers as CUDA_VISIBLE_DEVICES=3 (does this machine have that GPU? nvidia-smi -L lists them)");
    expect(cudaUnavailableReason(error100, undefined, undefined)).toBe(`CUDA unavailable (${error100})`);
  });
  test("an unknown setting is an error", async () => {
    await expect(openBackend("tpu" as never)).rejects.toThrow('unknown device setting "tpu"');
  });
});
