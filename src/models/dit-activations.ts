// Which dtype a loaded DiT keeps its activations between tensor-core ops in (wan-dit.ts header):
// the backend's preference — bf16 on CUDA, f32 on the CPU — unless the operator sets
// KINO_DIT_ACTIVATIONS=f32 (to rule the bf16 rounding out when comparing against f32 results) or =bf16
// (the CUDA numerics on the CPU, slowly: every bf16 op runs on f32 copies there).
import type { ActivationDtype, Backend } from "../runtime/backend.ts";

export function ditActivations(backend: Pick<Backend, "activationDtype">, env: Record<string, string | undefined> = process.env): ActivationDtype {
  const v = env.KINO_DIT_ACTIVATIONS;
  if (v === undefined || v === "") return backend.activationDtype;
  if (v === "f32" || v === "bf16") return v;
  throw new Error(`KINO_DIT_ACTIVATIONS must be f32 or bf16, got "${v}"`);
}
