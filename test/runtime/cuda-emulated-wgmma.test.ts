// The Hopper (sm_90a) GEMM and attention (kernels/cuda/gemm_wgmma.cu, attention_wgmma.cu, on the
// primitives of hopper.cuh) without a GPU: the CPU emulator (cuda-emulator/emulator.h with
// hopper-sync.h, hopper-tma.h, hopper-wgmma.h: mbarriers, TMA with its 128-byte swizzle, wgmma from its
// matrix descriptors, each performed at the latest moment the PTX ISA allows) runs the library's own
// kc_gemm and kc_attention on an emulated sm_90 context with the wgmma paths forced — the kernels as
// written, the warp-specialized producer, the stage rings, the ping-pong consumers and the persistent
// grid (two multiprocessors: two blocks take turns at the work items). The cases are the op sweep's and
// op-cases-tensor-cores.ts's GEMM cases that take tensor cores (cuda-emulator/wgmma-cases.ts: every
// epilogue, bf16 output, several 128×256 tiles, K over several ring turns) and attention cases of head size 64 and 128 (block-causal,
// kvLen < Lk, the T5 bias, Lq ≠ Lk, tails off the 128-row tiles); each must keep the tensor-core
// promise (op-precision.ts), as on the mma.sync kernels (cuda-emulated-tensor-cores.test.ts). The
// persistent GEMM (gemm_wgmma_persistent.cu): cuda-emulated-wgmma-persistent.test.ts, with the
// TMA-store epilogue cuda-emulated-wgmma-persistent-tma.test.ts; the ping-pong GEMM
// (gemm_wgmma_pingpong.cu): cuda-emulated-wgmma-pingpong.test.ts.
//
// The D 128 cases run again with FlashAttention-3's 176-key tiles (KINO_CUDA_ATTENTION_BKV=176), with two
// cases of their own (a T5 bias under a block-causal mask; four tiles a row).
//
// TMA with a 128-byte swizzle needs 128-byte aligned global memory (the CUDA programming guide); a view
// 16 bytes past such a boundary must not reach the wgmma kernels. The last tests plant known bugs in the
// Hopper kernels (KC_PLANTED, common.cuh) and require the cases to catch each one.
import { describe, expect, test } from "bun:test";
import { runHarness } from "./cuda-emulator/emulated-backend.ts";
import { EmulatedTensorCoreBackend, buildTensorCoreEmulators } from "./cuda-emulator/emulated-tensor-cores.ts";
import { failure, firstFailure, wgmmaAttentionCases, wgmmaGemmCases } from "./cuda-emulator/wgmma-cases.ts";
import { type AttentionShape, tensorCoreAttentionCases } from "./op-cases-tensor-cores.ts";

const built = await buildTensorCoreEmulators();
const skip = "skip" in built ? built.skip : undefined;
if (skip) console.log(`cuda-emulated-wgmma.test.ts: skipped, ${skip}`);
const harness = "skip" in built ? null : built;

const gemms = wgmmaGemmCases();
const attentions = wgmmaAttentionCases();

describe.skipIf(!harness)("the wgmma GEMM and attention on the CPU emulator", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma" });
  for (const c of gemms) {
    test(`gemm ${c.name} keeps the tensor-core promise, on wgmma where N and a split's part are even`, async () => {
      const why = await failure(be!, c);
      expect(why).toBeNull();
      const call = be!.calls.at(-1)!;
      // gemm.cu: wgmma needs pair stores that stay inside one part; otherwise the forced path runs mma.sync
      expect(call.kernel).toBe(call.N! % 2 === 0 && call.split! % 2 === 0 ? "wgmma" : "mma.sync");
    }, 60_000);
  }
  for (const c of attentions) {
    test(`attention ${c.name} runs wgmma and keeps the tensor-core promise`, async () => {
      const why = await failure(be!, c);
      expect(be!.calls.at(-1)?.kernel).toBe("wgmma");
      expect(why).toBeNull();
    }, 60_000);
  }

  test("the cases reach every edge: several 128×256 tiles, the 4-stage ring wrapping, blocks with several work items", () => {
    const launches = (op: string) => be!.calls.filter((c) => c.op === op && c.kernel === "wgmma").flatMap((c) => c.launches);
    const grid = (l: string) => /grid (\d+),(\d+),(\d+) threads (\d+)/.exec(l)!.slice(1).map(Number);
    expect(launches("gemm").every((l) => grid(l)[3] === 384)).toBe(true);
    expect(launches("gemm").some((l) => grid(l)[0]! >= 4)).toBe(true); // 2 × 2 tiles and more
    expect(be!.calls.some((c) => c.kernel === "wgmma" && c.K! > 2 * 4 * 64)).toBe(true); // the 4-stage ring of K steps of 64 turns twice
    // attention: a persistent grid of one block per multiprocessor (2), each taking several items (these
    // cases' few key tiles never pay for stream-K by default: its describe below forces it)
    expect(launches("attention").length).toBe(attentions.length);
    expect(launches("attention").every((l) => grid(l)[0]! <= 2 && grid(l)[3] === 384)).toBe(true);
    expect(be!.calls.every((c) => c.launches.length === 1)).toBe(true); // one kernel per call: nothing fell back
  });
});

