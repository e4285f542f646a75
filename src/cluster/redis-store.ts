// The cluster's job store: every job's OpenAI video object in Redis, so any node answers retrieve,
// list and delete for every job. A job is a hash (one JSON-encoded field per property) and a sorted
// set holds the ids in creation order (scored by a cluster-wide counter), so a page is a rank lookup
// and a range, however many jobs there are. Kept images (their files are in the shared artifact store)
// are a hash each and a sorted set in the order they were kept, so any node serves their urls.
import type Redis from "ioredis";
import { join } from "node:path";
import type { JobStatus, VideoJob } from "../../schemas/videos.ts";
import { isFinished, type JobRecord, type JobStore, type ListOptions, type Page, type StoredImage } from "../engine/job-store.ts";

// Every script keeps KEYS[…] `counts` — a hash of jobs per status (keyed by the stored, JSON-encoded
// status) — in step with the jobs, so /metrics reads the cluster's jobs by status in one HGETALL.

/** Adds the job's fields, its place in the creation order and its status count in one step. */
const ADD = `
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[3], seq, ARGV[1])
redis.call('HINCRBY', KEYS[4], ARGV[2], 1)
return seq`;

/**
 * Changes fields of a job unless it is gone or finished: a finished job is final, so a run that ends
 * after another node already finished the job (it was thought dead) changes nothing.
 */
const UPDATE = `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == '"completed"' or status == '"failed"' then return 0 end
for i = 1, #ARGV, 2 do
  if ARGV[i] == 'status' and ARGV[i + 1] ~= status then
    redis.call('HINCRBY', KEYS[2], status, -1)
    redis.call('HINCRBY', KEYS[2], ARGV[i + 1], 1)
  end
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`;

/** Every key of the job records of the cluster on `queue` starts with this. */
export const jobsNamespace = (queue: string) => `kino-jobs:${queue}`;

/** Removes a job; only the caller that took it out of the order gets 1 (two nodes may race). */
const DELETE = `
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
local status = redis.call('HGET', KEYS[1], 'status')
if status then redis.call('HINCRBY', KEYS[3], status, -1) end
redis.call('DEL', KEYS[1])
return 1`;

/**
 * The counts; a store whose jobs predate them (no counts hash yet) counts its jobs once, in the same
 * atomic step, so the figures start right.
 */
const COUNTS = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local status = redis.call('HGET', ARGV[1] .. id, 'status')
    if status then redis.call('HINCRBY', KEYS[1], status, 1) end
  end
