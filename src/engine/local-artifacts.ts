// Artifacts in a directory: on one node that is output_dir itself, so the worker's MP4 is already where
// it is kept and put() has nothing to do; with a different (shared) directory the file is moved there.
import { copyFile, mkdir, rename } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { removeStored, storing } from "../media/storage.ts";
import { artifactKind, type ArtifactStore, type StoredArtifact } from "./artifact-store.ts";

export class LocalArtifactStore implements ArtifactStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  path(key: string): string {
    return join(this.root, key);
  }

  location(key: string): string {
    return this.path(key);
  }

  async put(key: string, path: string): Promise<void> {
    const target = this.path(key);
    if (resolve(path) === target) return;
    await storing(`store the ${artifactKind(key)} file`, async () => {
      await mkdir(dirname(target), { recursive: true });
      // A shared directory is often another file system, where rename cannot reach.
      await rename(path, target).catch(async (err: { code?: string }) => {
        if (err.code !== "EXDEV") throw err;
        await copyFile(path, target);
        await removeStored(path);
      });
    });
  }

  async download(key: string, path: string): Promise<void> {
    if (resolve(path) === this.path(key)) return;
    await storing("copy a reference", async () => {
      await mkdir(dirname(path), { recursive: true });
      await copyFile(this.path(key), path);
    });
  }

  async open(key: string): Promise<StoredArtifact | undefined> {
    const file = Bun.file(this.path(key));
    if (!(await file.exists())) return undefined;
    return { size: file.size, body: (start, end) => file.slice(start, end) };
  }

  remove(key: string) {
    return removeStored(this.path(key));
  }
}
