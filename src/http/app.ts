// The Elysia app: route plugins over the shared ServerContext, plus the cross-cutting pieces
// (API key, the OpenAI error envelope for every failure).
import { Elysia } from "elysia";
import { InvalidMediaError } from "../media/errors.ts";
import { checkApiKey } from "./auth.ts";
import type { ServerContext } from "./context.ts";
import { ApiError, errorResponse } from "./errors.ts";
import { openapiPlugin } from "./openapi.ts";
import { healthRoutes } from "./routes/health.ts";
import { imageRoutes } from "./routes/images.ts";
import { modelRoutes } from "./routes/models.ts";
import { videoRoutes } from "./routes/videos.ts";
import { webRoutes } from "./routes/web.ts";
import { realtimeRoutes, realtimeSocketSettings } from "../realtime/route.ts";

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
