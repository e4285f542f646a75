// A Backend whose gemm and attention run the CUDA library's own entry points (kc_gemm, kc_attention)
// on the CPU emulator — the mma.sync kernels of kernels/cuda/gemm_mma.cu and attention.cu, as
// written — and every other op the TypeScript reference (HostBackend). The arguments reach the C
// functions exactly as src/runtime/backends/cuda.ts passes them, after the same shape checks.
import type { AttentionOptions, GemmEpilogue } from "../../../src/runtime/backend.ts";
import * as P from "../../../src/runtime/op-params.ts";
import type { DType, Tensor } from "../../../src/runtime/tensor.ts";
import { HostBackend } from "../../models/helpers/host-backend.ts";
import { buildEmulator, runHarness } from "./emulated-backend.ts";

/** Dtype codes of the C ABI (kernels/cuda/common.cuh KcDtype). */
const DT: Partial<Record<DType, number>> = { f32: 0, bf16: 1, f16: 2 };
/** The mma.sync path codes of kc_set_paths (context.cu): GEMM 1, attention 3. */
const MMA_SYNC = { gemm: 1, attention: 3 } as const;

/** Both harnesses, built (or why they cannot be here). */
export async function buildTensorCoreEmulators(): Promise<{ gemm: string; attention: string } | { skip: string }> {
  const gemm = await buildEmulator("gemm", ["gemm", "gemm_mma"]);
  if ("skip" in gemm) return gemm;
  const attention = await buildEmulator("attention", ["attention"]);
  if ("skip" in attention) return attention;
  return { gemm: gemm.path, attention: attention.path };
}

export interface EmulatedCall {
  op: "gemm" | "attention";
  /** What the library says it ran (kc_last_kernel): "mma.sync" for every call these tests make. */
  kernel: string;
  /** One line per kernel launch: grid, threads, dynamic shared memory. */
  launches: string[];
}

export class EmulatedTensorCoreBackend extends HostBackend {
  readonly calls: EmulatedCall[] = [];

  /** `plant`: the number of a deliberate kernel bug to switch on (KC_PLANTED in the kernels), 0 none. */
  constructor(private readonly harness: { gemm: string; attention: string }, private readonly plant = 0) {
    super();
  }

  #run(op: EmulatedCall["op"], parts: ArrayBufferView[]): Uint8Array {
    const { out, lines } = runHarness(this.harness[op], op, parts, this.plant);
    const kernel = /^kernel ?(.*)$/.exec(lines[lines.length - 1] ?? "")?.[1] ?? "?";
    this.calls.push({ op, kernel, launches: lines.slice(0, -1) });
    return out;
  }

  override gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: GemmEpilogue | null): void {
    const { M, N, K, split } = P.gemmDims(out, a, w, bias, epilogue);
    const e = P.gemmEpilogueDims(out, epilogue);
    const residual = epilogue?.kind === "residual" ? epilogue : null;
    if (M === 0 || N === 0) return;
    const inPlace = residual !== null && residual.residual.ptr === out.ptr;
    const head = new Int32Array([M, N, K, DT[a.dtype]!, DT[w.dtype]!, DT[out.dtype]!, bias ? 1 : 0, e.gelu ? 1 : 0,
      !residual ? 0 : inPlace ? 2 : 1, residual?.gate ? 1 : 0, e.L, e.G, split, MMA_SYNC.gemm]);
    const parts: ArrayBufferView[] = [head, this.bytesOf(a), this.bytesOf(w)];
    if (bias) parts.push(this.bytesOf(bias));
    if (residual) parts.push(this.bytesOf(residual.residual));
    if (residual?.gate) parts.push(this.bytesOf(residual.gate));
    this.bytesOf(out).set(this.#run("gemm", parts));
  }

  override attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): void {
    const { B, Lq, Lk, kvLen, H, D } = P.attentionDims(out, q, k, v, opts);
    const bc = opts.blockCausal;
    const head = new Int32Array([B, Lq, Lk, kvLen, H, D, DT[q.dtype]!, DT[out.dtype]!, opts.bias ? 1 : 0, bc?.blockSize ?? 0, bc?.qOffset ?? 0,
      MMA_SYNC.attention]);
    const parts: ArrayBufferView[] = [head, new Float32Array([opts.scale]), this.bytesOf(q), this.bytesOf(k), this.bytesOf(v)];
    if (opts.bias) parts.push(this.bytesOf(opts.bias));
    this.bytesOf(out).set(this.#run("attention", parts));
  }
}
