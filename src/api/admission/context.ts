import type { LoadedConfig } from "../../config/load.ts";
import type { GenerationRequest, ModelCard } from "../../pipelines/pipeline.ts";

/** Operator-explicit default_request fields (only what the operator wrote; never prompt). */
export type OperatorDefaults = Partial<
  Pick<GenerationRequest, "negative_prompt" | "width" | "height" | "num_frames" | "fps" | "num_inference_steps" | "guidance_scale" | "seed">
>;

/** Everything admission needs to turn a client request into a GenerationRequest. */
export interface AdmissionContext {
  card: ModelCard;
  /** The public model id (LoRA nickname, served_model_name, or model_path). */
  servedModelId: string;
  operatorDefaults: OperatorDefaults;
  /** The adapter loaded at startup, if any; request selectors must match it. */
  startupLora: { nickname: string; path: string; strength: number } | null;
}

export function admissionContext(loaded: LoadedConfig, card: ModelCard): AdmissionContext {
  return {
    card,
    servedModelId: loaded.servedModelId(),
    // The config validated these fields against the request schema's types.
    operatorDefaults: loaded.operatorDefaults() as OperatorDefaults,
    startupLora: loaded.startupLora(),
  };
}
