// Draining a node (SIGTERM): it takes no new work — new jobs and sessions are refused with 503, the
// cluster's registry shows it draining, its queue consumer pauses so other nodes take the queued jobs —
// ends its realtime sessions (session.done, reason "draining"), and gives running jobs until the
// deadline to finish; what still runs then is handed back to the queue (cluster) or failed (one node).
import type { ServerContext } from "./context.ts";
import type { JobsDrained } from "./videos/jobs.ts";

export interface DrainReport {
  /** Realtime sessions that were open. */
  sessions: number;
  jobs: JobsDrained;
}

export async function drainNode(ctx: ServerContext, timeoutMs: number): Promise<DrainReport> {
  const deadline = Date.now() + timeoutMs;
  ctx.node.startDraining();
  const [sessions, jobs] = await Promise.all([ctx.sessions.drain(deadline), ctx.videos.drain(deadline)]);
  // Sync videos and images answer their open requests if they finish in time; closing fails the rest.
  await ctx.engine.idle(deadline);
  return { sessions, jobs };
}
