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
import { imageRoutes } from "../api/images/routes.ts";
import { modelRoutes } from "../api/models/routes.ts";
import { videoRoutes } from "../api/videos/routes.ts";
import { webRoutes } from "./web.ts";
import { realtimeRoutes, realtimeSocketSettings } from "../api/realtime/route.ts";

export function createApp(ctx: ServerContext) {
  const apiKey = ctx.config.config.server.api_key;
  return new Elysia({ websocket: realtimeSocketSettings(ctx) })
    .onRequest(({ request }) => {
      try {
        checkApiKey(request, apiKey);
      } catch (err) {
        return errorResponse(err as ApiError);
      }
    })
    .onError(({ code, error, request }) => {
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
    })
    .use(openapiPlugin())
    .use(healthRoutes(ctx))
    .use(modelRoutes(ctx))
    .use(videoRoutes(ctx))
    .use(imageRoutes(ctx))
    .use(realtimeRoutes(ctx))
    .use(webRoutes(ctx));
}
