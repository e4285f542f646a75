// The browser page at `/`: plain HTML/CSS/ES modules from web/, embedded in the executable. One import
// per file, so `bun build --compile` embeds each one and a missing file fails the build, not a request.
// The page is public (auth guards /v1 only); its own API calls carry the key.
import { Elysia } from "elysia";
import type { ServerContext } from "../api/context.ts";
import indexHtml from "../../web/index.html" with { type: "file" };
import docsHtml from "../../web/docs.html" with { type: "file" };
import docsCss from "../../web/docs.css" with { type: "file" };
import docsJs from "../../web/docs.js" with { type: "file" };
import appCss from "../../web/app.css" with { type: "file" };
import apiJs from "../../web/api.js" with { type: "file" };
import domJs from "../../web/dom.js" with { type: "file" };
import generateJs from "../../web/generate.js" with { type: "file" };
import jobsJs from "../../web/jobs.js" with { type: "file" };
import liveJs from "../../web/live.js" with { type: "file" };
import logJs from "../../web/log.js" with { type: "file" };
import mainJs from "../../web/main.js" with { type: "file" };
import msePlayerJs from "../../web/mse-player.js" with { type: "file" };
import requestFormJs from "../../web/request-form.js" with { type: "file" };
import timelineJs from "../../web/timeline.js" with { type: "file" };

const JS = "text/javascript; charset=utf-8";

/** Public path → embedded file and its content type. */
const ASSETS: Record<string, [path: unknown, type: string]> = {
  "/web/app.css": [appCss, "text/css; charset=utf-8"],
  "/web/docs.css": [docsCss, "text/css; charset=utf-8"],
  "/web/docs.js": [docsJs, JS],
  "/web/api.js": [apiJs, JS],
  "/web/dom.js": [domJs, JS],
  "/web/generate.js": [generateJs, JS],
  "/web/jobs.js": [jobsJs, JS],
  "/web/live.js": [liveJs, JS],
  "/web/log.js": [logJs, JS],
  "/web/main.js": [mainJs, JS],
  "/web/mse-player.js": [msePlayerJs, JS],
  "/web/request-form.js": [requestFormJs, JS],
  "/web/timeline.js": [timelineJs, JS],
};

function serve(path: unknown, type: string): Response {
  // The files change with the executable, so the browser revalidates instead of caching stale modules.
  return new Response(Bun.file(path as string), { headers: { "Content-Type": type, "Cache-Control": "no-cache" } });
}

export function webRoutes(_ctx: ServerContext) {
  const app = new Elysia({ name: "web" })
    .get("/", () => serve(indexHtml, "text/html; charset=utf-8"))
    // The API reference, rendered in the browser from /openapi.json (no CDN-hosted viewer).
    .get("/docs", () => serve(docsHtml, "text/html; charset=utf-8"));
  for (const [route, [path, type]] of Object.entries(ASSETS)) app.get(route, () => serve(path, type));
  return app;
}