// FlashAttention-3's 176-key tiles (KINO_CUDA_ATTENTION_BKV=176, D 128 only): every D-128 case above
// (keys off the 176-row tiles, kvLen < Lk, block-causal, one query, f32 and bf16 in and out) and two
// of their own: a T5 bias with a block-causal mask across tiles and kvLen off them, and rows of four
// tiles (the 2-stage ring turning twice) whose logits rise along the keys, two items per block.
const BKV176_SHAPES: AttentionShape[] = [
  { B: 1, Lq: 130, Lk: 400, H: 2, D: 128, kvLen: 390, block: [100, 50], bias: true, in: "f32", out: "bf16", label: "176-key tiles: bias and a mask across them" },
  { B: 2, Lq: 200, Lk: 600, H: 1, D: 128, rising: true, in: "bf16", out: "f32", label: "176-key tiles: four a row, each rescaling the last" },
];
const bkv176 = [...attentions.filter((c) => c.headDim === 128), ...tensorCoreAttentionCases([128], BKV176_SHAPES)];

describe.skipIf(!harness)("the wgmma attention with 176-key tiles (KINO_CUDA_ATTENTION_BKV=176)", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma", attentionBkv: 176 });
  // dynamic shared memory: q 32 KiB + 2 stages × (k + v) of BKV rows × 256 bytes, + 1 KiB to align
  const smem = (D: number, bkv: number) => (128 * D * 2 + 2 * 2 * bkv * D * 2 + 1024).toString();
  for (const c of bkv176) {
    test(`attention ${c.name} keeps the tensor-core promise`, async () => {
      const why = await failure(be!, c);
      expect(be!.calls.at(-1)?.kernel).toBe("wgmma-bkv176");
      expect(be!.calls.at(-1)!.launches).toEqual([expect.stringMatching(new RegExp(`^launch grid [12],1,1 threads 384 smem ${smem(128, 176)}$`))]);
      expect(why).toBeNull();
    }, 60_000);
  }
  test("D 64 keeps its 128-key tiles; the setting is read where the other KINO_CUDA_* paths are", async () => {
    expect(await failure(be!, attentions.find((c) => c.headDim === 64)!)).toBeNull();
    expect(be!.calls.at(-1)?.kernel).toBe("wgmma");
    expect(be!.calls.at(-1)!.launches[0]).toEndWith(`smem ${smem(64, 128)}`);
    expect(await Bun.file(new URL("../../kernels/cuda/context.cu", import.meta.url)).text()).toContain('kc_attention_bkv_setting(getenv("KINO_CUDA_ATTENTION_BKV"))');
  }, 60_000);
});

// Stream-K (attention_split.cuh), forced wherever it cuts an item (KINO_CUDA_ATTENTION_SPLIT=always: these
// cases' few key tiles would not pay for it on a GPU): on 3 multiprocessors most cases' items no longer
// divide among the blocks, so block ranges cut items into parts and the combine (attention_combine.cu)
// merges them; each case that splits runs again with KINO_CUDA_ATTENTION_SPLIT=0, its items walked whole.
describe.skipIf(!harness)("the wgmma attention's stream-K schedule on 3 multiprocessors", () => {
  const split = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma", sms: 3, attentionSplit: "always" });
  const whole = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma", sms: 3, attentionSplit: "off" });
  const cut: string[] = [];
  for (const c of attentions) {
    test(`attention ${c.name} keeps the tensor-core promise, its items split or whole`, async () => {
      expect(await failure(split!, c)).toBeNull();
      const launches = split!.calls.at(-1)!.launches;
      if (launches.length === 1) return;
      cut.push(c.name);
      // the main kernel on up to 3 blocks (fewer where there are fewer key tiles), then the combine, a block per boundary
      const blocks = Number(/^launch grid (\d+),1,1 threads 384 /.exec(launches[0]!)?.[1]);
      expect(launches).toEqual([expect.stringMatching(/^launch grid [23],1,1 threads 384 /), `launch grid ${blocks - 1},1,1 threads 256 smem 0`]);
      expect(await failure(whole!, c)).toBeNull();
      expect(whole!.calls.at(-1)!.launches).toEqual([expect.stringMatching(/^launch grid [123],1,1 threads 384 /)]);
    }, 60_000);
  }
  test("ranges cut items in most cases: one item over several blocks, several items a block", () => {
    expect(cut.length).toBeGreaterThanOrEqual(attentions.length / 2);
    expect(cut).toContain("B 1 Lq 33 Lk 200 H 1 D 128, kvLen 150"); // one item, two key tiles, over 2 blocks
    expect(cut).toContain("B 1 Lq 64 Lk 512 H 2 D 128, q/k/v bf16 → bf16"); // 2 items of 4 tiles: the middle block ends one, starts the other
    expect(cut.some((n) => /bias/.test(n) && /kvLen/.test(n))).toBe(true); // the T5 bias and a mask inside a key tile, across the cut
  });
});

