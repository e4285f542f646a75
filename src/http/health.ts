import { Elysia } from "elysia";
import type { ServerContext } from "../api/context.ts";
import { ApiError } from "../api/errors.ts";
import { errorResponse } from "./errors.ts";
import { errorResponses } from "../api/route-docs.ts";

/** Liveness: the engine is open and every worker process is alive with its model loaded. */
export function healthRoutes(ctx: ServerContext) {
  return new Elysia({ name: "health" }).get("/health", () =>
    ctx.engine.healthy()
      ? { status: "ok" }
      : errorResponse(new ApiError(503, "The generation engine is not available (a worker process is down or restarting)")),
    { detail: { tags: ["health"], summary: "Liveness: engine open and every worker alive", responses: { 200: { description: '{"status":"ok"}' }, ...errorResponses(503) } } },
  );
}
