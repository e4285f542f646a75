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
// misuse of mbarriers, TMA loads and stores, wgmma, named barriers, setmaxnreg and cp.async stops the
// emulator with the reason, and a launch the device would refuse for its dynamic shared memory fails.
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

  test("setmaxnreg that ends within the launch's registers runs, and so does a launch with the shared memory it opted into", () => {
    for (const mode of ["maxnreg-fits", "smem-opted-in"]) expect(() => runHarness(hopper!, mode, [], 0, [mode])).not.toThrow();
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
    ["named-warp", "bar.sync 1 released with 16 arrivals from warp 0: bar.sync and bar.arrive are .aligned"],
    ["maxnreg-range", "setmaxnreg.dec 20: the count must be a multiple of 8 in 24..256"],
    ["maxnreg-raise", "setmaxnreg.dec 256 in a warp that holds 248 registers per thread: .dec must not raise the count"],
    ["maxnreg-lower", "setmaxnreg.inc 200 in a warp that holds 248 registers per thread: .inc must not lower the count"],
    // 65536 registers would fit the multiprocessor, but the block holds 168 × 384 = 64512
    ["maxnreg-pool", "the warpgroups end with 65536 registers, more than the 64512 (168 per thread × 384 threads) the block was launched with"],
    ["cp-async-misaligned", /cp\.async of 16 bytes from global address 0x[0-9a-f]+: not 16-byte aligned/],
    ["smem-default", "more than the 48 KiB default and the 0 the kernel opted into with cudaFuncSetAttribute: the device refuses it"],
    ["smem-optin", "cudaFuncSetAttribute(MaxDynamicSharedMemorySize, 232448): more than the 232192 bytes a block may have"],
  ];
  for (const [mode, message] of MISUSE) {
    test(`misuse "${mode}" stops the emulator with the reason`, () => {
      expect(() => runHarness(hopper!, mode, [], 0, [mode])).toThrow(message);
    });
  }
});

// The emulated cuTensorMapEncodeTiled (cuda-emulator/host-runtime.h) against the driver API's documented
// requirements (cuda.h, cuTensorMapEncodeTiled): CUDA_ERROR_INVALID_VALUE (1) exactly where one is
// broken, CUDA_SUCCESS (0) at the edges it allows. Every Hopper kernel's tensor maps go through it in the
// emulated cases, so those cases show the kernels' maps are ones the driver accepts.
const mapBuilt = await buildEmulator("tensor-map");
const mapHarness = "path" in mapBuilt ? mapBuilt.path : null;

describe.skipIf(!mapHarness)("the emulated cuTensorMapEncodeTiled", () => {
  const INVALID = 1;
  /** Each case of tensor-map.cpp: the CUresult the driver gives, and the rule. */
  const CASES: [string, number, string][] = [
    ["valid", 0, "a [20, 72] bf16 tensor, 144-byte rows, 64 × 16 boxes, 128-byte swizzle"],
    ["dim-2^32", 0, "globalDim up to 2^32"],
    ["box-256", 0, "boxDim up to 256"],
    ["rank-5", 0, "tensorRank up to 5"],
    ["plain-16-byte-rows", 0, "without a swizzle, box rows of any multiple of 16 bytes"],
    ["f32-128-byte-rows", 0, "f32 with the 128-byte swizzle: 32 elements a row"],
    ["map-misaligned", INVALID, "tensorMap aligned to 64 bytes"],
    ["rank-0", INVALID, "tensorRank non-zero"],
    ["rank-6", INVALID, "tensorRank at most 5"],
    ["address-8", INVALID, "globalAddress aligned to 16 bytes"],
    ["dim-0", INVALID, "globalDim non-zero"],
    ["dim-2^32+1", INVALID, "globalDim at most 2^32"],
    ["stride-8", INVALID, "globalStrides multiples of 16"],
    ["stride-2^40", INVALID, "globalStrides below 2^40"],
    ["box-0", INVALID, "boxDim non-zero"],
    ["box-257", INVALID, "boxDim at most 256"],
    ["box-row-8-bytes", INVALID, "boxDim[0] × element size a multiple of 16 bytes"],
    ["element-stride-0", INVALID, "elementStrides non-zero"],
    ["element-stride-9", INVALID, "elementStrides at most 8"],
    ["swizzle-256-byte-rows", INVALID, "with the 128-byte swizzle, box rows of at most 128 bytes"],
    ["f32-swizzle-256-byte-rows", INVALID, "the same for f32"],
  ];
  test("accepts and refuses what the driver does", () => {
    const lines = runHarness(mapHarness!, "tensor-map", [], 0, []).lines;
    const got = Object.fromEntries(lines.map((l) => l.split(" ")).map(([name, rc]) => [name!, Number(rc)]));
    for (const [name, rc, rule] of CASES) expect({ name, rule, rc: got[name] }).toEqual({ name, rule, rc });
    expect(Object.keys(got).sort()).toEqual(CASES.map(([name]) => name).sort());
  });
});
