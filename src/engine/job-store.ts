// Where video jobs and kept images live between requests — and across restarts. One interface for the
// single node (sqlite under output_dir, sqlite-store.ts) and, in a cluster, a shared store; the
// serving layer (src/api) only ever sees these methods.
import type { JobStatus, VideoJob } from "../../schemas/videos.ts";

export interface JobRecord {
  job: VideoJob;
  /** Where the worker writes the MP4 (the task id is the job id); served once the job is completed. */
  outputPath: string;
}

export interface ListOptions {
  after?: string;
  limit: number;
  order: "asc" | "desc";
}

export interface Page {
  data: VideoJob[];
  has_more: boolean;
}

export interface StoredImage {
  id: string;
  /** Its key in the artifact store (`images/<id>.<ext>`). */
  key: string;
  mime: string;
}

export interface JobStore {
  /** Adds a job; returns the finished records dropped to stay under the cap (their files are the caller's to remove). */
  add(record: JobRecord): Promise<JobRecord[]>;
  get(id: string): Promise<JobRecord | undefined>;
  /** Changes fields of a job's object (status, progress, timings); a deleted job is left alone. */
  update(id: string, patch: Partial<VideoJob>): Promise<void>;
  delete(id: string): Promise<JobRecord | undefined>;
  /** Jobs by status, for /metrics (in a cluster: the whole cluster's). */
  countByStatus(): Promise<Record<JobStatus, number>>;
  /** One page in creation order (or its reverse); undefined when `after` names no job. */
  list(options: ListOptions): Promise<Page | undefined>;
  /** Keeps an image for url responses; returns the images dropped to stay under the cap. */
  addImage(image: StoredImage): Promise<StoredImage[]>;
  getImage(id: string): Promise<StoredImage | undefined>;
  close(): void;
}

/** Cursor pagination over jobs in creation order, as OpenAI's list endpoints page. */
export function pageOf(all: VideoJob[], { after, limit, order }: ListOptions): Page | undefined {
  const ordered = order === "desc" ? [...all].reverse() : all;
  let start = 0;
  if (after !== undefined) {
    const index = ordered.findIndex((job) => job.id === after);
    if (index < 0) return undefined;
    start = index + 1;
  }
  return { data: ordered.slice(start, start + limit), has_more: start + limit < ordered.length };
}

/** Jobs by status over a list of jobs (every status present, zero when none). */
export function countStatuses(jobs: Iterable<VideoJob>): Record<JobStatus, number> {
  const counts: Record<JobStatus, number> = { queued: 0, in_progress: 0, completed: 0, failed: 0 };
  for (const job of jobs) counts[job.status] += 1;
  return counts;
}

export const isFinished = (job: VideoJob) => job.status === "completed" || job.status === "failed";
