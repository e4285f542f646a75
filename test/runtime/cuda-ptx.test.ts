// The tensor-core kernels as the compiler sees them, without a GPU: the Hopper kernels
// (kernels/cuda/attention_wgmma.cu, gemm_wgmma.cu, gemm_wgmma_persistent.cu, gemm_wgmma_pingpong.cu
// with their epilogues, and conv_wgmma.cu) must really use the Hopper instructions in their sm_90a
// build (wgmma, TMA bulk-tensor copies, register reallocation; the persistent GEMM's TMA-store
// epilogue its stores, bulk async-groups and proxy fence; the convolution cp.async with the proxy
// fence), and the mma.sync GEMM, attention and convolution (gemm_mma.cu, attention.cu, conv_mma.cu)
// mma.sync on bf16 with ldmatrix and cp.async in both their sm_90a and sm_80 builds (the H200 runs the
// GEMM's sm_90a build where wgmma cannot take a call, every other GPU the sm_80 one); every kernel of each file must fit its registers without spilling, and the
// wgmma pipeline must not be serialized — the failure modes that cost speed silently rather than
// breaking results. The registers the mma.sync attention's tiling model and the mma.sync convolution's
// tile model assume (attention_mma_tiles.cuh, conv_mma_tiles.cuh) must be those ptxas gives their
// kernels, for both targets. Two facts the CPU
// emulator builds on are checked here too: each kernel's static shared memory fits the allowance the
// emulator leaves it, and each kernel with setmaxnreg is compiled under launch bounds to exactly the
// register count the emulator starts its warps with (the pool the warpgroups' setmaxnreg counts must
// fit). Correctness on a GPU is tools/gpu-check.sh's job (and, for the convolutions, also
// the CPU emulator's: cuda-emulated.test.ts).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { buildCudaLib, findNvcc, PTX_TARGETS, ptxasLogPath, ptxPath } from "../../tools/build/cuda.ts";
import { buildAttentionTiles, modelRegisters } from "./cuda-emulator/attention-tiles.ts";
import { buildConvTiles, convModelRegisters } from "./cuda-emulator/conv-tiles.ts";

const nvcc = findNvcc();
const HOPPER_PTX = ["wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg.dec", "setmaxnreg.inc"];
const MMA_SYNC_BF16_PTX = ["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global"];
/** Each file, its main kernel, how many instances of it the file compiles (each for an f32 and a bf16
 *  output — backend.ts "Activations" — times: attention D 64 and 128 with 128-key tiles and D 128 with
 *  176-key ones (KINO_CUDA_ATTENTION_BKV=176), or D 16, 32, 64, 128 with 128- and 64-row query blocks for
 *  mma.sync; GEMM bf16 and f16 operands, and for mma.sync its 128×256, 128×192 and 128×128 tiles; conv: three
 *  tile shapes for wgmma, four for mma.sync, f32 out), the target, and the instructions its PTX must contain. */
