// What `kino status` reports about a cluster: its live nodes (from the registry), the depth of its job
// queue (BullMQ), and how many of the kept jobs are in each status.
import { Queue } from "bullmq";
import type Redis from "ioredis";
import type { VideoJob } from "../../schemas/videos.ts";
import { listNodes, type NodeEntry } from "./node-registry.ts";
import { PREFIX } from "./queue-dispatch.ts";
import { countJobs, jobsNamespace } from "./redis-store.ts";

export interface ClusterStatus {
  queue: { name: string; waiting: number; active: number; delayed: number };
  /** The kept job records (server.max_jobs) by status; failed ones stay listed until evicted. */
  jobs: Record<VideoJob["status"], number>;
  nodes: NodeEntry[];
}

export async function readClusterStatus(redis: Redis, queueName: string): Promise<ClusterStatus> {
  const queue = new Queue(queueName, { connection: redis, prefix: PREFIX });
  try {
    const counts = await queue.getJobCounts("waiting", "active", "delayed");
    return {
      queue: { name: queueName, waiting: counts.waiting ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0 },
      jobs: await countJobs(redis, jobsNamespace(queueName)),
      nodes: await listNodes(redis, queueName),
    };
  } finally {
    await queue.close();
  }
}
