// The single-node job store: video jobs and kept images in bun:sqlite at output_dir/kino.sqlite, so a
// restart keeps every finished job listed, retrievable and downloadable. Reads are served from memory
// (the rows are loaded once at start); every change is written through. A write the disk refuses is
// logged and the server goes on: the job still runs, it only would not survive a restart.
import { Database } from "bun:sqlite";
import { readdir } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import type { VideoJob } from "../../schemas/videos.ts";
import { removeStored, storageError } from "../media/storage.ts";
import { countStatuses, isFinished, pageOf, type JobRecord, type JobStore, type ListOptions, type Page, type StoredImage } from "./job-store.ts";

export const STORE_FILE = "kino.sqlite";
/** Folders under output_dir whose files belong to a job or an image, or to no one after a restart. */
const KEPT_FOLDERS = ["videos", "images"];
/** Folders whose files only live as long as one request (sync downloads, materialized references). */
const TRANSIENT_FOLDERS = ["sync", "references"];

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS videos (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, job TEXT NOT NULL, file TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS images (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, file TEXT NOT NULL, mime TEXT NOT NULL);
`;

export class SqliteJobStore implements JobStore {
  private readonly jobs = new Map<string, JobRecord>();
  private readonly images = new Map<string, StoredImage>();

  private constructor(
    private readonly db: Database,
    private readonly outputDir: string,
    private readonly maxJobs: number,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Opens (or creates) the store, fails the jobs a previous run left queued or running ("server
   * restarted"), and removes files under output_dir that belong to no job or image.
   */
  static async open(outputDir: string, maxJobs: number, log: (line: string) => void): Promise<SqliteJobStore> {
    let db: Database;
    try {
      db = new Database(join(outputDir, STORE_FILE), { create: true, strict: true });
      db.run("PRAGMA journal_mode = WAL");
      db.run(SCHEMA);
    } catch (err) {
      throw storageError(err, "open the job store");
    }
    const store = new SqliteJobStore(db, outputDir, maxJobs, log);
    store.load();
    await store.removeUnowned();
    return store;
  }

  private load(): void {
    for (const row of this.db.query<{ job: string; file: string }, []>("SELECT job, file FROM videos ORDER BY seq").all()) {
      const job = JSON.parse(row.job) as VideoJob;
      this.jobs.set(job.id, { job, outputPath: resolve(this.outputDir, row.file) });
      if (!isFinished(job)) {
        this.patch(job.id, { status: "failed", completed_at: job.completed_at ?? Math.floor(Date.now() / 1000), error: { code: "generation_failed", message: "The server restarted before this job finished" } });
      }
    }
    for (const row of this.db.query<{ id: string; file: string; mime: string }, []>("SELECT id, file, mime FROM images ORDER BY seq").all()) {
      // On one node the artifact store is output_dir itself: an image's key is its path there.
      this.images.set(row.id, { id: row.id, key: row.file, mime: row.mime });
    }
  }

  private async removeUnowned(): Promise<void> {
    const owned = new Set([...this.jobs.values()].map((r) => r.outputPath).concat([...this.images.values()].map((i) => resolve(this.outputDir, i.key))));
    const removals: string[] = TRANSIENT_FOLDERS.map((folder) => join(this.outputDir, folder));
    for (const folder of KEPT_FOLDERS) {
      const names = await readdir(join(this.outputDir, folder)).catch(() => [] as string[]);
      removals.push(...names.map((name) => join(this.outputDir, folder, name)).filter((path) => !owned.has(path)));
    }
    for (const path of removals) {
      const failed = await removeStored(path);
      if (failed) this.log(`job store: ${failed.message}`);
    }
  }

  /** Runs a write; a disk that refuses it is logged, never thrown at the request that caused it. */
  private write(what: string, run: () => void): void {
    try {
      run();
    } catch (err) {
      this.log(`job store: could not ${what}: ${storageError(err, "write the job store").message}`);
    }
  }

  private file(path: string): string {
    return relative(this.outputDir, path);
  }

  private patch(id: string, patch: Partial<VideoJob>): void {
    const record = this.jobs.get(id);
    if (!record) return;
    Object.assign(record.job, patch);
    this.write(`update job ${id}`, () => this.db.query("UPDATE videos SET job = ? WHERE id = ?").run(JSON.stringify(record.job), id));
  }

  async add(record: JobRecord): Promise<JobRecord[]> {
    this.jobs.set(record.job.id, record);
    this.write(`add job ${record.job.id}`, () =>
      this.db.query("INSERT INTO videos (id, job, file) VALUES (?, ?, ?)").run(record.job.id, JSON.stringify(record.job), this.file(record.outputPath)),
    );
    const evicted: JobRecord[] = [];
    // Drop the oldest finished jobs; running and queued jobs are never evicted.
    for (const old of this.jobs.values()) {
      if (this.jobs.size - evicted.length <= this.maxJobs) break;
      if (isFinished(old.job)) evicted.push(old);
    }
    for (const old of evicted) await this.delete(old.job.id);
    return evicted;
  }

  async get(id: string): Promise<JobRecord | undefined> {
    return this.jobs.get(id);
  }

  async update(id: string, patch: Partial<VideoJob>): Promise<void> {
    this.patch(id, patch);
  }

  async delete(id: string): Promise<JobRecord | undefined> {
    const record = this.jobs.get(id);
    if (!record) return undefined;
    this.jobs.delete(id);
    this.write(`delete job ${id}`, () => this.db.query("DELETE FROM videos WHERE id = ?").run(id));
    return record;
  }

  async countByStatus() {
    return countStatuses([...this.jobs.values()].map((r) => r.job));
  }

  async list(options: ListOptions): Promise<Page | undefined> {
    return pageOf([...this.jobs.values()].map((r) => r.job), options);
  }

  async addImage(image: StoredImage): Promise<StoredImage[]> {
    this.images.set(image.id, image);
    this.write(`keep image ${image.id}`, () =>
      this.db.query("INSERT INTO images (id, file, mime) VALUES (?, ?, ?)").run(image.id, image.key, image.mime),
    );
    const evicted = [...this.images.values()].slice(0, Math.max(0, this.images.size - this.maxJobs));
    for (const old of evicted) {
      this.images.delete(old.id);
      this.write(`drop image ${old.id}`, () => this.db.query("DELETE FROM images WHERE id = ?").run(old.id));
    }
    return evicted;
  }

  async getImage(id: string): Promise<StoredImage | undefined> {
    return this.images.get(id);
  }

  close(): void {
    this.db.close();
  }
}
