import type { LoadedConfig } from "../config/load.ts";
import type { AdmissionContext } from "./admission/context.ts";
import type { Engine } from "../engine/engine.ts";
import type { ImageJobs } from "./images/jobs.ts";
import type { VideoJobs } from "./videos/jobs.ts";
import type { ReferencePolicy } from "../media/references.ts";
import type { ServingNode } from "./node.ts";
import type { RealtimeSessions } from "./realtime/sessions.ts";
import type { NodeMetrics } from "./metrics/node-metrics.ts";

/** What the routes share; passed to each route plugin instead of living in globals. */
export interface ServerContext {
  config: LoadedConfig;
  engine: Engine;
  videos: VideoJobs;
  images: ImageJobs;
  admission: AdmissionContext;
  /** What GET /metrics shows; the serving layer counts into it. */
  metrics: NodeMetrics;
  references: ReferencePolicy;
  /** Draining, and the cluster's node registry. */
  node: ServingNode;
  /** Open realtime sessions and their slots. */
  sessions: RealtimeSessions;
  /** Unix seconds when the model was loaded (the model object's `created`). */
  startedAt: number;
  log(line: string): void;
}
