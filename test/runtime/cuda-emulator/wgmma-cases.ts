// The cases the Hopper kernels run on the CPU emulator (cuda-emulated-wgmma.test.ts,
// cuda-emulated-wgmma-persistent.test.ts, -pingpong, -persistent-tma): the op sweep's and op-cases-tensor-cores.ts's GEMM cases
// that take tensor cores (every epilogue, bf16 output, several tiles, K over several ring turns) and
// attention cases of head size 64 and 128, and how a run on an emulated backend failed, if it did
// (every emulated tensor-core test uses these two).
import { attentionCases, gemmCases } from "../op-cases-heavy.ts";
import { gemmEpilogueCases } from "../op-cases-fused.ts";
import { bf16AttentionCases, bf16GemmCases } from "../op-cases-bf16.ts";
import { tensorCoreAttentionCases, tensorCoreGemmCases } from "../op-cases-tensor-cores.ts";
import type { OpCase } from "../op-helpers.ts";
import { compare } from "../op-precision.ts";
import type { EmulatedTensorCoreBackend } from "./emulated-tensor-cores.ts";

/** Whether a case reaches the tensor-core kernels at all (gemm.cu, attention.cu): GEMM with bf16/f16
 *  weights and K a positive multiple of 8; attention with D 64 or 128 (what a forced wgmma path takes)
 *  and a key to see. */
function takesTensorCores(c: OpCase): boolean {
  if (c.op === "gemm") {
    const m = / K (\d+) w (bf16|f16)/.exec(c.name);
    return !!m && Number(m[1]) > 0 && Number(m[1]) % 8 === 0;
  }
  return c.op === "attention" && (c.headDim === 64 || c.headDim === 128 || /\bD (64|128)\b/.test(c.name)) && !/kvLen 0\b/.test(c.name);
}

export function wgmmaGemmCases(): OpCase[] {
  return [...gemmCases(), ...gemmEpilogueCases(), ...bf16GemmCases()].filter(takesTensorCores).concat(tensorCoreGemmCases());
}

export function wgmmaAttentionCases(): OpCase[] {
  return [...attentionCases(), ...bf16AttentionCases()].filter(takesTensorCores).concat(tensorCoreAttentionCases([64, 128]));
}

/** Runs a case; null when it kept its tensor-core promise (op-precision.ts), else how it failed (the
 *  promise, or the harness: the library's or the emulator's message). */
export async function failure(be: EmulatedTensorCoreBackend, c: OpCase): Promise<string | null> {
  let got: Float32Array;
  try {
    got = await c.run(be);
  } catch (e) {
    return `the harness failed: ${(e as Error).message.split("\n").find((l) => /ERROR|emulator:|kc_/.test(l)) ?? (e as Error).message.slice(0, 200)}`;
  }
  const r = compare(got, c.tensorCores!());
  return r.ok ? null : `max abs ${r.maxAbs.toExponential(2)}, ${(100 * r.used).toFixed(0)} % of the tolerance`;
}

/** The first case that fails on a backend with a planted bug, named with how it failed; null when
 *  every case kept its promise (the bug went uncaught). `alsoBroken`, asked after a case that kept its
 *  promise: what else about that run gives the bug away (e.g. the order of the wgmma turns), or null. */
export async function firstFailure(be: EmulatedTensorCoreBackend, cases: OpCase[], alsoBroken?: () => string | null): Promise<string | null> {
  for (const c of cases) {
    const why = (await failure(be, c)) ?? alsoBroken?.() ?? null;
    if (why) return `${c.name}: ${why}`;
  }
  return null;
}
