// Collects every reference a create body carries (current and legacy spellings, JSON and uploads)
// into ReferenceInputs for materialization, refusing what the loaded model cannot use.
import type { ReferenceObject } from "../../../schemas/references.ts";
import { badRequest } from "../errors.ts";
import type { ReferenceInput } from "../../media/references.ts";
import type { ModelCard } from "../../pipelines/pipeline.ts";

type Media = ReferenceInput["media"];
const URL_KEY = { image: "image_url", video: "video_url", audio: "audio_url" } as const;

export interface ReferenceFields {
  image_reference?: ReferenceObject | ReferenceObject[];
  video_reference?: ReferenceObject | ReferenceObject[];
  audio_reference?: ReferenceObject | ReferenceObject[];
  input_reference?: string | ReferenceObject;
  reference_url?: string;
  video_path?: string;
  video_url?: string;
}

export async function collectReferences(body: ReferenceFields, uploads: Map<string, File[]>, card: ModelCard): Promise<ReferenceInput[]> {
  const inputs: ReferenceInput[] = [];
  const objects = (field: keyof ReferenceFields & `${Media}_reference`, media: Media) => {
    const value = body[field];
    const list = value === undefined ? [] : Array.isArray(value) ? value : [value];
    list.forEach((ref, i) => inputs.push(fromObject(ref as ReferenceObject, media, Array.isArray(value) ? `${field}[${i}]` : field)));
  };
  objects("image_reference", "image");
  objects("video_reference", "video");
  objects("audio_reference", "audio");

  const legacy = body.input_reference;
  if (typeof legacy === "string") inputs.push(fromString(legacy, "image", "input_reference"));
  else if (legacy) inputs.push(fromObject(legacy, "image", "input_reference"));
  if (body.reference_url) inputs.push(fromString(body.reference_url, "image", "reference_url"));
  if (body.video_path) inputs.push(fromString(body.video_path, "video", "video_path"));
  if (body.video_url) inputs.push(fromString(body.video_url, "video", "video_url"));

  for (const [field, files] of uploads) {
    if (field !== "input_reference") throw badRequest(`Field '${field}' does not accept file uploads`, field);
    for (const file of files) {
      inputs.push({
        media: file.type.startsWith("video/") ? "video" : "image",
        source: { kind: "upload", bytes: new Uint8Array(await file.arrayBuffer()), filename: file.name, type: file.type },
        param: "input_reference",
      });
    }
  }

  for (const media of ["image", "video", "audio"] as const) {
    const mine = inputs.filter((i) => i.media === media);
    const max = card.max_references[media];
    if (mine.length > max) {
      const what = max === 0 ? `does not accept ${media} references` : `accepts at most ${max} ${media} reference(s)`;
      throw badRequest(`This model ${what} (got ${mine.length})`, mine[max]!.param);
    }
  }
  return inputs;
}

function fromObject(ref: ReferenceObject, media: Media, param: string): ReferenceInput {
  if (ref.file_id !== undefined) {
    throw badRequest(`${param}.file_id is not supported: kino has no Files store; send ${URL_KEY[media]} instead`, `${param}.file_id`);
  }
  const url = ref[URL_KEY[media]];
  if (!url) throw badRequest(`${param} needs '${URL_KEY[media]}'`, param);
  return fromString(url, media, `${param}.${URL_KEY[media]}`);
}

function fromString(value: string, media: Media, param: string): ReferenceInput {
  return { media, source: { kind: "string", value }, param };
}
