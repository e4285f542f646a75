// The video job lifecycle on top of the engine: queued → in_progress → completed | failed, with
// real progress, server-chosen output paths, and deletion that never leaves an artifact behind.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { VideoJob } from "../../../schemas/videos.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { Engine } from "../../engine/engine.ts";
import type { TaskResult } from "../../worker/ipc.ts";
import { JobStore, type JobRecord } from "../../engine/job-store.ts";
import { removeReferences } from "../../media/references.ts";
import { reportedTimings } from "../timings.ts";

export interface VideoSubmission {
  request: GenerationRequest;
  model: string;
  size: string;
  seconds: string;
}

const now = () => Math.floor(Date.now() / 1000);

export class VideoJobs {
  readonly store: JobStore;

  constructor(
    private readonly engine: Engine,
    private readonly outputDir: string,
    maxJobs: number,
  ) {
    this.store = new JobStore(maxJobs, (record) => void rm(record.outputPath, { force: true }));
  }

  /** Queues a job and returns a snapshot of its queued object; the engine advances it in the background. */
  submit(sub: VideoSubmission): VideoJob {
    const id = sub.request.request_id;
    const outputPath = join(this.outputDir, "videos", `${id}.mp4`);
    const job: VideoJob = {
      id, object: "video", model: sub.model, prompt: sub.request.prompt, status: "queued", progress: 0,
      created_at: now(), completed_at: null, expires_at: null, size: sub.size, seconds: sub.seconds,
      quality: "standard", remixed_from_video_id: null, error: null, file_name: null, file_path: null,
      media_type: "video/mp4", inference_time_s: null, stage_durations: {}, peak_memory_mb: null,
    };
    const record: JobRecord = { job, taskId: id, outputPath };
    this.store.add(record);
    const queued = { ...job };
    this.engine
      .run({
        id,
        request: sub.request,
        output: { kind: "mp4", path: outputPath },
        onStart: () => (job.status = "in_progress"),
        // Integer percent that only moves forward; 100 only once the file is written.
        onProgress: (fraction) => (job.progress = Math.max(job.progress, Math.min(99, Math.floor(fraction * 100)))),
      })
      .then(
        (result) => this.completed(record, result),
        (err: Error) => this.failed(record, err.message),
      )
      .finally(() => this.afterRun(record, sub.request));
    return queued;
  }

  /** Runs one generation to a temporary MP4 for POST /v1/videos/sync; the caller removes the file. */
  async runSync(request: GenerationRequest): Promise<{ path: string; result: TaskResult }> {
    const path = join(this.outputDir, "sync", `${request.request_id}.mp4`);
    try {
      const result = await this.engine.run({ id: request.request_id, request, output: { kind: "mp4", path } });
      return { path, result };
    } catch (err) {
      await rm(path, { force: true });
      throw err;
    } finally {
      await removeReferences(this.outputDir, request.request_id);
    }
  }

  /**
   * Gone from the API at once. A finished job's file is removed before this returns; a running
   * generation is cancelled and its artifact removed when the engine call returns.
   */
  async delete(id: string): Promise<boolean> {
    const record = this.store.delete(id);
    if (!record) return false;
    if (record.job.status === "completed" || record.job.status === "failed") await rm(record.outputPath, { force: true });
    else this.engine.cancel(record.taskId);
    return true;
  }

  private completed(record: JobRecord, result: TaskResult): void {
    Object.assign(record.job, {
      status: "completed",
      progress: 100,
      completed_at: now(),
      file_name: `${record.job.id}.mp4`,
      file_path: record.outputPath,
      ...reportedTimings(result),
    } satisfies Partial<VideoJob>);
  }

  private failed(record: JobRecord, message: string): void {
    Object.assign(record.job, {
      status: "failed",
      completed_at: now(),
      error: { code: "generation_failed", message },
    } satisfies Partial<VideoJob>);
  }

  private async afterRun(record: JobRecord, request: GenerationRequest): Promise<void> {
    await removeReferences(this.outputDir, request.request_id);
    // Deleted while it ran (or failed half-way): nothing may stay on disk.
    if (this.store.get(record.job.id) !== record || record.job.status === "failed") {
      await rm(record.outputPath, { force: true });
    }
  }
}
