import type { VideoJob } from "../../schemas/videos.ts";

export interface JobRecord {
  job: VideoJob;
  /** The engine task running it (same as the job id). */
  taskId: string;
  /** Where the worker writes the MP4; served once the job is completed. */
  outputPath: string;
}

export interface ListOptions {
  after?: string;
  limit: number;
  order: "asc" | "desc";
}

/** In-memory video jobs in creation order, with OpenAI cursor pagination. */
export class JobStore {
  private readonly jobs = new Map<string, JobRecord>();

  constructor(
    private readonly maxJobs: number,
    /** Called for jobs dropped to stay under maxJobs, so their artifacts can be removed. */
    private readonly onEvict: (record: JobRecord) => void,
  ) {}

  add(record: JobRecord): void {
    this.jobs.set(record.job.id, record);
    if (this.jobs.size <= this.maxJobs) return;
    // Drop the oldest finished job; running and queued jobs are never evicted.
    for (const [id, old] of this.jobs) {
      if (old.job.status === "completed" || old.job.status === "failed") {
        this.jobs.delete(id);
        this.onEvict(old);
        return;
      }
    }
  }

  get(id: string): JobRecord | undefined {
    return this.jobs.get(id);
  }

  delete(id: string): JobRecord | undefined {
    const record = this.jobs.get(id);
    this.jobs.delete(id);
    return record;
  }

  /** One page in creation order (or its reverse); undefined when `after` names no job. */
  list({ after, limit, order }: ListOptions): { data: VideoJob[]; has_more: boolean } | undefined {
    const all = [...this.jobs.values()].map((r) => r.job);
    if (order === "desc") all.reverse();
    let start = 0;
    if (after !== undefined) {
      const index = all.findIndex((job) => job.id === after);
      if (index < 0) return undefined;
      start = index + 1;
    }
    const data = all.slice(start, start + limit);
    return { data, has_more: start + limit < all.length };
  }
}
