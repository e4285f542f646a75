// Removing what a request no longer needs. A cleanup never fails the request or the server: a file the
// disk will not let go is logged, and the job store removes it at the next start.
import { removeReferences } from "../media/references.ts";
import { removeStored } from "../media/storage.ts";

export async function cleanUp(log: (line: string) => void, ...paths: string[]): Promise<void> {
  for (const path of paths) {
    const failed = await removeStored(path);
    if (failed) log(failed.message);
  }
}

export async function cleanUpReferences(log: (line: string) => void, outputDir: string, requestId: string): Promise<void> {
  const failed = await removeReferences(outputDir, requestId);
  if (failed) log(`request ${requestId}: ${failed.message}`);
}