const KERNELS = [
  { file: "attention_wgmma", kernel: "attention_wgmma_kernel", instances: 6, arch: "sm_90a",
    ptx: [...HOPPER_PTX, "wgmma.mma_async.sync.aligned.m64n128k16", "wgmma.mma_async.sync.aligned.m64n176k16"],
    uses: "wgmma (S = Q·Kᵀ as m64n128k16 and m64n176k16), TMA and setmaxnreg" },
  { file: "gemm_wgmma", kernel: "gemm_wgmma_kernel", instances: 4, arch: "sm_90a", ptx: HOPPER_PTX, uses: "wgmma, TMA and setmaxnreg" },
  // tile widths 224 and 256, each for bf16 and f16 operands, both outputs and both epilogues (registers,
  // TMA store: the results staged with st.shared, the proxy fence, 3-d TMA stores in bulk async-groups)
  { file: "gemm_wgmma_persistent", kernel: "gemm_wgmma_persistent_kernel", instances: 16, arch: "sm_90a",
    ptx: [...HOPPER_PTX, "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0",
      "cp.async.bulk.wait_group 0", "fence.proxy.async.shared::cta", "st.shared.v2.f32", "st.shared.b32"],
    uses: "wgmma, TMA loads and stores, the async-proxy fence and setmaxnreg" },
  // one tile shape (128×112 per consumer), bf16 and f16 operands, both outputs; the turns are named barriers
  { file: "gemm_wgmma_pingpong", kernel: "gemm_wgmma_pingpong_kernel", instances: 4, arch: "sm_90a", ptx: [...HOPPER_PTX, "wgmma.mma_async.sync.aligned.m64n112k16", "bar.sync", "bar.arrive"], uses: "wgmma m64n112k16, TMA, setmaxnreg and named barriers" },
  // D 16…128 × 128- and 64-row query blocks × both outputs; the H200 runs the sm_90a build until the
  // wgmma kernel is verified, every other GPU the sm_80 one
  ...["sm_90a", "sm_80"].map((arch) => (
    { file: "attention", kernel: "attention_mma_kernel", instances: 16, arch, ptx: MMA_SYNC_BF16_PTX, uses: "mma.sync on bf16, ldmatrix and cp.async" })),
  ...["sm_90a", "sm_80"].map((arch) => (
    { file: "gemm_mma", kernel: "gemm_mma_kernel", instances: 12, arch, ptx: MMA_SYNC_BF16_PTX, uses: "mma.sync on bf16, ldmatrix and cp.async" })),
  // three tile widths (192, 128, 96 channels: m64n192k16, m64n128k16, m64n96k16), f32 out; the voxel
  // rows by cp.async, made visible to wgmma with the async-proxy fence; the weight rows by TMA
  { file: "conv_wgmma", kernel: "conv_wgmma_kernel", instances: 3, arch: "sm_90a",
    ptx: [...HOPPER_PTX, "wgmma.mma_async.sync.aligned.m64n192k16", "wgmma.mma_async.sync.aligned.m64n96k16", "cp.async.cg.shared.global", "fence.proxy.async.shared::cta"],
    uses: "wgmma (n192, n128, n96), cp.async with the proxy fence, TMA and setmaxnreg" },
  ...["sm_90a", "sm_80"].map((arch) => (
    { file: "conv_mma", kernel: "conv_mma_kernel", instances: 4, arch, ptx: MMA_SYNC_BF16_PTX, uses: "mma.sync on bf16, ldmatrix and cp.async" })),
];

/** "conv_mma_kernel<0>" for a mangled entry name (the kernel and its integer template arguments). */
const shortName = (mangled: string) => {
  const m = /\d+([A-Za-z_]*kernel)(I.*?EE)?/.exec(mangled);
  if (!m) return mangled;
  const args = [...(m[2] ?? "").matchAll(/L[ib](\d+)E/g)].map((a) => a[1]);
  return args.length ? `${m[1]}<${args.join(",")}>` : m[1]!;
};

/** ptxas -v figures per entry function (mangled name): stack, spills, registers, static shared memory. */
function ptxasReport(log: string) {
  const lines = log.split("\n");
  const out: { name: string; spillStores: number; spillLoads: number; stack: number; registers: number; smem: number }[] = [];
  lines.forEach((line, i) => {
    const m = /Function properties for (\S+)/.exec(line);
    if (!m) return;
    const props = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(lines[i + 1] ?? "");
    const used = /Used (\d+) registers(?:.*?(\d+) bytes smem)?/.exec(lines[i + 2] ?? "");
    if (!props || !used) throw new Error(`no ptxas figures after: ${line}`);
    out.push({
      name: m[1]!, stack: Number(props[1]), spillStores: Number(props[2]), spillLoads: Number(props[3]),
      registers: Number(used[1]), smem: Number(used[2] ?? 0),
    });
  });
  return out;
}

