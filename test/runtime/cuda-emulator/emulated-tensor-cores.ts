// A Backend whose gemm and attention run the CUDA library's own entry points (kc_gemm, kc_attention)
// on the CPU emulator — the mma.sync kernels of kernels/cuda/gemm_mma.cu and attention.cu, or the
// Hopper kernels of gemm_wgmma.cu, gemm_wgmma_persistent.cu (with either epilogue), gemm_wgmma_pingpong.cu
// and attention_wgmma.cu, as written — and every other op the
// TypeScript reference (HostBackend). The arguments reach the C functions exactly as
// src/runtime/backends/cuda.ts passes them, after the same shape checks.
import type { AttentionOptions, GemmEpilogue } from "../../../src/runtime/backend.ts";
import * as P from "../../../src/runtime/op-params.ts";
import type { DType, Tensor } from "../../../src/runtime/tensor.ts";
import { HostBackend } from "../../models/helpers/host-backend.ts";
import type { MmaTile } from "../op-cases-tensor-cores.ts";
import type { AttentionCall } from "./attention-tiles.ts";
import { buildEmulator, runHarness } from "./emulated-backend.ts";

/** Dtype codes of the C ABI (kernels/cuda/common.cuh KcDtype). */
const DT: Partial<Record<DType, number>> = { f32: 0, bf16: 1, f16: 2 };
/** The path codes of kc_set_paths (context.cu) that force each family: mma.sync GEMM 1, attention 3;
 *  wgmma GEMM 3 (one block per tile), 4 (the persistent grid), 5 (ping-pong) or 6 (the persistent grid
 *  with the TMA-store epilogue), attention 2 (the harnesses then make the context an sm_90 GPU). */
const PATHS = {
  "mma.sync": { gemm: 1, attention: 3 },
  wgmma: { gemm: 3, attention: 2 },
  "wgmma-persistent": { gemm: 4, attention: 2 },
  "wgmma-pingpong": { gemm: 5, attention: 2 },
  "wgmma-persistent-tma": { gemm: 6, attention: 2 },
} as const;
export type TensorCoreKernels = keyof typeof PATHS;

/** Both harnesses, built (or why they cannot be here). */
export async function buildTensorCoreEmulators(): Promise<{ gemm: string; attention: string } | { skip: string }> {
  const gemm = await buildEmulator("gemm", ["gemm", "gemm_mma", "gemm_wgmma", "gemm_wgmma_persistent", "gemm_wgmma_pingpong"]);
  if ("skip" in gemm) return gemm;
  const attention = await buildEmulator("attention", ["attention", "attention_wgmma", "attention_combine"]);
  if ("skip" in attention) return attention;
  return { gemm: gemm.path, attention: attention.path };
}

export interface EmulatedCall {
  op: "gemm" | "attention";
  /** What the library says it ran (kc_last_kernel): "mma.sync", "wgmma", "wgmma-persistent", "wgmma-pingpong",
   *  "wgmma-persistent-tma" or (attention at D 128 with 176-key tiles) "wgmma-bkv176". */
  kernel: string;
  /** One line per kernel launch: grid, threads, dynamic shared memory. */
  launches: string[];
  /** With `wgmmaRuns`, per block of a Hopper kernel the warpgroups in the order they issued wgmma and
   *  how many each time: [block, [[warpgroup, issued], …]] (hopper-wgmma.h). */
  runs: [number, [number, number][]][];
  /** GEMM: M; N and the columns of a split output's part (0: no split), which decide whether kc_gemm
   *  may take wgmma (both even); and K. */
  M?: number;
  N?: number;
  split?: number;
  K?: number;
  /** GEMM: the output's dtype (whether TMA can store a row of it: gemm_wgmma_persistent.cu). */
  out?: DType;
  /** Attention: the call as the mma.sync kernel's tiling model sees it (attention-tiles.ts). */
  attention?: AttentionCall;
}

export class EmulatedTensorCoreBackend extends HostBackend {
  readonly calls: EmulatedCall[] = [];

  readonly #kernels: TensorCoreKernels;
  readonly #plant: number;
  readonly #env: Record<string, string>;

