// The CPU emulator's own warp shuffle (cuda-emulator/emulator.h), apart from the kernels that use it:
// __shfl_xor_sync gives every lane the value of lane ^ mask, and with a width below 32 a lane whose
// source lies in a later group of `width` lanes keeps its own value (the CUDA programming guide's
// rule); a shuffle in a warp where some threads have exited, or with a mask that leaves lanes out,
// stops the emulator with the reason instead of inventing a value.
import { describe, expect, test } from "bun:test";
import { buildEmulator, runHarness } from "./cuda-emulator/emulated-backend.ts";

const built = await buildEmulator("primitives");
const harness = "path" in built ? built.path : null;
if (!harness) console.log(`cuda-emulator.test.ts: skipped, ${"skip" in built ? built.skip : ""}`);

describe.skipIf(!harness)("the emulator's __shfl_xor_sync", () => {
  test("every width and lane mask: lane ^ mask, or the lane itself when that lies in a later group", () => {
    const got = new Int32Array(runHarness(harness!, "shuffles", [], 0, ["xor"]).out.buffer);
    let checked = 0;
    for (let w = 0; w < 6; w++) {
      const width = 1 << w;
      for (let mask = 0; mask < 32; mask++) {
        for (let lane = 0; lane < 32; lane++) {
          const src = lane ^ mask;
          const want = Math.floor(src / width) > Math.floor(lane / width) ? lane : src;
          expect({ width, mask, lane, got: got[(w * 32 + mask) * 32 + lane] }).toEqual({ width, mask, lane, got: want });
          checked++;
        }
      }
    }
    expect(checked).toBe(6 * 32 * 32);
  });

  test("a warp with exited threads, or a partial mask, stops the emulator with the reason", () => {
    expect(() => runHarness(harness!, "shuffle", [], 0, ["exited"])).toThrow("__shfl_xor_sync in a warp where some threads have exited");
    expect(() => runHarness(harness!, "shuffle", [], 0, ["mask"])).toThrow("__shfl_xor_sync with mask 0000ffff: only full-warp masks are emulated");
  });
});
