// Which kernel the CUDA library runs for the ops that have several (GEMM, attention, conv3d): the
// paths kc_set_paths can force, and the record of what each call ran (kc_last_kernel), for the CUDA
// backend (cuda.ts) and the op sweep, which runs every case of an op on every path here.
import type { Pointer } from "bun:ffi";
import type { CudaLibrary } from "./cuda-library.ts";

/** The ops whose kernel can be chosen, and their code in kc_last_kernel (conv2d runs conv3d's). */
export type KernelOp = "gemm" | "attention" | "conv3d";
const KERNEL_OP: Record<KernelOp, number> = { gemm: 0, attention: 1, conv3d: 2 };

/**
 * The kernels kc_set_paths can force, per op, by the name kc_last_kernel reports: the C code of each
 * path (kernels/cuda/context.cu) and whether the kernel rounds f32 operands to 16 bits for the tensor
 * cores (GEMM: the activations to the weight's bf16/f16; attention: q, k, v and P to bf16; conv3d:
 * x, prev and the weights to bf16) or multiplies them as f32. A forced tensor-core path still falls back where a call's shape or dtypes
 * rule its kernel out (`ranKernel` says what ran). The op sweep runs every case of an op on every
 * path here, so a new kernel is one entry.
 */
export const CUDA_KERNEL_PATHS: Readonly<Record<KernelOp, Readonly<Record<string, { code: number; rounds: boolean }>>>> = {
  gemm: {
    wgmma: { code: 3, rounds: true }, "wgmma-persistent": { code: 4, rounds: true }, "wgmma-pingpong": { code: 5, rounds: true },
    "wgmma-persistent-tma": { code: 6, rounds: true },
    "mma.sync": { code: 1, rounds: true }, simt: { code: 2, rounds: false },
  },
  attention: { wgmma: { code: 2, rounds: true }, "mma.sync": { code: 3, rounds: true }, simt: { code: 1, rounds: false } },
  conv3d: { wgmma: { code: 3, rounds: true }, "mma.sync": { code: 2, rounds: true }, simt: { code: 1, rounds: false } },
};
/** The path codes that let the library choose per call (kc_create's default). */
const AUTO_PATHS: Record<KernelOp, number> = { gemm: 0, attention: 0, conv3d: 0 };

/** The paths one context runs on, and what its last call of each op ran. */
export class KernelPaths {
  #paths: Record<KernelOp, number> = { ...AUTO_PATHS };
  #ran: Record<KernelOp, string | null> = { gemm: null, attention: null, conv3d: null };

  constructor(private readonly symbols: () => CudaLibrary["symbols"], private readonly ctx: Pointer, private readonly check: (rc: number, op: string) => void) {}

  /** See CudaBackend.setKernelPaths. */
  set(paths: Partial<Record<KernelOp, string>>): void {
    const next = { ...this.#paths };
    for (const [op, kernel] of Object.entries(paths) as [KernelOp, string][]) {
      const code = kernel === "auto" ? AUTO_PATHS[op] : CUDA_KERNEL_PATHS[op][kernel]?.code;
      if (code === undefined) throw new Error(`cuda: no ${op} kernel "${kernel}" (${Object.keys(CUDA_KERNEL_PATHS[op]).join(", ")}, auto)`);
      next[op] = code;
    }
    this.check(this.symbols().kc_set_paths(this.ctx, next.gemm, next.attention, next.conv3d), "setKernelPaths");
    this.#paths = next;
  }

  /** Whether `op` is forced onto `kernel`. */
  forced(op: KernelOp, kernel: string): boolean {
    return this.#paths[op] === CUDA_KERNEL_PATHS[op][kernel]?.code;
  }

  /** Forgets what `op` ran, before a call that may run nothing. */
  clear(op: KernelOp): void {
    this.#ran[op] = null;
  }

  /** Notes what the call of `op` just made ran. */
  record(op: KernelOp): void {
    this.#ran[op] = String(this.symbols().kc_last_kernel(this.ctx, KERNEL_OP[op])) || null;
  }

  ran(op: KernelOp): string | null {
    return this.#ran[op];
  }
}
