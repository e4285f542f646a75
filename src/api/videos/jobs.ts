// The video job lifecycle on top of the engine: queued → in_progress → completed | failed, with
// real progress, server-chosen output paths, and deletion that never leaves an artifact behind. A disk
// fault fails the job it hit (with a message naming what could not be written), never the server.
// The same lifecycle serves one node and a cluster: the job store, the artifact store and the dispatch
// (run here now, or queue for whichever node takes it) are what differ.
import { join } from "node:path";
import type { VideoJob } from "../../../schemas/videos.ts";
import { videoKey, type ArtifactStore } from "../../engine/artifact-store.ts";
import { GenerationError, type Engine } from "../../engine/engine.ts";
import type { JobDispatch, RunEnd } from "../../engine/job-dispatch.ts";
import { isFinished, type JobRecord, type JobStore } from "../../engine/job-store.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { TaskResult } from "../../worker/ipc.ts";
import { cleanUp, cleanUpReferences } from "../cleanup.ts";
import type { NodeMetrics } from "../metrics/node-metrics.ts";
import { ApiError } from "../errors.ts";
import { reportedTimings } from "../timings.ts";

export interface VideoSubmission {
  request: GenerationRequest;
  model: string;
  size: string;
  seconds: string;
}

/** A presigned /content URL outlives any sensible download start. */
const PRESIGNED_URL_SECONDS = 3600;

const now = () => Math.floor(Date.now() / 1000);

/** After a drain cancels the jobs left running, how long their workers get to stop at a step boundary. */
const ABORT_GRACE_MS = 10000;

/** The message of a job a drain could not let finish on a node with no one to hand it to. */
export const SHUT_DOWN_MESSAGE = "The server shut down before this job finished";

export interface JobsDrained {
  /** Jobs running (or queued on this node's engine) when the drain began. */
  running: number;
  /** Jobs still running at the deadline, stopped there. */
  cutShort: number;
  /** Of those, the ones queued again for another node (cluster). */
  handedBack: number;
}

export class VideoJobs {
  /** Jobs this node runs (from dispatch to their end). */
  private readonly running = new Map<string, Promise<RunEnd>>();
  /** Jobs a drain cancelled: why they stopped, so they are not recorded as failed generations. */
  private readonly stopping = new Map<string, "hand_back" | "shut_down">();
  /** The drain's deadline passed: a job that reaches this node now does not start. */
  private drained = false;

  constructor(
    private readonly engine: Engine,
    readonly store: JobStore,
    readonly artifacts: ArtifactStore,
    private readonly dispatch: JobDispatch,
    private readonly metrics: NodeMetrics,
    private readonly outputDir: string,
    private readonly log: (line: string) => void,
    /** /content redirects to a presigned URL of the store instead of streaming through kino. */
    private readonly presign = false,
  ) {
    dispatch.serve((id, request, queuedAt) => {
      const run = this.execute(id, request, queuedAt).finally(() => {
        this.running.delete(id);
        this.stopping.delete(id);
      });
      this.running.set(id, run);
      return run;
    });
  }

  /** Queues a job and returns its queued object; the engine advances it in the background. */
  async submit(sub: VideoSubmission): Promise<VideoJob> {
    const id = sub.request.request_id;
    const outputPath = join(this.outputDir, "videos", `${id}.mp4`);
    const job: VideoJob = {
      id, object: "video", model: sub.model, prompt: sub.request.prompt, status: "queued", progress: 0,
      created_at: now(), completed_at: null, expires_at: null, size: sub.size, seconds: sub.seconds,
      quality: "standard", remixed_from_video_id: null, error: null, file_name: null, file_path: null,
      media_type: "video/mp4", inference_time_s: null, stage_durations: {}, peak_memory_mb: null,
    };
    const record: JobRecord = { job: { ...job }, outputPath };
    for (const evicted of await this.store.add(record)) void this.removeArtifact(evicted.job.id);
    await this.dispatch.dispatch(id, sub.request);
    return job;
  }

  /**
   * Runs a dispatched job on this node to its end. A job deleted while queued is skipped, and so is one
   * already finished (another node ran it after this one was thought dead): a job completes once.
   */
  private async execute(id: string, request: GenerationRequest, queuedAt: number): Promise<RunEnd> {
    const record = await this.store.get(id);
    if (!record || isFinished(record.job)) {
      await this.removeReferences(id);
      return "ended";
    }
    if (this.drained) {
      // It reached this node after the drain's deadline (taken just before the consumer paused).
      await this.removeReferences(id);
      if (this.dispatch.handsBack) return "handed_back";
      await this.failed(record, SHUT_DOWN_MESSAGE);
      return "ended";
    }
    // A job run again after its node died resumes its progress, which never moves backwards.
    let progress = record.job.progress;
    let startedAt = Date.now();
    try {
      const result = await this.engine.run({
        id,
        request,
        output: { kind: "mp4", path: record.outputPath },
        onStart: () => {
          this.metrics.jobStarted(queuedAt, (startedAt = Date.now()));
          void this.store.update(id, { status: "in_progress" });
        },
        // Integer percent that only moves forward; 100 only once the file is stored.
        onProgress: (fraction) => {
          const percent = Math.min(99, Math.floor(fraction * 100));
          if (percent > progress) void this.store.update(id, { progress: (progress = percent) });
        },
      });
      await this.artifacts.put(videoKey(id), record.outputPath);
      await this.completed(record, result);
      const bytes = result.files.reduce((sum, file) => sum + file.bytes, 0);
      this.metrics.jobCompleted(queuedAt, startedAt, Date.now(), bytes);
    } catch (err) {
      const stopped = this.stopping.get(id);
      if (stopped === "hand_back" && err instanceof GenerationError && err.aborted) {
        // Queued again before the dispatch puts it back in the queue, so the next node's in_progress wins.
        await this.store.update(id, { status: "queued" });
        await this.remove(record.outputPath);
        await this.removeReferences(request.request_id);
        return "handed_back";
      }
      await this.failed(record, stopped === "shut_down" ? SHUT_DOWN_MESSAGE : (err as Error).message);
      this.metrics.jobEnded(err instanceof GenerationError && err.aborted ? "cancelled" : "failed");
    }
    await this.afterRun(record, request);
    return "ended";
  }

