// Which dtype a loaded DiT keeps its activations between tensor-core ops in (wan-dit.ts header):
// the backend's preference — bf16 on CUDA, f32 on the CPU — once BF16_ACTIVATIONS_VERIFIED is set
// after a device run of tools/gpu-check.sh (step 6: x0 within its bound of f32 activations); until
// then f32, as the binary that ran on the H200 kept them. The operator's KINO_DIT_ACTIVATIONS=f32 or
// =bf16 overrides either (bf16 on the CPU gives the CUDA numerics, slowly: every bf16 op runs on f32
// copies there).
import type { ActivationDtype, Backend } from "../runtime/backend.ts";

export const BF16_ACTIVATIONS_VERIFIED = false;

export function ditActivations(backend: Pick<Backend, "activationDtype">, env: Record<string, string | undefined> = process.env,
  verified = BF16_ACTIVATIONS_VERIFIED): ActivationDtype {
  const v = env.KINO_DIT_ACTIVATIONS;
  if (v === undefined || v === "") return verified ? backend.activationDtype : "f32";
  if (v === "f32" || v === "bf16") return v;
  throw new Error(`KINO_DIT_ACTIVATIONS must be f32 or bf16, got "${v}"`);
}
