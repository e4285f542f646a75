// Artifacts in an S3-compatible bucket through Bun's built-in S3 client, so every node serves every
// job's MP4. Keys live under the configured prefix; credentials come from the environment.
import { S3Client } from "bun";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { artifactKind, type ArtifactStore, type StoredArtifact } from "../engine/artifact-store.ts";
import { removeStored, StorageError, storing } from "../media/storage.ts";

export interface S3Settings {
  endpoint?: string;
  bucket: string;
  prefix: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** `s3://bucket/prefix (endpoint URL)`: where the store is, for start-up errors and logs. */
export const describeS3 = (s: S3Settings) => `s3://${s.bucket}/${s.prefix}${s.endpoint ? ` (endpoint ${s.endpoint})` : ""}`;

export class S3ArtifactStore implements ArtifactStore {
  private readonly client: S3Client;

  constructor(private readonly settings: S3Settings) {
    const { endpoint, bucket, region, accessKeyId, secretAccessKey } = settings;
    this.client = new S3Client({ endpoint, bucket, region, accessKeyId, secretAccessKey });
  }

  private key(key: string): string {
    return this.settings.prefix + key;
  }

  /**
   * Lists a prefix kino never writes: wrong credentials or a missing bucket fail here, at start. (A
   * written-and-removed probe object would also check write access, but s3rver, the tests' S3,
   * crashes when several nodes do that at once, and fails a one-key listing of a full prefix.)
   */
  async check(): Promise<void> {
    await this.client.list({ prefix: this.key(".kino-probe/"), maxKeys: 1 });
  }

  async put(key: string, path: string): Promise<void> {
    try {
      await this.client.write(this.key(key), Bun.file(path));
    } catch (err) {
      throw new StorageError(`Could not store the ${artifactKind(key)} file in ${describeS3(this.settings)}: ${s3Reason(err)}`, null);
    }
    await removeStored(path);
  }

  async download(key: string, path: string): Promise<void> {
    let bytes: ArrayBuffer;
    try {
      bytes = await this.client.file(this.key(key)).arrayBuffer();
    } catch (err) {
      throw new StorageError(`Could not read a reference from ${describeS3(this.settings)}: ${s3Reason(err)}`, null);
    }
    await storing("copy a reference", async () => {
      await mkdir(dirname(path), { recursive: true });
      await Bun.write(path, bytes);
    });
  }

  async open(key: string): Promise<StoredArtifact | undefined> {
    const file = this.client.file(this.key(key));
    let size: number;
    try {
      size = (await file.stat()).size;
    } catch (err) {
      if ((err as { code?: string }).code === "NoSuchKey") return undefined;
      throw new StorageError(`Could not read the ${artifactKind(key)} file from ${describeS3(this.settings)}: ${s3Reason(err)}`, null);
    }
    // A Response built on an S3File (or its slice) reads as empty; its stream() carries the bytes.
    return { size, body: (start, end) => file.slice(start, end).stream() };
  }

  async remove(key: string): Promise<StorageError | null> {
    try {
      await this.client.delete(this.key(key));
      return null;
    } catch (err) {
      return new StorageError(`Could not remove a file from ${describeS3(this.settings)}: ${s3Reason(err)}`, null);
    }
  }

  location(key: string): string {
    return `s3://${this.settings.bucket}/${this.key(key)}`;
  }

  presign(key: string, expiresInSeconds: number): string {
    return this.client.presign(this.key(key), { expiresIn: expiresInSeconds, method: "GET" });
  }
}

/** The S3 error code and message (InvalidAccessKeyId: ...), or the network error. */
export function s3Reason(err: unknown): string {
  const code = (err as { code?: string }).code;
  const message = (err as Error).message ?? String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
