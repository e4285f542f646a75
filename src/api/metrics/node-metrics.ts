// What GET /metrics shows on a node. Two kinds of figures:
//  - read when scraped, from what the node already knows: the job store's jobs by status (in a
//    cluster the whole cluster's, from Redis), the queue's depth (BullMQ's in a cluster, the engine's
//    own FIFO on one node), each worker process up or down, the realtime sessions holding a slot;
//  - counted here as things happen on this node: jobs it ran to their end, their latencies, realtime
//    chunk timings, bytes of finished artifacts, HTTP requests by route and status.
import type { JobStatus } from "../../../schemas/videos.ts";
import type { QueueDepth } from "../../engine/job-dispatch.ts";
import { Counter, Gauge, Histogram, Registry } from "./exposition.ts";

/** Where the scrape-time figures come from; the async ones are Redis reads in a cluster. */
export interface MetricSources {
  jobCounts(): Promise<Record<JobStatus, number>>;
  queueDepth(): Promise<QueueDepth>;
  workers(): { index: number; up: boolean }[];
  engineTasks(): { waiting: number; running: number };
  /** The node is part of a cluster: its job counts and queue depth come from Redis. */
  cluster: boolean;
}

/** A scrape answers even when Redis does not: its figures are left out and kino_redis_up says why. */
const SOURCE_TIMEOUT_MS = 2000;

/** Seconds, from a fast test pipeline's tens of milliseconds to a large model's quarter hour. */
const JOB_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
/** Seconds between realtime chunks: real time for a 4-frame chunk at 16 fps is 0.25 s. */
const CHUNK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.175, 0.25, 0.35, 0.5, 1, 2.5, 5, 10];

const STATUSES: JobStatus[] = ["queued", "in_progress", "completed", "failed"];

export class NodeMetrics {
  private readonly registry = new Registry();
  private readonly info = this.registry.add(new Gauge("kino_node_info", "This node: its cluster node id (or 'single') and mode; always 1", ["node", "mode"]));
  private readonly jobs = this.registry.add(
    new Gauge("kino_jobs", "Video jobs in the job store by status; in a cluster the whole cluster's (the same figure on every node)", ["status"]),
  );
  private readonly queue = this.registry.add(
    new Gauge("kino_queue_depth", "Video jobs in the job queue by state: the cluster's BullMQ queue (waiting, active, delayed), or this node's in-process queue (waiting, active)", ["state"]),
  );
  private readonly redisUp = this.registry.add(new Gauge("kino_redis_up", "1 when this scrape's reads from the cluster's Redis answered within 2 s; absent on a single node"));
  private readonly engineTasks = this.registry.add(
    new Gauge("kino_engine_tasks", "Tasks (video jobs, images, sync videos, realtime streams) in this node's engine by state", ["state"]),
  );
  private readonly workerUp = this.registry.add(new Gauge("kino_worker_up", "1 while the worker process is alive with its model loaded, else 0", ["worker"]));
  private readonly sessions = this.registry.add(new Gauge("kino_realtime_sessions_active", "Realtime sessions holding a slot on this node (starting or streaming)"));
  private readonly jobsRun = this.registry.add(new Counter("kino_jobs_run_total", "Video jobs this node ran to their end, by outcome: completed, failed, cancelled (deleted while running)", ["status"]));
  private readonly jobWait = this.registry.add(
    new Histogram("kino_job_wait_seconds", "Seconds from a video job's creation to its start on a worker of this node", JOB_BUCKETS),
  );
  private readonly jobLatency = this.registry.add(
    new Histogram("kino_job_latency_seconds", "Seconds from a video job's creation to its completion, for jobs this node completed", JOB_BUCKETS),
  );
  private readonly jobRun = this.registry.add(
    new Histogram("kino_job_run_seconds", "Seconds from a video job's start on a worker to its completion (generation, encoding, storing)", JOB_BUCKETS),
  );
  private readonly firstChunk = this.registry.add(
    new Histogram("kino_realtime_first_chunk_seconds", "Seconds from a realtime session's video.start to its first media chunk", CHUNK_BUCKETS),
  );
  private readonly chunkInterval = this.registry.add(
    new Histogram("kino_realtime_chunk_interval_seconds", "Seconds between consecutive media chunks of a realtime session", CHUNK_BUCKETS),
  );
  private readonly bytesWritten = this.registry.add(
    new Counter("kino_artifact_bytes_written_total", "Bytes of finished artifacts this node stored: MP4s of video jobs, kept images", ["kind"]),
  );
  private readonly requests = this.registry.add(
    new Counter("kino_http_requests_total", "HTTP requests answered by this node, by method, route pattern ('unrouted' for unknown paths and requests refused before routing) and status", ["method", "route", "status"]),
  );
  /** Realtime sessions holding a slot; the realtime route provides it. */
  activeSessions: () => number = () => 0;

