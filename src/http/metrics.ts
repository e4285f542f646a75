// GET /metrics: the node's figures in Prometheus' text format (src/api/metrics/). Outside /v1, so open
// like /health even with server.api_key: Prometheus scrapes every node directly on the operators'
// network, and the page holds counts and timings only — no prompt, id or path. A proxy in front of
// the nodes keeps it from the public side (deploy/nginx.conf).
import { Elysia } from "elysia";
import type { ServerContext } from "../api/context.ts";
import { EXPOSITION_CONTENT_TYPE } from "../api/metrics/exposition.ts";

export function metricsRoutes(ctx: ServerContext) {
  return new Elysia({ name: "metrics" }).get(
    "/metrics",
    async () => new Response(await ctx.metrics.render(), { headers: { "content-type": EXPOSITION_CONTENT_TYPE } }),
    {
      detail: {
        tags: ["health"],
        summary: "This node's metrics in Prometheus text format 0.0.4: jobs by status, queue depth, latencies, workers, sessions, requests",
        responses: { 200: { description: "text/plain; version=0.0.4", content: { [EXPOSITION_CONTENT_TYPE]: { schema: { type: "string" } } } } },
      },
    },
  );
}