end
return redis.call('HGETALL', KEYS[1])`;

export class RedisJobStore implements JobStore {
  /** `ns` prefixes every key (the cluster's queue name), so clusters can share one Redis. */
  constructor(
    private readonly redis: Redis,
    private readonly ns: string,
    private readonly outputDir: string,
    private readonly maxJobs: number,
  ) {}

  private jobKey(id: string): string {
    return `${this.ns}:video:${id}`;
  }

  private get orderKey(): string {
    return `${this.ns}:videos`;
  }

  private imageKey(id: string): string {
    return `${this.ns}:image:${id}`;
  }

  private get imageOrderKey(): string {
    return `${this.ns}:images`;

  }

  private get countsKey(): string {
    return `${this.ns}:counts`;
  }

  /** The MP4's path while this node writes it; where it is kept is the artifact store's business. */
  private record(job: VideoJob): JobRecord {
    return { job, outputPath: join(this.outputDir, "videos", `${job.id}.mp4`) };
  }

  async add(record: JobRecord): Promise<JobRecord[]> {
    const { job } = record;
    await this.redis.eval(ADD, 4, this.jobKey(job.id), `${this.ns}:seq`, this.orderKey, this.countsKey, job.id, JSON.stringify(job.status), ...fields(job));
    return this.evict();
  }

  /** Drops the oldest finished jobs beyond server.max_jobs; running and queued jobs are never evicted. */
  private async evict(): Promise<JobRecord[]> {
    const excess = (await this.redis.zcard(this.orderKey)) - this.maxJobs;
    if (excess <= 0) return [];
    const evicted: JobRecord[] = [];
    for (const id of await this.redis.zrange(this.orderKey, 0, excess + 99)) {
      if (evicted.length >= excess) break;
      const record = await this.get(id);
      if (record && isFinished(record.job) && (await this.delete(id))) evicted.push(record);
    }
    return evicted;
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const hash = await this.redis.hgetall(this.jobKey(id));
    return Object.keys(hash).length ? this.record(decode(hash)) : undefined;
  }

  async update(id: string, patch: Partial<VideoJob>): Promise<void> {
    await this.redis.eval(UPDATE, 2, this.jobKey(id), this.countsKey, ...fields(patch));
  }

  async delete(id: string): Promise<JobRecord | undefined> {
    const record = await this.get(id);
    if (!record) return undefined;
    const removed = await this.redis.eval(DELETE, 3, this.jobKey(id), this.orderKey, this.countsKey, id);
    return removed ? record : undefined;
  }

  /** The whole cluster's jobs by status, kept by the scripts above: one Redis round trip. */
  countByStatus(): Promise<Record<JobStatus, number>> {
    return countJobs(this.redis, this.ns);
  }

  async list({ after, limit, order }: ListOptions): Promise<Page | undefined> {
    let start = 0;
    if (after !== undefined) {
      const rank = order === "asc" ? await this.redis.zrank(this.orderKey, after) : await this.redis.zrevrank(this.orderKey, after);
      if (rank === null) return undefined;
      start = rank + 1;
    }
    // One more than the page, to know whether there is more.
    const stop = start + limit;
    const ids = order === "asc" ? await this.redis.zrange(this.orderKey, start, stop) : await this.redis.zrevrange(this.orderKey, start, stop);
    const pipeline = this.redis.pipeline();
    for (const id of ids.slice(0, limit)) pipeline.hgetall(this.jobKey(id));
    const hashes = ((await pipeline.exec()) ?? []).map(([, hash]) => hash as Record<string, string>);
    // A job deleted between the range and the read is left out.
    const data = hashes.filter((hash) => Object.keys(hash).length).map(decode);
    return { data, has_more: ids.length > limit };
  }

  async addImage(image: StoredImage): Promise<StoredImage[]> {
    const seq = await this.redis.incr(`${this.ns}:image-seq`);
    await this.redis.multi().hset(this.imageKey(image.id), "key", image.key, "mime", image.mime).zadd(this.imageOrderKey, seq, image.id).exec();
    const excess = (await this.redis.zcard(this.imageOrderKey)) - this.maxJobs;
    if (excess <= 0) return [];
    // ZPOPMIN hands each of the oldest to exactly one node, however many keep images at once.
    const popped = await this.redis.zpopmin(this.imageOrderKey, excess);
    const evicted: StoredImage[] = [];
    for (let i = 0; i < popped.length; i += 2) {
      const old = await this.getImage(popped[i]!);
      await this.redis.del(this.imageKey(popped[i]!));
      if (old) evicted.push(old);
    }
    return evicted;
  }

  async getImage(id: string): Promise<StoredImage | undefined> {
    const hash = await this.redis.hgetall(this.imageKey(id));
    return hash.key && hash.mime ? { id, key: hash.key, mime: hash.mime } : undefined;
  }

  close(): void {}
}

/** How many kept jobs are in each status, across the cluster (the counts the job scripts keep). */
export async function countJobs(redis: Redis, ns: string): Promise<Record<JobStatus, number>> {
  const flat = (await redis.eval(COUNTS, 2, `${ns}:counts`, `${ns}:videos`, `${ns}:video:`)) as string[];
  const counts: Record<JobStatus, number> = { queued: 0, in_progress: 0, completed: 0, failed: 0 };
  for (let i = 0; i < flat.length; i += 2) {
    const status = JSON.parse(flat[i]!) as JobStatus;
    if (status in counts) counts[status] = Number(flat[i + 1]);
  }
  return counts;
}

/** HSET arguments: each property's JSON, so null, numbers and objects come back as they went in. */
function fields(object: Partial<VideoJob>): string[] {
  return Object.entries(object).flatMap(([key, value]) => [key, JSON.stringify(value)]);
}

function decode(hash: Record<string, string>): VideoJob {
  return Object.fromEntries(Object.entries(hash).map(([key, value]) => [key, JSON.parse(value)])) as VideoJob;
}