  constructor(private readonly sources: MetricSources) {
    this.info.set({ node: "single", mode: sources.cluster ? "cluster" : "single" }, 1);
    for (const status of ["completed", "failed", "cancelled"]) this.jobsRun.inc({ status }, 0);
    for (const kind of ["video", "image"]) this.bytesWritten.inc({ kind }, 0);
    for (const histogram of [this.jobWait, this.jobLatency, this.jobRun, this.firstChunk, this.chunkInterval]) histogram.init({});
  }

  /** Names the node once it has its cluster id (known when it listens). */
  setNode(node: string): void {
    this.info.clear();
    this.info.set({ node, mode: this.sources.cluster ? "cluster" : "single" }, 1);
  }

  /** A video job this node ran started on a worker; times are epoch milliseconds. */
  jobStarted(createdAt: number, startedAt: number): void {
    this.jobWait.observe({}, seconds(startedAt - createdAt));
  }

  jobCompleted(createdAt: number, startedAt: number, completedAt: number, bytes: number): void {
    this.jobsRun.inc({ status: "completed" });
    this.jobLatency.observe({}, seconds(completedAt - createdAt));
    this.jobRun.observe({}, seconds(completedAt - startedAt));
    this.bytesWritten.inc({ kind: "video" }, bytes);
  }

  /** A video job this node ran ended without an artifact: it failed, or was deleted while it ran. */
  jobEnded(status: "failed" | "cancelled"): void {
    this.jobsRun.inc({ status });
  }

  imagesKept(bytes: number): void {
    this.bytesWritten.inc({ kind: "image" }, bytes);
  }

  /** A realtime media chunk went out; `sincePrevious` is from video.start for the first chunk. */
  chunkSent(first: boolean, sincePreviousMs: number): void {
    (first ? this.firstChunk : this.chunkInterval).observe({}, seconds(sincePreviousMs));
  }

  requestAnswered(method: string, route: string, status: number): void {
    this.requests.inc({ method, route, status: String(status) });
  }

  /** The page: scrape-time figures read now, then every family. */
  async render(): Promise<string> {
    const { sources } = this;
    const [counts, depth] = await Promise.all([within(sources.jobCounts()), within(sources.queueDepth())]);
    this.jobs.clear();
    if (counts) for (const status of STATUSES) this.jobs.set({ status }, counts[status]);
    this.queue.clear();
    if (depth) for (const [state, n] of Object.entries(depth)) this.queue.set({ state }, n);
    this.redisUp.clear();
    if (sources.cluster) this.redisUp.set({}, counts && depth ? 1 : 0);
    const tasks = sources.engineTasks();
    this.engineTasks.set({ state: "waiting" }, tasks.waiting);
    this.engineTasks.set({ state: "running" }, tasks.running);
    this.workerUp.clear();
    for (const { index, up } of sources.workers()) this.workerUp.set({ worker: String(index) }, up ? 1 : 0);
    this.sessions.set({}, this.activeSessions());
    return this.registry.render();
  }
}

const seconds = (ms: number) => Math.max(0, ms) / 1000;

/** The source's answer, or null when it failed or did not answer in time. */
async function within<T>(promise: Promise<T>): Promise<T | null> {
  let timer: Timer | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), SOURCE_TIMEOUT_MS)));
  try {
    return await Promise.race([promise.catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
