// Where finished artifacts (MP4s, kept images) and a queued job's references live: a directory on one
// node (local-artifacts.ts), an S3 bucket in a cluster (src/cluster/s3-artifacts.ts). Keys are
// relative paths such as `videos/<id>.mp4`; the serving layer only ever sees these methods.
import type { StorageError } from "../media/storage.ts";

/** A stored artifact as /content serves it: its size and any byte range of it. */
export interface StoredArtifact {
  size: number;
  /** Bytes [start, end) as a response body. */
  body(start: number, end: number): Blob | ReadableStream<Uint8Array>;
}

export interface ArtifactStore {
  /** Moves the local file at `path` into the store under `key` (the local file is gone afterwards). */
  put(key: string, path: string): Promise<void>;
  /** Copies `key` to the local file `path` (a job's references, on the node that runs it). */
  download(key: string, path: string): Promise<void>;
  /** The artifact, or undefined when nothing is stored under `key`. */
  open(key: string): Promise<StoredArtifact | undefined>;
  /** Removes `key` (a missing one is fine); never throws: a removal that failed is returned. */
  remove(key: string): Promise<StorageError | null>;
  /** Where `key` is kept, for operators (a job's `file_path`): a path, or an s3:// URL. */
  location(key: string): string;
  /** A URL that serves `key` for a while without kino, when the store can make one. */
  presign?(key: string, expiresInSeconds: number): string;
}

export const videoKey = (id: string) => `videos/${id}.mp4`;
export const imageKey = (id: string, extension: string) => `images/${id}.${extension}`;
/** What a key holds, for messages: "image" or "video". */
export const artifactKind = (key: string) => (key.startsWith("images/") ? "image" : "video");
