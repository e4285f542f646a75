// The cluster's job store: every job's OpenAI video object in Redis, so any node answers retrieve,
// list and delete for every job. A job is a hash (one JSON-encoded field per property) and a sorted
// set holds the ids in creation order (scored by a cluster-wide counter), so a page is a rank lookup
// and a range, however many jobs there are. Kept images (their files are in the shared artifact store)
// are a hash each and a sorted set in the order they were kept, so any node serves their urls.
import type Redis from "ioredis";
import { join } from "node:path";
import type { VideoJob } from "../../schemas/videos.ts";
import { isFinished, type JobRecord, type JobStore, type ListOptions, type Page, type StoredImage } from "../engine/job-store.ts";

/** Adds the job's fields and its place in the creation order in one step. */
const ADD = `
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('ZADD', KEYS[3], seq, ARGV[1])
return seq`;

/**
 * Changes fields of a job unless it is gone or finished: a finished job is final, so a run that ends
 * after another node already finished the job (it was thought dead) changes nothing.
 */
const UPDATE = `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == '"completed"' or status == '"failed"' then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`;

/** Every key of the job records of the cluster on `queue` starts with this. */
export const jobsNamespace = (queue: string) => `kino-jobs:${queue}`;

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

  /** The MP4's path while this node writes it; where it is kept is the artifact store's business. */
  private record(job: VideoJob): JobRecord {
    return { job, outputPath: join(this.outputDir, "videos", `${job.id}.mp4`) };
  }

  async add(record: JobRecord): Promise<JobRecord[]> {
    const { job } = record;
    await this.redis.eval(ADD, 3, this.jobKey(job.id), `${this.ns}:seq`, this.orderKey, job.id, ...fields(job));
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
    await this.redis.eval(UPDATE, 1, this.jobKey(id), ...fields(patch));
  }

  async delete(id: string): Promise<JobRecord | undefined> {
    const record = await this.get(id);
    if (!record) return undefined;
    // Only the caller whose removal took the job out of the order returns it (two nodes may race).
    const [[, removed]] = (await this.redis.multi().zrem(this.orderKey, id).del(this.jobKey(id)).exec()) as [[unknown, number]];
    return removed ? record : undefined;
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

/** How many kept jobs are in each status, across the cluster (at most server.max_jobs are kept). */
export async function countJobs(redis: Redis, ns: string): Promise<Record<VideoJob["status"], number>> {
  const counts = { queued: 0, in_progress: 0, completed: 0, failed: 0 };
  const ids = await redis.zrange(`${ns}:videos`, 0, -1);
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hget(`${ns}:video:${id}`, "status");
  for (const [, status] of (await pipeline.exec()) ?? []) {
    // A job deleted between the range and the read has no status.
    if (typeof status === "string") counts[JSON.parse(status) as VideoJob["status"]]++;
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
