// A kernel fault loses the CUDA context for good (every later call fails the same way), and the
// backend says so with DeviceLostError, so that the worker can replace its process. Two halves, both
// without a GPU: the library's own list of the errors that lose a context (the built
// libkino_cuda.so, held to what the installed CUDA headers document), and the backend's reading of a
// failed call (src/runtime/backends/cuda.ts over a stand-in library whose GPU faults on demand).
import { describe, expect, test } from "bun:test";
import { dlopen } from "bun:ffi";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CUDA_SYMBOLS } from "../../src/runtime/backends/cuda.ts";
import { DeviceLostError, deviceLostIn } from "../../src/runtime/device-lost.ts";
import { buildCudaLib, findNvcc } from "../../tools/build/cuda.ts";
import { faultingCuda, thrownBy } from "../fixtures/faulting-cuda.ts";

const root = resolve(import.meta.dir, "../..");
const nvcc = findNvcc();

/** The cudaError codes whose documentation in driver_types.h says the process must be relaunched. */
function documentedUnrecoverable(): Map<number, string> {
  const header = join(dirname(realpathSync(nvcc!)), "../include/driver_types.h");
  const text = readFileSync(existsSync(header) ? header : "/usr/local/cuda/include/driver_types.h", "utf8");
  const start = text.indexOf("enum __device_builtin__ cudaError");
  const body = text.slice(start, text.indexOf("};", start));
  const found = new Map<number, string>();
  for (const m of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(cudaError\w+)\s*=\s*(\d+)/g)) {
    if (/terminated and\s+relaunched/.test(m[1]!.replace(/\s*\*\s*/g, " "))) found.set(Number(m[3]), m[2]!);
  }
  return found;
}

describe.skipIf(!nvcc)("the library's errors that lose a context", () => {
  test("exactly those the CUDA headers document as needing a new process, and uncorrectable ECC errors", async () => {
    expect(await buildCudaLib()).toBe("build/libkino_cuda.so");
    const lib = dlopen(join(root, "build/libkino_cuda.so"), CUDA_SYMBOLS);
    try {
      const documented = documentedUnrecoverable();
      // the parse found the enum's documentation, not nothing: the crashed-kernel errors are there
      for (const code of [700, 710, 716, 719]) expect(documented.has(code)).toBe(true);
      const lost: number[] = [];
      for (let code = 0; code < 1100; code++) if (lib.symbols.kc_error_loses_context(code)) lost.push(code);
      // 214 is not described so in the header, but the driver's error containment ends the application
      // that hit an uncorrectable ECC error (NVIDIA's GPU memory error management)
      expect(lost).toEqual([214, ...documented.keys()].sort((a, b) => a - b));
      // the library's own codes (common.cuh KcError) and the failures a process survives never lose it
      for (const code of [0, 2, 600, 701, 10001, 10002, 10003]) expect(lib.symbols.kc_error_loses_context(code)).toBe(0);
      for (const [code, name] of documented) expect(String(lib.symbols.kc_error_name(code))).toBe(name);
      expect(lib.symbols.kc_context_lost(null)).toBe(0);
    } finally {
      lib.close();
    }
  }, 600_000);
});

describe("the CUDA backend on a context a kernel fault has lost", () => {
  test("a failed call on a usable context is a plain error, and the backend goes on", async () => {
    const gpu = faultingCuda();
    const t = gpu.backend.alloc([4]);
    gpu.failNext();
    const thrown = thrownBy(() => gpu.backend.fill(t, 1));
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(DeviceLostError);
    expect((thrown as Error).message).toBe("cuda fill: kc_fill: invalid argument (error 10001)");
    gpu.backend.fill(t, 1);
    expect(await gpu.backend.download(t)).toHaveLength(4);
  });

  test("once lost, every failing call throws DeviceLostError naming the CUDA error", async () => {
    const gpu = faultingCuda();
    const t = gpu.backend.alloc([4]);
    gpu.fault();
    const thrown = thrownBy(() => gpu.backend.fill(t, 1));
    expect(thrown).toBeInstanceOf(DeviceLostError);
    const lost = thrown as DeviceLostError;
    expect({ name: lost.errorName, code: lost.code }).toEqual({ name: "cudaErrorIllegalAddress", code: 700 });
    expect(lost.message).toBe(
      "The CUDA device context is lost (cudaErrorIllegalAddress, error 700): cuda fill: kc_fill: an illegal memory access was encountered (error 700)",
    );
    // allocations, waits and copies alike: nothing on this context works again
    expect(() => gpu.backend.alloc([4])).toThrow(DeviceLostError);
    await expect(gpu.backend.sync()).rejects.toThrow(DeviceLostError);
    await expect(gpu.backend.download(t)).rejects.toThrow("The CUDA device context is lost (cudaErrorIllegalAddress, error 700): cuda download: kc_download");
  });

  test("deviceLostIn finds the lost context behind an error that wraps it, and nothing in other errors", () => {
    const lost = new DeviceLostError("cudaErrorIllegalAddress", 700, "lost");
    expect(deviceLostIn(lost)).toBe(lost);
    expect(deviceLostIn(new Error("decoding failed", { cause: new Error("step 3", { cause: lost }) }))).toBe(lost);
    expect(deviceLostIn(new Error("out of memory"))).toBeNull();
    expect(deviceLostIn("a string")).toBeNull();
  });
});
