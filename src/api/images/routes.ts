// /v1/images: generate (+ /v1/images/generations), edits, and content downloads.
import { Elysia } from "elysia";
import type { TObject } from "@sinclair/typebox";
import { ImageEditSchema, ImageGenerateSchema, ImagesResponseSchema, type ImagesResponse } from "../../../schemas/images.ts";
import { admitImages } from "./admission.ts";
import { GenerationError } from "../../engine/engine.ts";
import { newImageRequestId } from "../ids.ts";
import { reportedTimings } from "../timings.ts";
import { materializeReferences } from "../../media/references.ts";
import { decodeBody } from "../body.ts";
import type { ServerContext } from "../context.ts";
import { ApiError, notFound } from "../errors.ts";
import { createBody, errorResponses, jsonResponse } from "../route-docs.ts";
import { artifactResponse } from "../range.ts";
import { validateOrThrow } from "../validate.ts";

async function generate(request: Request, ctx: ServerContext, schema: TObject, edit: boolean): Promise<ImagesResponse> {
  ctx.node.refuseWhileDraining("generation");
  const body = await decodeBody(request, schema, ctx.config.config.server.max_body_bytes, edit ? ["image", "mask"] : []);
  const fields = validateOrThrow(schema, body.fields, edit ? "image edit request" : "image request");
  const requestId = newImageRequestId();
  const admitted = await admitImages(fields as never, body.uploads, requestId, ctx.admission, edit);
  admitted.request.references = await materializeReferences(requestId, admitted.references, ctx.references);
  let run;
  try {
    run = await ctx.images.generate(admitted.request, admitted.format, admitted.quality, admitted.responseFormat === "b64_json");
  } catch (err) {
    if (err instanceof GenerationError) throw new ApiError(500, `Generation failed: ${err.message}`);
    throw err;
  }
  // Absolute only on the operator's public_url: the Host header is the client's to choose.
  const base = ctx.config.config.server.public_url?.replace(/\/+$/, "") ?? "";
  // the prompt the model ran on: the request's, or the model's extension of it from the given image
  const revised_prompt = run.result.revised_prompt ?? admitted.request.prompt;
  const data = run.images.map((image) =>
    image.bytes
      ? { b64_json: Buffer.from(image.bytes).toString("base64"), revised_prompt }
      : { url: `${base}/v1/images/${image.id}/content`, revised_prompt },
  );
  return {
    created: Math.floor(Date.now() / 1000),
    data,
    id: requestId,
    model: ctx.admission.servedModelId,
    output_format: admitted.format,
    size: admitted.size,
    ...reportedTimings(run.result),
  };
}

export function imageRoutes(ctx: ServerContext) {
  const create = ({ request }: { request: Request }) => generate(request, ctx, ImageGenerateSchema, false);
  const tags = ["images"];
  const responses = { ...jsonResponse("the images", ImagesResponseSchema), ...errorResponses(400, 401, 413, 415, 500, 503) };
  const detail = { tags, summary: "Generate images", requestBody: createBody(ImageGenerateSchema), responses };
  return new Elysia({ name: "images" })
    .post("/v1/images", create, { parse: "none", detail })
    .post("/v1/images/generations", create, { parse: "none", detail: { ...detail, summary: "Alias of POST /v1/images" } })
    .post("/v1/images/edits", ({ request }) => generate(request, ctx, ImageEditSchema, true), {
      parse: "none",
      detail: { tags, summary: "Generate images from input images (multipart image / image[], or JSON references)", requestBody: createBody(ImageEditSchema), responses },
    })
    .get("/v1/images/:id/content", async ({ params, request }) => {
      const image = await ctx.images.get(params.id);
      if (!image) throw notFound(`No image with id '${params.id}'`, "image_id");
      const artifact = await ctx.images.open(image);
      if (!artifact) throw new ApiError(500, `Image '${params.id}' is kept but its file is missing from storage`, "image_id");
      return artifactResponse(artifact, image.mime, request.headers.get("range"));
    }, { detail: { tags, summary: "Download a generated image", responses: { 200: { description: "the image" }, ...errorResponses(401, 404) } } });
}
