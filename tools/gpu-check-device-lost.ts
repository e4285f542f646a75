// A step of tools/gpu-check.sh: what a kernel fault does to kino's CUDA backend on a real GPU. The
// backend opens and works; a kernel of tools/gpu-check-fault.cu (built by the step, in this process,
// on the same context) writes to an illegal address; the backend's next call must throw
// DeviceLostError naming the error, as src/runtime/device-lost.ts says and the worker relies on to be
// replaced (test/engine/device-lost.test.ts checks that part with a stand-in library).
//
//   bun tools/gpu-check-device-lost.ts FAULT_LIBRARY
// Prints "PASS …" and exits 0, or "FAIL …" and exits 1; without a GPU says "skipped" and exits 77.
import { dlopen, FFIType } from "bun:ffi";
import { openBackend } from "../src/runtime/device.ts";
import { DeviceLostError } from "../src/runtime/device-lost.ts";

const faultLibrary = process.argv[2];
if (!faultLibrary) {
  console.error("usage: bun tools/gpu-check-device-lost.ts FAULT_LIBRARY");
  process.exit(2);
}
const backend = await openBackend("cuda", { log: () => {} }).catch((e: Error) => {
  console.log(`device lost: skipped, the CUDA backend did not open (${e.message})`);
  process.exit(77);
});
const t = backend.alloc([1024]);
backend.fill(t, 1);
const before = await backend.download(t);
console.log(`before the fault: a fill and its readback work (${before.length} values, first ${before[0]})`);

const fault = dlopen(faultLibrary, { kino_check_fault_illegal_address: { args: [], returns: FFIType.i32 } });
console.log(`the fault kernel's synchronize returned ${fault.symbols.kino_check_fault_illegal_address()}`);

let thrown: unknown = null;
try {
  backend.fill(t, 2);
  await backend.download(t);
} catch (err) {
  thrown = err;
}
if (thrown instanceof DeviceLostError) {
  console.log(`PASS the backend's next call threw DeviceLostError (${thrown.errorName}, ${thrown.code}): ${thrown.message}`);
  process.exit(0);
}
console.log(`FAIL the backend's next call ${thrown ? `threw ${(thrown as Error).name}: ${(thrown as Error).message}` : "succeeded"}`);
process.exit(1);
