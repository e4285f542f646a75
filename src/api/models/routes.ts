// /v1/models: the served model (the startup LoRA's nickname when one is loaded) and its card.
import { Elysia } from "elysia";
import { ModelCardResponseSchema, ModelListSchema } from "../../../schemas/models.ts";
import type { ServerContext } from "../context.ts";
import { errorResponses, jsonResponse } from "../route-docs.ts";
import { notFound } from "../errors.ts";

export function modelRoutes(ctx: ServerContext) {
  const model = () => ({
    id: ctx.admission.servedModelId,
    object: "model" as const,
    created: ctx.startedAt,
    owned_by: "kino",
    root: ctx.config.config.generator.model_path,
  });
  return (
    new Elysia({ name: "models" })
      .get("/v1/models", () => ({ object: "list", data: [model()] }), {
        detail: { tags: ["models"], summary: "List the served model", responses: { ...jsonResponse("the list", ModelListSchema), ...errorResponses(401) } },
      })
      // Model ids may contain slashes (a checkpoint path), so match the rest of the path.
      .get("/v1/models/*", ({ params }) => {
        const id = decodeURIComponent(params["*"]);
        if (id !== ctx.admission.servedModelId) throw notFound(`Model '${id}' not found (model_not_found)`, "model");
        return { ...model(), card: ctx.engine.card };
      }, { detail: { tags: ["models"], summary: "Retrieve the served model and its card", responses: { ...jsonResponse("the model", ModelCardResponseSchema), ...errorResponses(401, 404) } } })
  );
}
