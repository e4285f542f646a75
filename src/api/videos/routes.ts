// /v1/videos: create (JSON or multipart), sync, list, retrieve, content, delete.
import { Elysia } from "elysia";
import {
  VideoCreateSchema,
  VideoDeletedSchema,
  VideoJobSchema,
  VideoListQuerySchema,
  VideoListSchema,
} from "../../../schemas/videos.ts";
import { admitVideo } from "./admission.ts";
import { GenerationError } from "../../engine/engine.ts";
import { newSyncRequestId, newVideoJobId } from "../ids.ts";
import { cleanUp } from "../cleanup.ts";
import { decodeForm } from "../form.ts";
import { reportedTimings } from "../timings.ts";
import { materializeReferences } from "../../media/references.ts";
import { decodeBody } from "../body.ts";
import type { ServerContext } from "../context.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import { createBody, errorResponses, jsonResponse } from "../route-docs.ts";
import { artifactResponse } from "../range.ts";
import { videoKey } from "../../engine/artifact-store.ts";
import { validateOrThrow } from "../validate.ts";

/** Validation, admission and reference materialization: everything that can fail before a job exists. */
async function admit(request: Request, ctx: ServerContext, requestId: string) {
  const body = await decodeBody(request, VideoCreateSchema, ctx.config.config.server.max_body_bytes, ["input_reference"]);
  const fields = validateOrThrow(VideoCreateSchema, body.fields, "video request");
  const admitted = await admitVideo(fields, body.uploads, requestId, ctx.admission);
  admitted.request.references = await materializeReferences(requestId, admitted.references, ctx.references);
  return admitted;
}

export function videoRoutes(ctx: ServerContext) {
  const create = async ({ request }: { request: Request }) => {
    ctx.node.refuseWhileDraining("job");
    const admitted = await admit(request, ctx, newVideoJobId());
    return await ctx.videos.submit({ ...admitted, model: ctx.admission.servedModelId });
  };
  const job = async (id: string) => {
    const record = await ctx.videos.store.get(id);
    if (!record) throw notFound(`No video with id '${id}'`, "video_id");
    return record;
  };

  const tags = ["videos"];
  const createDetail = {
    tags,
    summary: "Submit an asynchronous video job",
    requestBody: createBody(VideoCreateSchema),
    responses: { ...jsonResponse("the job, queued", VideoJobSchema), ...errorResponses(400, 401, 413, 415, 503) },
  };
  const mp4 = { content: { "video/mp4": { schema: { type: "string", format: "binary" } } } };
  return new Elysia({ name: "videos" })
    .post("/v1/videos", create, { parse: "none", detail: createDetail })
    .post("/v1/videos/generations", create, { parse: "none", detail: { ...createDetail, summary: "Alias of POST /v1/videos" } })
    .post("/v1/videos/sync", ({ request }) => sync(request, ctx), {
      parse: "none",
      detail: {
        tags,
        summary: "Generate and return the MP4 directly (X-Request-Id, X-Model, X-Inference-Time-S, X-Stage-Durations, X-Peak-Memory-MB)",
        requestBody: createBody(VideoCreateSchema),
        responses: { 200: { description: "the MP4", ...mp4 }, ...errorResponses(400, 401, 413, 415, 500, 503) },
      },
    })
    .get("/v1/videos", async ({ request }) => {
      // A query string is a urlencoded form: its numbers are read as JSON reads them (limit=2.5 is refused, not truncated).
      const form = new FormData();
      for (const [key, value] of new URL(request.url).searchParams) form.append(key, value);
      const q = validateOrThrow(VideoListQuerySchema, decodeForm(form, VideoListQuerySchema).fields, "list query");
      const page = await ctx.videos.store.list({ after: q.after, limit: q.limit ?? 20, order: q.order ?? "desc" });
      if (!page) throw badRequest(`No video with id '${q.after}' to page after`, "after");
      const { data, has_more } = page;
      return { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more };
    }, { detail: { tags, summary: "List jobs (after, limit 1–100, order asc|desc)", responses: { ...jsonResponse("a page", VideoListSchema), ...errorResponses(400, 401) } } })
    .get("/v1/videos/:id", async ({ params }) => (await job(params.id)).job, {
      detail: { tags, summary: "Retrieve a job (a failed job is 200 with status failed)", responses: { ...jsonResponse("the job", VideoJobSchema), ...errorResponses(401, 404) } },
    })
    .get("/v1/videos/:id/content", async ({ params, query, request }) => {
      const variant = query.variant ?? "video";
      if (variant !== "video") throw badRequest(`Variant '${variant}' is not available; kino stores only 'video'`, "variant");
      const record = await job(params.id);
      if (record.job.status === "failed") {
        throw new ApiError(422, `Video '${params.id}' failed: ${record.job.error?.message}`, "video_id");
      }
      if (record.job.status !== "completed") throw notFound(`Video '${params.id}' is not ready (status ${record.job.status})`, "video_id");
      const presigned = ctx.videos.presignedUrl(params.id);
      if (presigned) return Response.redirect(presigned, 307);
      const artifact = await ctx.videos.artifacts.open(videoKey(params.id));
      if (!artifact) throw new ApiError(500, `Video '${params.id}' is completed but its file is missing from storage`, "video_id");
      return artifactResponse(artifact, "video/mp4", request.headers.get("range"), {
        "Content-Disposition": `inline; filename="${record.job.file_name}"`,
      });
    }, { detail: { tags, summary: "Download a completed MP4 (Range requests served)", responses: { 200: { description: "the MP4", ...mp4 }, ...errorResponses(400, 401, 404, 416, 422) } } })
    .delete("/v1/videos/:id", async ({ params }) => {
      if (!(await ctx.videos.delete(params.id))) throw notFound(`No video with id '${params.id}'`, "video_id");
      return { id: params.id, object: "video.deleted", deleted: true };
    }, { detail: { tags, summary: "Delete a job and its artifact", responses: { ...jsonResponse("deleted", VideoDeletedSchema), ...errorResponses(401, 404) } } });
}

/** POST /v1/videos/sync: generate, stream the MP4 with timing headers, then remove the temporary file. */
async function sync(request: Request, ctx: ServerContext): Promise<Response> {
  ctx.node.refuseWhileDraining("generation");
  const admitted = await admit(request, ctx, newSyncRequestId());
  let run;
  try {
    run = await ctx.videos.runSync(admitted.request);
  } catch (err) {
    if (err instanceof GenerationError) throw new ApiError(500, `Generation failed: ${err.message}`);
    throw err;
  }
  const { path, result } = run;
  const file = Bun.file(path);
  const size = file.size;
  const reader = file.stream().getReader();
  const cleanup = () => void cleanUp(ctx.log, path);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        cleanup();
      } else controller.enqueue(value);
    },
    cancel: cleanup,
  });
  const timings = reportedTimings(result);
  return new Response(body, {
    headers: {
      "Content-Type": "video/mp4",
      "Content-Length": String(size),
      "Content-Disposition": `inline; filename="${admitted.request.request_id}.mp4"`,
      "X-Request-Id": admitted.request.request_id,
      "X-Model": ctx.admission.servedModelId,
      "X-Inference-Time-S": timings.inference_time_s.toFixed(3),
      "X-Stage-Durations": JSON.stringify(timings.stage_durations),
      "X-Peak-Memory-MB": String(timings.peak_memory_mb ?? ""),
    },
  });
}
