// Faults of the disk under output_dir (read-only, full, permissions, something in the way, a folder
// removed while running) as the users of kino should see them: what could not be stored, and why, in
// words — never the server's paths, never a crash of the server process.
import { rm } from "node:fs/promises";

/** A file kino needed to write or remove under output_dir could not be; the message names which. */
export class StorageError extends Error {
  constructor(
    message: string,
    /** The errno name (EROFS, ENOSPC, ...) when the operating system gave one. */
    readonly code: string | null,
  ) {
    super(message);
  }
}

const REASONS: Record<string, string> = {
  EROFS: "the file system is read-only",
  ENOSPC: "no space is left on the device",
  EDQUOT: "the disk quota is exhausted",
  EACCES: "permission denied",
  EPERM: "the operation is not permitted",
  EISDIR: "a directory is in the way",
  ENOTDIR: "a file is in the way of a folder",
  EEXIST: "a file is in the way of a folder",
  ENOENT: "a folder was removed while in use",
  EMFILE: "too many files are open",
  EIO: "an I/O error occurred",
};

/** `Could not <action>: <reason> (<CODE>)` for a file-system error; other errors are returned as they are. */
export function storageError(err: unknown, action: string): Error {
  if (err instanceof StorageError) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== "string" || !/^E[A-Z]+$/.test(code)) return err as Error;
  return new StorageError(`Could not ${action} under output_dir: ${REASONS[code] ?? "the operating system refused"} (${code})`, code);
}

/**
 * Runs `write`, turning a file-system failure into a StorageError about `action`. Everything kino
 * writes under output_dir goes through here, so no error message carries a server path.
 */
export async function storing<T>(action: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw storageError(err, action);
  }
}

/**
 * Removes a file or folder under output_dir (a missing one is fine). Never throws, so a cleanup can
 * run anywhere, even unawaited; a removal that failed is returned for the caller to report.
 */
export async function removeStored(path: string): Promise<StorageError | null> {
  try {
    await rm(path, { recursive: true, force: true });
    return null;
  } catch (err) {
    const described = storageError(err, "remove a file");
    return described instanceof StorageError ? described : new StorageError(`Could not remove a file under output_dir: ${described.message}`, null);
  }
}