  /** `kernels`: the family the paths force (mma.sync unless given); `plant`: the number of a deliberate
   *  kernel bug to switch on (KC_PLANTED in the kernels), 0 none; `misalign`: every buffer starts 16
   *  bytes past a 128-byte boundary, as a view may, instead of 256-byte aligned as an allocation;
   *  `wgmmaRuns`: record which warpgroup issued wgmma when (EmulatedCall.runs); `attentionBkv`: 176
   *  gives the wgmma attention 176-key tiles at D 128 (KINO_CUDA_ATTENTION_BKV); `attentionBq`: the mma.sync
   *  attention's query rows per block, forced (KINO_CUDA_ATTENTION_BQ), instead of chosen by shape;
   *  `gemmMmaTile`: the mma.sync GEMM's block tile, forced (KINO_CUDA_GEMM_MMA_TILE), instead of chosen by the model;
   *  `sms`: the GPU's multiprocessors (KC_EMU_SMS; the attention harness's default is 2); `attentionSplit`: the
   *  wgmma attention's stream-K, "off" (KINO_CUDA_ATTENTION_SPLIT=0) or "always" (wherever a block range cuts an
   *  item, which the small cases' few key tiles never pay for by default); `attentionParts`: the mma.sync
   *  attention's parts over the keys, forced (KINO_CUDA_ATTENTION_PARTS). */
  constructor(private readonly harness: { gemm: string; attention: string },
    opts: { kernels?: TensorCoreKernels; plant?: number; misalign?: boolean; wgmmaRuns?: boolean; attentionBkv?: 128 | 176;
      attentionBq?: 64 | 128; gemmMmaTile?: MmaTile; sms?: number; attentionSplit?: "off" | "always";
      attentionParts?: number } = {}) {
    super();
    this.#kernels = opts.kernels ?? "mma.sync";
    this.#plant = opts.plant ?? 0;
    this.#env = { ...(opts.misalign ? { KC_EMU_MISALIGN: "1" } : {}), ...(opts.wgmmaRuns ? { KC_EMU_WGMMA_RUNS: "1" } : {}),
      ...(opts.attentionBkv ? { KINO_CUDA_ATTENTION_BKV: String(opts.attentionBkv) } : {}),
      ...(opts.attentionBq ? { KINO_CUDA_ATTENTION_BQ: String(opts.attentionBq) } : {}),
      ...(opts.gemmMmaTile ? { KINO_CUDA_GEMM_MMA_TILE: opts.gemmMmaTile } : {}),
      ...(opts.sms ? { KC_EMU_SMS: String(opts.sms) } : {}),
      ...(opts.attentionSplit ? { KINO_CUDA_ATTENTION_SPLIT: opts.attentionSplit === "off" ? "0" : "always" } : {}),
      ...(opts.attentionParts ? { KINO_CUDA_ATTENTION_PARTS: String(opts.attentionParts) } : {}) };
  }

  #run(op: EmulatedCall["op"], parts: ArrayBufferView[], dims: Pick<EmulatedCall, "M" | "N" | "split" | "K" | "out" | "attention"> = {}): Uint8Array {
    const { out, lines } = runHarness(this.harness[op], op, parts, this.#plant, undefined, this.#env);
    const kernel = /^kernel ?(.*)$/.exec(lines[lines.length - 1] ?? "")?.[1] ?? "?";
    const runs = lines.flatMap((l): [number, [number, number][]][] => {
      const m = /^wgmma runs block (\d+):(.*)$/.exec(l);
      return m ? [[Number(m[1]), m[2]!.trim().split(" ").map((r) => r.split("x").map(Number) as [number, number])]] : [];
    });
    this.calls.push({ op, kernel, launches: lines.slice(0, -1).filter((l) => !l.startsWith("wgmma runs")), runs, ...dims });
    return out;
  }

  override gemm(out: Tensor, a: Tensor, w: Tensor, bias?: Tensor | null, epilogue?: GemmEpilogue | null): void {
    const { M, N, K, split } = P.gemmDims(out, a, w, bias, epilogue);
    const e = P.gemmEpilogueDims(out, epilogue);
    const residual = epilogue?.kind === "residual" ? epilogue : null;
    if (M === 0 || N === 0) return;
    const inPlace = residual !== null && residual.residual.ptr === out.ptr;
    const head = new Int32Array([M, N, K, DT[a.dtype]!, DT[w.dtype]!, DT[out.dtype]!, bias ? 1 : 0, e.gelu ? 1 : 0,
      !residual ? 0 : inPlace ? 2 : 1, residual?.gate ? 1 : 0, e.L, e.G, split, PATHS[this.#kernels].gemm]);
    const parts: ArrayBufferView[] = [head, this.bytesOf(a), this.bytesOf(w)];
    if (bias) parts.push(this.bytesOf(bias));
    if (residual) parts.push(this.bytesOf(residual.residual));
    if (residual?.gate) parts.push(this.bytesOf(residual.gate));
    this.bytesOf(out).set(this.#run("gemm", parts, { M, N, split, K, out: out.dtype }));
  }

  override attention(out: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): void {
    const { B, Lq, Lk, kvLen, H, D } = P.attentionDims(out, q, k, v, opts);
    const bc = opts.blockCausal;
    const head = new Int32Array([B, Lq, Lk, kvLen, H, D, DT[q.dtype]!, DT[out.dtype]!, opts.bias ? 1 : 0, bc?.blockSize ?? 0, bc?.qOffset ?? 0,
      PATHS[this.#kernels].attention]);
    const parts: ArrayBufferView[] = [head, new Float32Array([opts.scale]), this.bytesOf(q), this.bytesOf(k), this.bytesOf(v)];
    if (opts.bias) parts.push(this.bytesOf(opts.bias));
    this.bytesOf(out).set(this.#run("attention", parts, { attention: { B, Lq, H, D, kvLen, blockSize: bc?.blockSize ?? 0, qOffset: bc?.qOffset ?? 0 } }));
  }
}
