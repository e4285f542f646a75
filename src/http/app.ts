// The Elysia app: route plugins over the shared ServerContext, plus the cross-cutting pieces
// (API key, the OpenAI error envelope for every failure).
import { Elysia } from "elysia";
import { InvalidMediaError } from "../media/errors.ts";
import { StorageError } from "../media/storage.ts";
import { checkApiKey } from "./auth.ts";
import type { ServerContext } from "../api/context.ts";
import { ApiError } from "../api/errors.ts";
import { errorResponse } from "./errors.ts";
import { openapiPlugin } from "./openapi.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";
import { imageRoutes } from "../api/images/routes.ts";
import { modelRoutes } from "../api/models/routes.ts";
import { videoRoutes } from "../api/videos/routes.ts";
import { webRoutes } from "./web.ts";
import { realtimeRoutes, realtimeSocketSettings } from "../api/realtime/route.ts";

/** The route label of a request no route took: an unknown path, or one refused before routing (401). */
const UNROUTED = "unrouted";

export function createApp(ctx: ServerContext) {
  const apiKey = ctx.config.config.server.api_key;
  const answered = (request: Request, route: string | undefined, response: Response) => {
    ctx.metrics.requestAnswered(request.method, route || UNROUTED, response.status);
    return response;
  };
  return new Elysia({ websocket: realtimeSocketSettings(ctx) })
    .onRequest(({ request }) => {
      try {
        checkApiKey(request, apiKey);
      } catch (err) {
        return answered(request, undefined, errorResponse(err as ApiError));
      }
    })
    .onError(({ code, error, request, route }) => answered(request, route, errorFor(ctx, code, error, request)))
    // Every answer but the errors above (counted where they are made): a handler's own Response, a
    // value Elysia serializes with set.status, or a WebSocket upgrade (101; Elysia reports it as 200).
    .onAfterResponse((c) => {
      if ("error" in c) return;
      const { responseValue, set, request, route } = c as typeof c & { responseValue?: unknown };
      const upgraded = request.headers.get("upgrade")?.toLowerCase() === "websocket" && !(responseValue instanceof Response);
      const status = upgraded ? 101 : responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200;
      ctx.metrics.requestAnswered(request.method, route || UNROUTED, status);
    })
    .use(openapiPlugin())
    .use(healthRoutes(ctx))
    .use(metricsRoutes(ctx))
    .use(modelRoutes(ctx))
    .use(videoRoutes(ctx))
    .use(imageRoutes(ctx))
    .use(realtimeRoutes(ctx))
    .use(webRoutes(ctx));
}

/** The OpenAI error envelope for any failure below the routes. */
function errorFor(ctx: ServerContext, code: unknown, error: unknown, request: Request): Response {
  if (error instanceof ApiError) return errorResponse(error);
  if (error instanceof InvalidMediaError) return errorResponse(new ApiError(400, error.message, error.param));
  if (error instanceof StorageError) return errorResponse(new ApiError(500, error.message));
  if (code === "NOT_FOUND") {
    const { pathname } = new URL(request.url);
    return errorResponse(new ApiError(404, `Unknown route ${request.method} ${pathname}`));
  }
  if (code === "PARSE" || code === "VALIDATION") return errorResponse(new ApiError(400, (error as Error).message));
  ctx.log(`internal error on ${request.method} ${request.url}: ${(error as Error)?.stack ?? error}`);
  return errorResponse(new ApiError(500, `Internal server error: ${(error as Error)?.message ?? error}`));
}
