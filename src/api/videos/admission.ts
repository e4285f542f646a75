// POST /v1/videos (and session.start) → GenerationRequest, with the precedence rules of
// reference/http-contract-notes.md: client-explicit > operator-explicit default_request > model card.
import type { VideoCreateRequest } from "../../../schemas/videos.ts";
import type { ReferenceInput } from "../../media/references.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { AdmissionContext } from "../admission/context.ts";
import {
  checkFrames,
  checkLora,
  checkModel,
  framesForSeconds,
  resolveDimensions,
  resolveTask,
  sampling,
} from "../admission/checks.ts";
import { collectReferences } from "../admission/references.ts";

export interface AdmittedVideo {
  /** Everything but the materialized references, which the caller adds after materializing `references`. */
  request: GenerationRequest;
  references: ReferenceInput[];
  /** The job object's `size` and `seconds` as the client sees them. */
  size: string;
  seconds: string;
}

export async function admitVideo(
  body: VideoCreateRequest,
  uploads: Map<string, File[]>,
  requestId: string,
  ctx: AdmissionContext,
): Promise<AdmittedVideo> {
  const { card, operatorDefaults: op } = ctx;
  checkModel(body.model, ctx);
  checkLora(body.lora, ctx);
  const vp = body.video_params ?? {};

  // Size: size > top-level width/height > video_params > operator > card.
  const [width, height] = resolveDimensions(body.size, [[body, ""], [vp, "video_params."]], ctx);

  const fps = body.fps ?? vp.fps ?? op.fps ?? card.defaults.fps;

  // Frames: an explicit count (the request's, or the operator's default) must sit on the model's grid;
  // a count derived from seconds is moved onto it. Either is refused beyond the model's limit.
  let num_frames: number;
  if (body.num_frames !== undefined) num_frames = checkFrames(body.num_frames, card, "num_frames");
  else if (vp.num_frames !== undefined) num_frames = checkFrames(vp.num_frames, card, "video_params.num_frames");
  else if (body.seconds !== undefined) num_frames = framesForSeconds(Number(body.seconds), fps, card);
  else if (op.num_frames !== undefined) num_frames = checkFrames(op.num_frames, card, "default_request.sampling.num_frames");
  else num_frames = card.defaults.num_frames;

  const references = await collectReferences(body, uploads, card);
  const task = resolveTask(body.task, card, references.filter((r) => r.media === "image").length);
  const request: GenerationRequest = {
    request_id: requestId,
    output: "video",
    task,
    prompt: body.prompt,
    width,
    height,
    num_frames,
    fps,
    references: [],
    ...sampling(body, ctx),
  };
  const seconds = body.seconds !== undefined ? String(body.seconds) : String(Math.round((num_frames / fps) * 100) / 100);
  return { request, references, size: `${width}x${height}`, seconds };
}
