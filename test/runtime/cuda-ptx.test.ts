// The Hopper kernels (kernels/cuda/attention_wgmma.cu, and gemm_wgmma.cu with its epilogue) as the
// compiler sees them, without a GPU: each sm_90a build must really use the Hopper instructions (wgmma,
// TMA bulk-tensor copies, register reallocation) and must fit its registers without spilling or
// serializing the wgmma pipeline — the failure modes that cost speed silently rather than breaking
// results. Correctness on a GPU is tools/gpu-check.sh's job.
import { describe, expect, test } from "bun:test";
import { $ } from "bun";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findNvcc } from "../../tools/build/cuda.ts";

const root = resolve(import.meta.dir, "../..");
const nvcc = findNvcc();
/** Each file, its kernel, and how many instances it compiles (attention: D 64 and 128; GEMM: bf16, f16). */
const KERNELS = [
  { file: "attention_wgmma", kernel: "attention_wgmma_kernel", instances: 2 },
  { file: "gemm_wgmma", kernel: "gemm_wgmma_kernel", instances: 2 },
];

/** ptxas -v figures per entry function whose (mangled) name contains `kernel`. */
function ptxasReport(log: string, kernel: string) {
  const lines = log.split("\n");
  const out: { name: string; spillStores: number; spillLoads: number; stack: number }[] = [];
  lines.forEach((line, i) => {
    const m = /Function properties for (\S+)/.exec(line);
    if (!m || !m[1]!.includes(kernel)) return;
    const props = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(lines[i + 1] ?? "");
    if (!props) throw new Error(`no ptxas figures after: ${line}`);
    out.push({ name: m[1]!, stack: Number(props[1]), spillStores: Number(props[2]), spillLoads: Number(props[3]) });
  });
  return out;
}

if (!nvcc) console.log("cuda-ptx.test.ts: skipped, nvcc not found (CI has it)");

for (const { file, kernel: KERNEL, instances } of KERNELS) describe.skipIf(!nvcc)(`${file}.cu for sm_90a`, () => {
  test("uses wgmma, TMA and setmaxnreg; no spills and no serialized wgmma", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kino-ptx-"));
    try {
      const src = join(root, `kernels/cuda/${file}.cu`);
      const r = await $`${nvcc} -O3 -std=c++17 --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a -Xptxas -v --keep --keep-dir ${dir} -c ${src} -o ${join(dir, `${file}.o`)}`
        .nothrow()
        .quiet();
      const log = r.stdout.toString() + r.stderr.toString();
      expect(r.exitCode, log).toBe(0);

      const ptxFile = readdirSync(dir).find((f) => f.endsWith(".ptx"));
      expect(ptxFile, `no .ptx kept in ${dir}`).toBeDefined();
      const ptx = readFileSync(join(dir, ptxFile!), "utf8");
      expect(ptx).toContain("wgmma.mma_async");
      expect(ptx).toContain("cp.async.bulk.tensor");
      expect(ptx).toContain("setmaxnreg.dec");
      expect(ptx).toContain("setmaxnreg.inc");

      // Every instance is compiled, and none spills.
      const report = ptxasReport(log, KERNEL);
      expect(report.length, log).toBe(instances);
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
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