describe.skipIf(!harness)("operands 16 bytes past a 128-byte boundary (a view into a block)", () => {
  const be = harness && new EmulatedTensorCoreBackend(harness, { kernels: "wgmma", misalign: true });
  test("the GEMM leaves them to mma.sync, which keeps its promise", async () => {
    const bf16 = gemms.filter((c) => / w bf16, a bf16/.test(c.name) || /bf16 → /.test(c.name)).slice(0, 3);
    for (const c of [gemms.find((c) => /wrap/.test(c.name))!, ...bf16]) {
      expect(await failure(be!, c)).toBeNull();
      expect(be!.calls.at(-1)?.kernel).toBe("mma.sync");
    }
  }, 60_000);
  test("the forced wgmma attention refuses bf16 q, k, v there with the reason (f32 ones are copied, aligned)", async () => {
    const bf16 = attentions.find((c) => /bf16 →/.test(c.name))!, f32 = attentions.find((c) => /f32 →/.test(c.name))!;
    expect(await failure(be!, bf16)).toContain("needs 128-byte aligned q, k, v");
    expect(await failure(be!, f32)).toBeNull();
    expect(be!.calls.at(-1)?.kernel).toBe("wgmma");
  }, 60_000);
});

// kc_attention's own check of kv_len (backends/cuda.ts checks it first, so only a call past it shows it):
// keys past Lk would be rows of k and v's tensor maps past their buffers, which TMA would read.
describe.skipIf(!harness)("kv_len past Lk", () => {
  test("kc_attention refuses it with the reason instead of reading past k and v", () => {
    const [B, Lq, Lk, kvLen, H, D] = [1, 1, 4, 5, 1, 64];
    const head = new Int32Array([B, Lq, Lk, kvLen, H, D, 1, 0, 0, 0, 0, 2]); // bf16 in, f32 out, no bias, no mask, wgmma
    const kv = new Uint16Array(B * Lk * H * D).fill(0x3f80);
    expect(() => runHarness(harness!.attention, "attention", [head, new Float32Array([0.125]), new Uint16Array(B * Lq * H * D), kv, kv]))
      .toThrow("kc_attention: kv_len must be 0 .. Lk");
  });
});

// Each planted bug (KC_PLANTED(n) in the kernel source) with the op whose cases must catch it.
const PLANTED: [number, "gemm" | "attention", string][] = [
  [8, "gemm", "a consumer waits on its stage's full barrier with the flipped parity (gemm_wgmma.cu)"],
  [9, "gemm", "the producer refills a stage without waiting on its empty barrier (gemm_wgmma.cu)"],
  [10, "gemm", "the A descriptor steps 16 bytes per K step instead of 32 (gemm_wgmma.cu)"],
  [11, "attention", "v's descriptor: the leading byte offset half a box (attention_wgmma.cu, D 128)"],
  [12, "attention", "the softmax reads S(t) before the wait_group that retires it (attention_wgmma.cu)"],
  [13, "attention", "q released to the producer before the last S(t) reading it retired (attention_wgmma.cu)"],
  [34, "attention", "a part of a cut item loads its keys from the item's first tile (attention_wgmma.cu, stream-K)"],
  [35, "attention", "the combine leaves out a cut item's last part (attention_combine.cu)"],
];

describe.skipIf(!harness)("the emulated cases catch planted Hopper kernel bugs", () => {
  for (const [n, op, what] of PLANTED) {
    test(`bug ${n}, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { kernels: "wgmma", plant: n, attentionSplit: "always" });
      const caught = await firstFailure(planted, op === "gemm" ? gemms : attentions);
      console.log(`planted bug ${n} caught by ${caught}`);
      expect(caught).not.toBeNull();
    }, 120_000);
  }
  for (const [n, , what] of PLANTED.filter(([, op]) => op === "attention")) {
    test(`bug ${n} with 176-key tiles, ${what}`, async () => {
      const planted = new EmulatedTensorCoreBackend(harness!, { kernels: "wgmma", plant: n, attentionBkv: 176, attentionSplit: "always" });
      const caught = await firstFailure(planted, bkv176);
      console.log(`planted bug ${n} (176-key tiles) caught by ${caught}`);
      expect(caught).not.toBeNull();
    }, 120_000);
  }
});
