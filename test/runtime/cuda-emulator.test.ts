// The CPU emulator's own primitives, apart from the kernels that use them (its Hopper primitives: the
// second half). Its warp shuffle (cuda-emulator/collectives.h): __shfl_xor_sync gives every lane the
// value of lane ^ mask, and with a width below 32 a lane whose
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

// The emulator's Hopper primitives (cuda-emulator/hopper-sync.h, hopper-tma.h, hopper-wgmma.h) apart
// from the kernels: a TMA copy lands in the layout the CUDA programming guide gives for the 128-byte
// swizzle (chunk x of row y of a buffer at shared address p at chunk ((y + p/128) % 8) ^ x), zeros
// where the box leaves the tensor, and only once a thread waits on its barrier (before that the
// destination reads as 0xFF bytes); a TMA store writes the box back through the same layout, skips
// what lies outside the tensor on either side, and reads shared memory only at the wait_group that
// retires it; wgmma reads data a thread wrote with cp.async only after that thread's fence.proxy.async;
// misuse of mbarriers, TMA loads and stores, wgmma, named barriers and setmaxnreg stops the emulator with
// the reason.
const hopperBuilt = await buildEmulator("hopper-primitives");
const hopper = "path" in hopperBuilt ? hopperBuilt.path : null;

describe.skipIf(!hopper)("the emulator's Hopper primitives", () => {
  // hopper-primitives.cpp: element (r, c) of the [20, 72] tensor is r·256 + c; the box is 16 × 64 from
  // (row 10, column 16), at a shared address 384 past a 1024-byte boundary.
  const element = (y: number, j: number) => (10 + y < 20 && 16 + j < 72 ? (10 + y) * 256 + 16 + j : 0);
  const image = (mode: string) => new Uint16Array(runHarness(hopper!, mode, [], 0, [mode]).out.buffer);

  test("a TMA copy with the 128-byte swizzle: the programming guide's chunk order, zeros outside the tensor", () => {
    const got = image("tma"), offset = (1024 + 384) / 128 % 8;
    for (let y = 0; y < 16; y++)
      for (let x = 0; x < 8; x++)
        for (let e = 0; e < 8; e++) expect({ y, x, e, v: got[y * 64 + (((y + offset) % 8) ^ x) * 8 + e] }).toEqual({ y, x, e, v: element(y, 8 * x + e) });
  });

  test("without a swizzle the box lands row after row", () => {
    const got = image("plain");
    for (let y = 0; y < 16; y++) for (let j = 0; j < 64; j++) expect({ y, j, v: got[y * 64 + j] }).toEqual({ y, j, v: element(y, j) });
  });

  test("the data arrives when a thread waits on the barrier: before, the destination reads as NaN bytes", () => {
    const got = image("early"), after = got.subarray(0, 1024), before = got.subarray(1024);
    expect(before.every((v) => v === 0xffff)).toBe(true);
    expect(Array.from(after).some((v) => v !== 0xffff)).toBe(true);
    expect(Array.from(after)).toEqual(Array.from(image("tma")));
  });

  // The TMA stores (cuda-emulator/hopper-tma-store.h) write into [20, 72] tensors first filled with 0xBEEF.
  const SENTINEL = 0xbeef, TENSOR = 20 * 72;
  const tensors = (mode: string) => {
    const all = new Uint16Array(runHarness(hopper!, mode, [], 0, [mode]).out.buffer);
    return Array.from({ length: all.length / TENSOR }, (_, i) => all.subarray(i * TENSOR, (i + 1) * TENSOR));
  };
  /** Element (r, c) of a [20, 72] image against `want(r, c)`, every element. */
  const expectImage = (got: Uint16Array, want: (r: number, c: number) => number) => {
    for (let r = 0; r < 20; r++) for (let c = 0; c < 72; c++) expect({ r, c, v: got[r * 72 + c] }).toEqual({ r, c, v: want(r, c) });
  };

  test("a TMA store round trip: a loaded box stored back lands where it came from, nothing written past any edge", () => {
    // the box holds element(y, j) of the load at (10, 16); stored at (10, 16) rows 20.. and columns 72..
    // of the box are cut; stored at (-3, -8) rows and columns before 0 are
    const [b, c] = tensors("store");
    expectImage(b!, (r, col) => (r >= 10 && col >= 16 ? element(r - 10, col - 16) : SENTINEL));
    expectImage(c!, (r, col) => (r < 13 && col < 56 ? element(r + 3, col + 8) : SENTINEL));
  });

  // stage(): element (y, j) of the box is y·64 + j + 1, written where the programming guide's swizzle puts it
  const staged = (r: number, c: number, add = 0) => (r < 16 && c < 64 ? r * 64 + c + 1 + add : SENTINEL);
  test("a TMA store reads the 128-byte swizzle as the programming guide lays it out, and a plain box row after row", () => {
    expectImage(tensors("store-swizzle")[0]!, staged);
    expectImage(tensors("store-plain")[0]!, staged);
  });

  test("bulk async-groups: wait_group.read 1 retires all but the newest group, wait_group 0 the rest", () => {
    const [b1, c1, b2, c2] = tensors("store-groups");
    expectImage(b1!, staged);
    expect(c1!.every((v) => v === SENTINEL)).toBe(true);
    expectImage(b2!, staged);
    expectImage(c2!, (r, c) => staged(r, c, 0x4000));
  });

  test("a store reads its shared memory at the wait that retires it: a later overwrite is what lands", () => {
    expectImage(tensors("store-late")[0]!, (r, c) => (r < 16 && c < 64 ? 0x1111 : SENTINEL));
  });

  test("wgmma may read what cp.async wrote once the writing threads fenced the async proxy after their wait", () => {
    expect(() => runHarness(hopper!, "wgmma-cp-async-fenced", [], 0, ["wgmma-cp-async-fenced"])).not.toThrow();
  });

  const MISUSE: [string, string | RegExp][] = [
    ["arrivals", /mbarrier\.arrive on mbarrier 0x[0-9a-f]+: more arrivals than its count \(1\) in phase 0/],
    ["tx", "phase 0 received 1024 transaction bytes more than its expect_tx announced"],
    ["uninit", "where no mbarrier.init of this block initialised an mbarrier"],
    ["deadlock", /deadlock in block 0,0,0: every live thread waits and none can go on; thread 0: mbarrier 0x[0-9a-f]+ parity 0/],
    ["unfenced", "whose mbarrier.init no fence.mbarrier_init made visible to TMA"],
    ["wgmma-fence", "wgmma.mma_async without a wgmma.fence before it"],
    ["wgmma-exit", "thread 0 exits with wgmma operations it never waited for"],
    ["wgmma-exited", "a wgmma collective in a warpgroup where some threads have exited"],
    ["descriptor", "lies in row 2 of a 128-byte swizzle pattern, but the base offset is 0"],
    ["named", "the block exits with named barrier 1 half-arrived (64 of 128)"],
    ["maxnreg", "setmaxnreg not executed alike by every thread of warpgroup 0"],
    ["wgmma-cp-async", /wgmma reads shared address 0x[0-9a-f]+, which thread \d+ wrote \(cp\.async or st\.shared\) with no fence\.proxy\.async\.shared::cta of that thread after it/],
    ["store-unfenced", /which thread \d+ wrote with st\.shared and no fence\.proxy\.async\.shared::cta of that thread followed/],
    ["store-fenced-elsewhere", "which thread 5 wrote with st.shared and no fence.proxy.async.shared::cta of that thread followed"],
    ["store-reuse", "which a cp.async.bulk.tensor store of thread 0 still reads: no cp.async.bulk.wait_group.read of that thread retired it"],
    ["store-exit", "thread 0 exits with TMA stores it never waited for (0 uncommitted, 1 bulk async-groups)"],
    ["store-misaligned", /cp\.async\.bulk\.tensor store at shared address 0x[0-9a-f]+: not 128-byte aligned/],
  ];
  for (const [mode, message] of MISUSE) {
    test(`misuse "${mode}" stops the emulator with the reason`, () => {
      expect(() => runHarness(hopper!, mode, [], 0, [mode])).toThrow(message);
    });
  }
});