  /**
   * SIGTERM: takes no more jobs, lets the ones on this node finish until `deadline` (ms since the
   * epoch), then stops the rest at their next step — handed back to the queue for another node in a
   * cluster, failed with SHUT_DOWN_MESSAGE on one node.
   */
  async drain(deadline: number): Promise<JobsDrained> {
    await this.dispatch.stopTaking();
    const running = this.running.size;
    await settledBy([...this.running.values()], deadline);
    this.drained = true;
    const left = [...this.running.keys()];
    for (const id of left) {
      this.stopping.set(id, this.dispatch.handsBack ? "hand_back" : "shut_down");
      this.engine.cancel(id);
    }
    const ends = await settledBy([...this.running.values()], Date.now() + ABORT_GRACE_MS);
    return { running, cutShort: left.length, handedBack: ends.filter((end) => end === "handed_back").length };
  }

  /** Runs one generation to a temporary MP4 for POST /v1/videos/sync; the caller removes the file. */
  async runSync(request: GenerationRequest): Promise<{ path: string; result: TaskResult }> {
    const path = join(this.outputDir, "sync", `${request.request_id}.mp4`);
    try {
      const result = await this.engine.run({ id: request.request_id, request, output: { kind: "mp4", path } });
      return { path, result };
    } catch (err) {
      void this.remove(path);
      throw err;
    } finally {
      void this.removeReferences(request.request_id);
    }
  }

  /**
   * Gone from the API at once. A finished job's file is removed before this returns (if the disk
   * refuses, the job stays and the caller gets the reason); a running generation is cancelled and its
   * artifact removed when the engine call returns.
   */
  async delete(id: string): Promise<boolean> {
    const record = await this.store.get(id);
    if (!record) return false;
    if (isFinished(record.job)) {
      const failed = await this.artifacts.remove(videoKey(id));
      if (failed) throw new ApiError(500, `Video '${id}' was not deleted: ${failed.message}`, "video_id");
      await this.store.delete(id);
      return true;
    }
    await this.store.delete(id);
    await this.dispatch.cancel(id);
    return true;
  }

  /** Where /content sends the client instead of streaming, when the operator asked for presigned URLs. */
  presignedUrl(id: string): string | undefined {
    return this.presign ? this.artifacts.presign?.(videoKey(id), PRESIGNED_URL_SECONDS) : undefined;
  }

  private completed(record: JobRecord, result: TaskResult): Promise<void> {
    return this.store.update(record.job.id, {
      status: "completed",
      progress: 100,
      completed_at: now(),
      file_name: `${record.job.id}.mp4`,
      file_path: this.artifacts.location(videoKey(record.job.id)),
      ...reportedTimings(result),
      ...(result.revised_prompt !== undefined ? { revised_prompt: result.revised_prompt } : {}),
    });
  }

  private failed(record: JobRecord, message: string): Promise<void> {
    return this.store.update(record.job.id, { status: "failed", completed_at: now(), error: { code: "generation_failed", message } });
  }

  private async afterRun(record: JobRecord, request: GenerationRequest): Promise<void> {
    await this.removeReferences(request.request_id);
    // Deleted while it ran (or failed half-way): nothing may stay on disk.
    const current = await this.store.get(record.job.id);
    if (!current || current.job.status === "failed") {
      await this.remove(record.outputPath);
      await this.removeArtifact(record.job.id);
    }
  }

  private async removeArtifact(id: string): Promise<void> {
    const failed = await this.artifacts.remove(videoKey(id));
    if (failed) this.log(failed.message);
  }

  private remove(path: string): Promise<void> {
    return cleanUp(this.log, path);
  }

  private removeReferences(requestId: string): Promise<void> {
    return cleanUpReferences(this.log, this.outputDir, requestId);
  }
}

/** The values of those promises that settle by `deadline` (ms since the epoch). */
async function settledBy<T>(promises: Promise<T>[], deadline: number): Promise<T[]> {
  const values: T[] = [];
  let timer: Timer | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
  await Promise.race([Promise.allSettled(promises.map((p) => p.then((value) => void values.push(value)))), late]);
  clearTimeout(timer);
  return values;
}
