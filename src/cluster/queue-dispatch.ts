// The cluster's dispatch: a BullMQ queue on the shared Redis. The node that accepts a job stores its
// references and queues it under the video id; every node consumes with as many jobs at once as it
// has workers, and runs each through the serving layer's own RunJob. A node that dies mid-job stops
// renewing its lock; after cluster.stall_ms another node's stalled-job check puts the job back and it
// runs again elsewhere, up to cluster.max_attempts runs in all.
import { Queue, QueueEvents, WaitingError, Worker, type Job } from "bullmq";
import type Redis from "ioredis";
import { basename, join } from "node:path";
import type { ArtifactStore } from "../engine/artifact-store.ts";
import type { Engine } from "../engine/engine.ts";
import type { JobDispatch, QueueDepth, RunJob } from "../engine/job-dispatch.ts";
import type { JobStore } from "../engine/job-store.ts";
import { removeReferences } from "../media/references.ts";
import type { GenerationRequest } from "../pipelines/pipeline.ts";

export interface QueueSettings {
  queue: string;
  stallMs: number;
  maxAttempts: number;
  /** Jobs this node runs at once: its worker processes. */
  concurrency: number;
}

interface QueuedVideo {
  /** The admitted request; its references' paths are artifact-store keys while queued. */
  request: GenerationRequest;
}

/** BullMQ's key prefix; the queue's name follows it, as in `kino:<queue>:<job id>`. */
export const PREFIX = "kino";

export class QueueDispatch implements JobDispatch {
  /** Another node takes over what this one could not finish before it stopped. */
  readonly handsBack = true;
  private draining = false;
  /** Hand-backs under way: close() waits for them, so no job is left locked by a node that left. */
  private readonly handingBack = new Set<Promise<number>>();
  private readonly queue: Queue<QueuedVideo>;
  private readonly events: QueueEvents;
  private readonly subscriber: Redis;
  private worker: Worker<QueuedVideo> | null = null;
  private run: RunJob | null = null;
  private nodeId = "";

  constructor(
    private readonly redis: Redis,
    private readonly settings: QueueSettings,
    private readonly engine: Engine,
    private readonly store: JobStore,
    private readonly artifacts: ArtifactStore,
    private readonly outputDir: string,
    private readonly log: (line: string) => void,
  ) {
    this.queue = new Queue(settings.queue, { connection: redis, prefix: PREFIX });
    this.events = new QueueEvents(settings.queue, { connection: redis.duplicate(), prefix: PREFIX });
    // A job BullMQ gave up on (its node died max_attempts times) never reaches a processor: fail its record.
    this.events.on("failed", ({ jobId, failedReason }) => void this.gaveUp(jobId, failedReason));
    this.subscriber = redis.duplicate();
    void this.subscriber.subscribe(this.cancelChannel);
    // Every node hears every cancel; the one running the job aborts it (the others have nothing to stop).
    this.subscriber.on("message", (channel, id) => channel === this.cancelChannel && this.engine.cancel(id));
  }

  private get cancelChannel(): string {
    return `${PREFIX}:${this.settings.queue}:cancel`;
  }

  serve(run: RunJob): void {
    this.run = run;
  }

  /** Starts taking jobs as `nodeId`, as many at once as this node has workers. */
  consume(nodeId: string): void {
    this.nodeId = nodeId;
    const { queue, stallMs, maxAttempts, concurrency } = this.settings;
    this.worker = new Worker<QueuedVideo>(queue, (job) => this.process(job), {
      connection: this.redis,
      prefix: PREFIX,
      name: nodeId,
      concurrency,
      lockDuration: stallMs,
      stalledInterval: Math.max(1000, Math.floor(stallMs / 2)),
      maxStalledCount: maxAttempts - 1,
    });
    this.worker.on("error", (err) => this.log(`cluster queue: ${err.message}`));
  }

  async dispatch(id: string, request: GenerationRequest): Promise<void> {
    // References go to the artifact store first: the node that runs the job may be any node.
    const references = [];
    for (const reference of request.references) {
      const key = `references/${id}/${basename(reference.path)}`;
      await this.artifacts.put(key, reference.path);
      references.push({ ...reference, path: key });
    }
    await removeReferences(this.outputDir, id);
    await this.queue.add("video", { request: { ...request, references } }, { jobId: id, removeOnComplete: true, removeOnFail: true });
  }

  async cancel(id: string): Promise<void> {
    await this.redis.publish(this.cancelChannel, id);
    // A job still waiting leaves the queue; an active one is locked and stays until its run aborts.
    await this.queue.remove(id).catch(() => 0);
  }

  /**
   * Pauses this node's consumer: BullMQ fetches no more jobs for it, so other nodes take the queued
   * ones; the jobs it holds go on, their locks renewed.
   */
  async stopTaking(): Promise<void> {
    this.draining = true;
    await this.worker?.pause(true);
  }

  /** The whole cluster's queue, as BullMQ counts it (one Redis round trip). */
  async depth(): Promise<QueueDepth> {
    const counts = await this.queue.getJobCounts("waiting", "active", "delayed");
    return { waiting: counts.waiting ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0 };
  }

  private async process(job: Job<QueuedVideo>, token?: string): Promise<void> {
    const id = job.id!;
    const { request } = job.data;
    // A consumer blocked waiting for a job when it was paused may still take one: it goes straight back.
    if (this.draining) return this.handBack(job, token);
    // Which node ran which job, and whether it is a rerun after a node died: the operator's trail.
    this.log(`cluster: job ${id} runs on ${this.nodeId}${job.stalledCounter ? ` (again: its node stopped ${job.stalledCounter}×)` : ""}`);
    const keys = request.references.map((reference) => reference.path);
    const references = [];
    for (const reference of request.references) {
      const path = join(this.outputDir, "references", id, basename(reference.path));
      await this.artifacts.download(reference.path, path);
      references.push({ ...reference, path });
    }
    // RunJob records the outcome (completed or failed) itself; BullMQ only sees a job that ended.
    // job.timestamp is when the job was added (kept across a rerun), so its latency is the user's wait.
    const end = await this.run!(id, { ...request, references }, job.timestamp);
    // Its references stay in the store for the node that takes it over.
    if (end === "handed_back") return this.handBack(job, token);
    for (const key of keys) {
      const failed = await this.artifacts.remove(key);
      if (failed) this.log(`job ${id}: ${failed.message}`);
    }
  }

  /**
   * Puts a job this node holds back in the waiting list at once (not after stall_ms, and without
   * counting as a node death against max_attempts); the WaitingError tells BullMQ the job did not end.
   */
  private async handBack(job: Job<QueuedVideo>, token: string | undefined): Promise<never> {
    const moved = job.moveToWait(token);
    this.handingBack.add(moved);
    await moved.finally(() => this.handingBack.delete(moved));
    this.log(`cluster: job ${job.id} handed back to the queue by ${this.nodeId} (draining)`);
    throw new WaitingError();
  }

  private async gaveUp(id: string, reason: string): Promise<void> {
    const message = /stalled/.test(reason)
      ? `Every node that ran this job stopped responding (${runs(this.settings.maxAttempts)}, cluster.max_attempts)`
      : `The cluster's queue failed the job: ${reason}`;
    await this.store.update(id, { status: "failed", completed_at: Math.floor(Date.now() / 1000), error: { code: "generation_failed", message } });
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.handingBack);
    // force: a job still running here is left to the stalled-job check, which gives it to another node.
    await this.worker?.close(true);
    await this.events.close();
    await this.queue.close();
    this.subscriber.disconnect();
  }
}

const runs = (n: number) => (n === 1 ? "1 run" : `${n} runs`);
