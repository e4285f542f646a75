import { Elysia } from "elysia";
import type { ServerContext } from "../api/context.ts";
import { ApiError } from "../api/errors.ts";
import { errorResponse } from "./errors.ts";
import { errorResponses } from "../api/route-docs.ts";

const HEALTHY_EXAMPLE =
  '{"status":"ok","workers":[{"index":0,"pid":4242,"state":"ready","gpu":0,"device":{"backend":"CUDA NVIDIA H200 (sm_90, 139 GiB)","cuda_visible_devices":"0","pci_bus_id":"0000:19:00.0"}}]}';

/**
 * Liveness: the engine is open and every worker process is alive with its model loaded. The 200 body
 * lists the workers — the GPU each is pinned to, the device it found itself on, whether it is busy — so
 * an operator can see that N GPUs run N workers on N distinct devices and how many are free.
 */
export function healthRoutes(ctx: ServerContext) {
  return new Elysia({ name: "health" }).get(
    "/health",
    () => {
      if (ctx.engine.healthy()) return { status: "ok", workers: ctx.engine.workerStatus() };
      const waiting = ctx.engine.workerStatus().filter((w) => w.state === "down" || w.state === "loading");
      const which = waiting.map((w) => `worker ${w.index} is ${w.state === "down" ? "down and restarting" : "loading the model"}`).join(", ");
      return errorResponse(new ApiError(503, `The generation engine is not available (${which || "it is closed"})`));
    },
    {
      detail: {
        tags: ["health"],
        summary: "Liveness: engine open and every worker alive; lists the workers and their devices",
        responses: { 200: { description: HEALTHY_EXAMPLE }, ...errorResponses(503) },
      },
    },
  );
}
