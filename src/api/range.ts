import type { StoredArtifact } from "../engine/artifact-store.ts";
import { ApiError } from "./errors.ts";

/**
 * Serves a file with single-range support (RFC 9110 §14): `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * Multi-range requests get the whole file (allowed by the RFC), unsatisfiable ranges 416.
 */
export function fileResponse(path: string, type: string, rangeHeader: string | null, extraHeaders: Record<string, string> = {}): Response {
  const file = Bun.file(path);
  return artifactResponse({ size: file.size, body: (start, end) => file.slice(start, end) }, type, rangeHeader, extraHeaders);
}

/** The same for a stored artifact, wherever it is stored (a file, an S3 object). */
export function artifactResponse(artifact: StoredArtifact, type: string, rangeHeader: string | null, extraHeaders: Record<string, string> = {}): Response {
  const { size } = artifact;
  const headers: Record<string, string> = { "Content-Type": type, "Accept-Ranges": "bytes", ...extraHeaders };
  const range = rangeHeader ? parseRange(rangeHeader, size) : null;
  if (!range) return new Response(artifact.body(0, size), { headers: { ...headers, "Content-Length": String(size) } });
  if (range === "unsatisfiable") {
    throw new ApiError(416, `Range '${rangeHeader}' is not satisfiable for ${size} bytes`, "Range", undefined, { "Content-Range": `bytes */${size}` });
  }
  const [start, end] = range;
  return new Response(artifact.body(start, end + 1), {
    status: 206,
    headers: { ...headers, "Content-Range": `bytes ${start}-${end}/${size}`, "Content-Length": String(end - start + 1) },
  });
}

function parseRange(header: string, size: number): [number, number] | "unsatisfiable" | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return null; // malformed or multi-range: ignore and send everything
  const [, a, b] = match;
  if (a === "" && b === "") return null;
  if (a === "") {
    const suffix = Number(b);
    if (suffix === 0) return "unsatisfiable";
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(a);
  const end = b === "" ? size - 1 : Math.min(Number(b), size - 1);
  if (start >= size || start > end) return "unsatisfiable";
  return [start, end];
}