if (!nvcc) console.log("cuda-ptx.test.ts: skipped, nvcc not found (CI has it)");

/** ptxas's report for one target out of the build's log of all of them: each ptxas run opens with its
 *  "bytes gmem" line and names its target on its first entry function. */
function reportFor(log: string, arch: string): string {
  const sections = log.split(/^(?=ptxas info\s+: \d+ bytes gmem)/m);
  return sections.filter((s) => s.includes(`for '${arch}'`)).join("");
}

/** What the CPU emulator assumes of the kernels' builds (cuda-emulator/hopper-sync.h launch_regs,
 *  emulator.h STATIC_SMEM_MAX): a kernel with setmaxnreg starts each warp with the register file over
 *  its block, 65536 / threads rounded down to a multiple of 8, and setmaxnreg may only redistribute
 *  that; a kernel's static shared memory leaves the whole 227 KiB less 256 bytes to its dynamic shared
 *  memory. */
const launchRegs = (threads: number) => Math.min(Math.floor(65536 / threads), 255) & ~7;
const STATIC_SMEM_MAX = 256;

/** Per entry function of a PTX file (mangled name): its .maxntid and .minnctapersm directives and the
 *  setmaxnreg counts in its body. */
function ptxEntries(ptx: string) {
  return ptx.split(/^(?:\.visible )?\.entry /m).slice(1).map((body) => ({
    name: /^(\S+?)\(/.exec(body)![1]!,
    maxntid: Number(/^\.maxntid (\d+), 1, 1$/m.exec(body)?.[1] ?? NaN),
    minBlocks: Number(/^\.minnctapersm (\d+)$/m.exec(body)?.[1] ?? NaN),
    setmaxnreg: [...body.matchAll(/setmaxnreg\.(inc|dec)\.sync\.aligned\.u32 (\d+);/g)].map((m) => `${m[1]} ${m[2]}`),
  }));
}

// The build (tools/build/cuda.ts) compiles every kernel file for every target with ptxas -v and keeps its
// report and PTX: reading those checks the kernels exactly as shipped. buildCudaLib is a no-op where the
// build is current (npm test builds first) and rebuilds what a kernel edit left stale.
const built = nvcc ? await buildCudaLib() : null;
for (const { file, kernel: KERNEL, instances, arch, ptx: instructions, uses } of KERNELS) describe.skipIf(!nvcc)(`${file}.cu for ${arch}`, () => {
  test(`uses ${uses}; no spills and no serialized wgmma`, async () => {
    expect(built).not.toBeNull();
    const log = reportFor(readFileSync(ptxasLogPath(file), "utf8"), arch);
    const ptx = readFileSync(ptxPath(file, `compute_${arch.slice(3)}` as keyof typeof PTX_TARGETS), "utf8");
    for (const instruction of instructions) expect(ptx).toContain(instruction);

    // Every instance of the main kernel is compiled, and no kernel of the file spills.
    const report = ptxasReport(log);
    expect(report.filter((k) => k.name.includes(KERNEL)).length, log).toBe(instances);
    console.log(`${file}.cu ${arch}: ${report.map((k) => `${shortName(k.name)} ${k.registers} registers, ${k.smem} B static smem, ${k.spillStores}/${k.spillLoads} B spilled`).join("; ")}`);
    for (const k of report) {
      expect({ kernel: k.name, spillStores: k.spillStores, spillLoads: k.spillLoads }).toEqual({
        kernel: k.name,
        spillStores: 0,
        spillLoads: 0,
      });
    }
    // ptxas warns (C7510, C7520, ...) when it must serialize wgmma instructions, e.g. a wgmma on a
    // divergent path or accumulator registers touched while the pipeline runs.
    const serialized = log.split("\n").filter((l) => /wgmma\.mma_async instructions are serialized/.test(l) && l.includes(KERNEL));
    expect(serialized).toEqual([]);
  });

  test("static shared memory within what the emulator leaves it; setmaxnreg only under launch bounds, from the registers it assumes", () => {
    const report = ptxasReport(reportFor(readFileSync(ptxasLogPath(file), "utf8"), arch));
    for (const k of report) expect({ kernel: k.name, smem: Math.min(k.smem, STATIC_SMEM_MAX) }).toEqual({ kernel: k.name, smem: k.smem });
    const entries = ptxEntries(readFileSync(ptxPath(file, `compute_${arch.slice(3)}` as keyof typeof PTX_TARGETS), "utf8"))
      .filter((e) => e.setmaxnreg.length > 0);
    if (!instructions.includes("setmaxnreg.inc")) {
      expect(entries).toEqual([]);
      return;
    }
    expect(entries.length).toBe(instances);
    for (const e of entries) {
      // PTX ISA setmaxnreg: the kernel needs a register cap (here __launch_bounds__(threads, 1)), and the
      // counts it then starts with are what ptxas reports
      const regs = report.find((k) => k.name === e.name)!.registers;
      expect({ kernel: e.name, minBlocks: e.minBlocks, registers: regs }).toEqual({ kernel: e.name, minBlocks: 1, registers: launchRegs(e.maxntid) });
    }
  });
});

// The model picks the mma.sync attention's query tiling from blocks per SM, which follow from these
// registers: a kernel edit that moves them must move the model's constants (and attention.cu's table).
describe.skipIf(!nvcc)("attention_mma_tiles.cuh", () => {
  test("assumes the registers ptxas gives each attention_mma_kernel instance in the sm_80 and sm_90a builds", async () => {
    expect(built).not.toBeNull();
    const tiles = await buildAttentionTiles();
    if ("skip" in tiles) throw new Error(tiles.skip);
    const assumed = modelRegisters(tiles.path);
    expect(assumed).toHaveLength(8); // D 16…128 × 128 and 64 rows
    for (const arch of ["sm_80", "sm_90a"] as const) {
      const kernels = ptxasReport(reportFor(readFileSync(ptxasLogPath("attention"), "utf8"), arch)).flatMap((k) => {
        const m = /^attention_mma_kernel<(\d+),(\d+)>$/.exec(shortName(k.name));
        return m ? [{ D: Number(m[1]), rows: 64 * Number(m[2]), registers: k.registers }] : [];
      });
      expect(kernels).toHaveLength(16);
      for (const k of kernels) {
        const model = assumed.find((a) => a.D === k.D && a.rows === k.rows);
        expect({ ...k, assumed: model?.[arch] }).toEqual({ ...k, assumed: k.registers });
      }
    }
  });
});

// The same for the convolution's tile model: blocks per SM follow from the registers of each tile.
describe.skipIf(!nvcc)("conv_mma_tiles.cuh", () => {
  test("assumes the registers ptxas gives each conv_mma_kernel instance in the sm_80 and sm_90a builds", async () => {
    expect(built).not.toBeNull();
    const tiles = await buildConvTiles();
    if ("skip" in tiles) throw new Error(tiles.skip);
    const assumed = convModelRegisters(tiles.path);
    expect(assumed).toHaveLength(4);
    for (const arch of ["sm_80", "sm_90a"] as const) {
      const kernels = ptxasReport(reportFor(readFileSync(ptxasLogPath("conv_mma"), "utf8"), arch)).flatMap((k) => {
        const m = /^conv_mma_kernel<(\d+)>$/.exec(shortName(k.name));
        return m ? [{ tile: assumed[Number(m[1])]!.tile, registers: k.registers }] : [];
      });
      expect(kernels).toHaveLength(4);
      for (const k of kernels) expect({ ...k, assumed: assumed.find((a) => a.tile === k.tile)![arch] }).toEqual({ ...k, assumed: k.registers });
    }
  });
});
