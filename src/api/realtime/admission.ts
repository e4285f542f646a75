// session.start → an admitted streaming request: sampling_params flattening, the session-level
// pacing options, validation, and the same admission as POST /v1/videos.
import { SessionStartSchema, type SessionStart } from "../../../schemas/realtime.ts";
import { VideoCreateSchema } from "../../../schemas/videos.ts";
import { admitVideo, type AdmittedVideo } from "../videos/admission.ts";
import { badRequest } from "../errors.ts";
import { validateOrThrow } from "../validate.ts";
import type { AdmissionContext } from "../admission/context.ts";

export interface Pacing {
  leadChunks: number;
}

export interface AdmittedStart {
  admitted: AdmittedVideo;
  pacing: Pacing | null;
}

/**
 * vLLM-Omni clients may nest sampling fields in `sampling_params`: keys that are request fields and
 * not already present are lifted to the top level; the rest merge into extra_params (top-level
 * extra_params keys win).
 */
export function flattenSamplingParams(message: Record<string, unknown>): Record<string, unknown> {
  const { sampling_params, ...rest } = message;
  if (sampling_params === undefined || sampling_params === null) return rest;
  if (typeof sampling_params !== "object" || Array.isArray(sampling_params)) {
    throw badRequest("sampling_params must be an object", "sampling_params");
  }
  // Own keys only, and entries rebuilt with Object.fromEntries, so "__proto__" stays a plain key.
  const entries = Object.entries(sampling_params);
  const lifted = entries.filter(([key]) => Object.hasOwn(VideoCreateSchema.properties, key) && !Object.hasOwn(rest, key));
  const extra = entries.filter(([key]) => !Object.hasOwn(VideoCreateSchema.properties, key));
  const flat = Object.fromEntries([...Object.entries(rest), ...lifted]);
  if (extra.length) {
    const given = flat.extra_params;
    if (given !== undefined && (typeof given !== "object" || given === null || Array.isArray(given))) {
      throw badRequest("extra_params must be an object", "extra_params");
    }
    flat.extra_params = Object.fromEntries([...extra, ...Object.entries(given ?? {})]);
  }
  return flat;
}

/**
 * Pacing is a property of the session, not of the model, so its two extra_params keys are taken out
 * before the model card checks the rest.
 */
function takePacing(fields: SessionStart, defaultLead: number): Pacing | null {
  const extra = fields.extra_params;
  if (!extra) return null;
  const { pace_to_media_time: pace, pace_lead_chunks: lead, ...rest } = extra;
  fields.extra_params = rest;
  if (pace !== undefined && typeof pace !== "boolean") throw badRequest("extra_params.pace_to_media_time must be a boolean", "extra_params.pace_to_media_time");
  if (lead !== undefined && !(Number.isInteger(lead) && (lead as number) >= 0)) {
    throw badRequest("extra_params.pace_lead_chunks must be an integer ≥ 0", "extra_params.pace_lead_chunks");
  }
  return pace ? { leadChunks: (lead as number | undefined) ?? defaultLead } : null;
}

export async function admitStart(
  message: Record<string, unknown>,
  requestId: string,
  ctx: AdmissionContext,
  defaultLead: number,
): Promise<AdmittedStart> {
  const fields = validateOrThrow(SessionStartSchema, flattenSamplingParams(message), "session.start");
  const pacing = takePacing(fields, defaultLead);
  const { type: _type, format: _format, ...request } = fields;
  if (!ctx.card.supports_streaming) throw badRequest("The served model does not support realtime streaming", "model");
  const admitted = await admitVideo(request, new Map(), requestId, ctx);
  return { admitted, pacing };
}
