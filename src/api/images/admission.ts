// POST /v1/images and /v1/images/edits → GenerationRequest (output "image": one frame per image).
import type { ImageEditRequest, ImageGenerateRequest } from "../../../schemas/images.ts";
import type { ReferenceObject } from "../../../schemas/references.ts";
import { badRequest } from "../errors.ts";
import type { ImageFormat } from "../../media/images.ts";
import type { ReferenceInput } from "../../media/references.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { AdmissionContext } from "../admission/context.ts";
import { checkLora, checkModel, resolveDimensions, sampling } from "../admission/checks.ts";

export interface AdmittedImages {
  request: GenerationRequest;
  references: ReferenceInput[];
  format: ImageFormat;
  quality: number;
  responseFormat: "url" | "b64_json";
  size: string;
}

export async function admitImages(
  body: ImageGenerateRequest | ImageEditRequest,
  uploads: Map<string, File[]>,
  requestId: string,
  ctx: AdmissionContext,
  edit: boolean,
): Promise<AdmittedImages> {
  const { card, operatorDefaults: op } = ctx;
  checkModel(body.model, ctx);
  checkLora(body.lora, ctx);
  if (!card.supports_images) throw badRequest("The served model does not generate images", null);

  const [width, height] = resolveDimensions(body.size, [[body, ""]], ctx);

  const references = edit ? await editInputs(body as ImageEditRequest, uploads) : rejectUploads(uploads);
  if (references.length > card.max_references.image) {
    throw badRequest(`This model accepts at most ${card.max_references.image} input image(s) (got ${references.length})`, "image");
  }
  const request: GenerationRequest = {
    request_id: requestId,
    output: "image",
    task: references.length ? "i2v" : "t2v",
    prompt: body.prompt,
    width,
    height,
    num_frames: body.n ?? 1,
    fps: op.fps ?? card.defaults.fps,
    references: [],
    ...sampling(body, ctx),
  };
  if (request.task === "i2v" && !card.tasks.includes("i2v")) throw badRequest("The served model cannot condition on images", "image");
  if (request.task === "t2v" && !card.tasks.includes("t2v")) {
    throw badRequest("The served model makes images only from an input image (task 'i2v'): use POST /v1/images/edits with one image", null);
  }
  return {
    request,
    references,
    format: body.output_format ?? "png",
    quality: body.output_compression ?? 90,
    responseFormat: body.response_format ?? "b64_json",
    size: `${width}x${height}`,
  };
}

function rejectUploads(uploads: Map<string, File[]>): ReferenceInput[] {
  for (const field of uploads.keys()) throw badRequest(`Field '${field}' does not accept file uploads`, field);
  return [];
}

/** Edits take images as uploads (`image`, `image[]`), URL strings or reference objects. */
async function editInputs(body: ImageEditRequest, uploads: Map<string, File[]>): Promise<ReferenceInput[]> {
  if (body.mask !== undefined || uploads.has("mask")) throw badRequest("mask is not supported by this model", "mask");
  const inputs: ReferenceInput[] = [];
  const listed = [body.image, body.images].flatMap((v, which) => {
    const field = which === 0 ? "image" : "images";
    const list = v === undefined ? [] : Array.isArray(v) ? v : [v];
    return list.map((item, i) => ({ item, param: Array.isArray(v) ? `${field}[${i}]` : field }));
  });
  for (const { item, param } of listed) {
    const url = typeof item === "string" ? item : imageUrl(item, param);
    inputs.push({ media: "image", source: { kind: "string", value: url }, param });
  }
  for (const [field, files] of uploads) {
    if (field !== "image") throw badRequest(`Field '${field}' does not accept file uploads`, field);
    for (const file of files) {
      const bytes = new Uint8Array(await file.arrayBuffer());
      inputs.push({ media: "image", source: { kind: "upload", bytes, filename: file.name, type: file.type }, param: "image" });
    }
  }
  if (!inputs.length) throw badRequest("An edit needs at least one input image in 'image'", "image");
  return inputs;
}

function imageUrl(ref: ReferenceObject, param: string): string {
  if (ref.file_id !== undefined) throw badRequest(`${param}.file_id is not supported: kino has no Files store`, `${param}.file_id`);
  if (!ref.image_url) throw badRequest(`${param} needs 'image_url'`, param);
  return ref.image_url;
}
