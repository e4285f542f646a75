// Materializing client references (image/video/audio) at admission: fetch or read each one under
// kino's security rules, check that it is media we can use, and write it under
// `${outputDir}/references/<requestId>/` for the pipeline. Every failure is an InvalidMediaError that
// names the request field, and leaves nothing behind.

import { constants, type FileHandle, mkdir, open, realpath, rmdir, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { MaterializedReference } from "../pipelines/pipeline.ts";
import { InvalidMediaError } from "./errors.ts";
import { prepareImage } from "./image-thread-host.ts";
import { removeStored, storing, type StorageError } from "./storage.ts";

export interface ReferencePolicy {
  /** Materialized files go under `${outputDir}/references/<requestId>/`. */
  outputDir: string;
  /** Local paths are allowed only under these (none by default → every local path is rejected). */
  allowedLocalRoots: string[];
  /** `allowHosts` empty = any host when enabled; entries are host names, `host:port`, or `*.domain`. */
  remote: { enabled: boolean; allowHosts: string[]; maxBytes: number; timeoutMs: number };
  /** Cap for local files, data URLs and uploads. */
  maxBytes: number;
  /** Image pixel cap, checked on the header before decoding. */
  maxPixels: number;
}

export type ReferenceSource =
  | { kind: "string"; value: string } // http(s) URL, data: URL, file: URL or local path
  | { kind: "upload"; bytes: Uint8Array; filename?: string; type?: string };

export interface ReferenceInput {
  media: "image" | "video" | "audio";
  source: ReferenceSource;
  /** The request field, e.g. "image_reference[0].image_url"; errors name it. */
  param: string;
}

const MAX_REDIRECTS = 5;

/**
 * Fetches, reads and decodes every reference and writes each under the request's reference folder
 * (images re-encoded as PNG, video and audio as sent). On any failure the files this call wrote are
 * removed and an InvalidMediaError naming the offending field is thrown.
 */
export async function materializeReferences(
  requestId: string,
  inputs: ReferenceInput[],
  policy: ReferencePolicy,
): Promise<MaterializedReference[]> {
  // The id becomes a folder name; it comes from the server, so a bad one is a bug, not a 400.
  if (!/^[A-Za-z0-9_-]+$/.test(requestId)) throw new Error(`materializeReferences: unsafe request id '${requestId}'`);
  if (inputs.length === 0) return [];
  const dir = path.resolve(policy.outputDir, "references", requestId);
  const written: string[] = [];
  try {
    const results: MaterializedReference[] = [];
    for (const [index, input] of inputs.entries()) {
      const bytes = await loadBytes(input, policy);
      const file = await prepare(input, bytes, policy);
      const filePath = path.join(dir, `${index}-${input.media}.${file.extension}`);
      written.push(filePath);
      await storing(`store ${input.param}`, async () => {
        await mkdir(dir, { recursive: true });
        await Bun.write(filePath, file.bytes);
      });
      results.push({ kind: input.media, path: filePath, ...file.size });
    }
    return results;
  } catch (error) {
    await Promise.all(written.map(removeStored));
    // The request's folder goes too, unless something else put files there.
    if (written.length > 0) await rmdir(dir).catch(() => {});
    throw error;
  }
}

/** References are only needed while generating: drops a request's materialized copies afterwards. */
export function removeReferences(outputDir: string, requestId: string): Promise<StorageError | null> {
  return removeStored(path.resolve(outputDir, "references", requestId));
}

// ---------------------------------------------------------------------------------------------
// Checking and converting the bytes

interface PreparedFile {
  bytes: Uint8Array;
  extension: string;
  size?: { width: number; height: number };
}

async function prepare(input: ReferenceInput, bytes: Uint8Array, policy: ReferencePolicy): Promise<PreparedFile> {
  const { media, param } = input;
  if (media === "image") {
    // Re-encoded so the pipeline reads one format, and so nothing but decoded pixels reaches it:
    // opaque, transparency composited over black (images.ts compositeOverBlack); on the image thread,
    // off the event loop.
    const { png, width, height } = await prepareImage(bytes, policy.maxPixels, param);
    return { bytes: png, extension: "png", size: { width, height } };
  }
  if (media === "video") {
    if (!isMp4(bytes)) throw new InvalidMediaError(`${param}: video references must be MP4 files (no 'ftyp' box found)`, param);
    return { bytes, extension: "mp4" };
  }
  const format = sniffAudio(bytes);
  if (format === null) throw new InvalidMediaError(`${param}: audio references must be WAV, MP3, OGG or FLAC files`, param);
  return { bytes, extension: format };
}

const ascii = (b: Uint8Array, start: number, end: number) => String.fromCharCode(...b.subarray(start, end));

/** ISO BMFF: the first box is `ftyp` (size at 0, type at 4). */
function isMp4(b: Uint8Array): boolean {
  return b.length >= 12 && ascii(b, 4, 8) === "ftyp";
}

function sniffAudio(b: Uint8Array): "wav" | "mp3" | "ogg" | "flac" | null {
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WAVE") return "wav";
  if (b.length >= 4 && ascii(b, 0, 4) === "OggS") return "ogg";
  if (b.length >= 4 && ascii(b, 0, 4) === "fLaC") return "flac";
  if (b.length >= 3 && ascii(b, 0, 3) === "ID3") return "mp3";
  // MPEG audio frame: 11 sync bits, a version other than "reserved", a layer other than "reserved"
  // (this excludes ADTS AAC, whose layer bits are 00), and a bitrate index other than "bad".
  if (b.length < 3 || b[0] !== 0xff) return null;
  const [b1, b2] = [b[1]!, b[2]!];
  return (b1 & 0xe0) === 0xe0 && (b1 & 0x18) !== 0x08 && (b1 & 0x06) !== 0 && b2 >> 4 !== 0xf ? "mp3" : null;
}

// ---------------------------------------------------------------------------------------------
// Getting the bytes: upload, data URL, local path, remote URL

async function loadBytes(input: ReferenceInput, policy: ReferencePolicy): Promise<Uint8Array> {
  const { source, param } = input;
  const fail = (reason: string) => new InvalidMediaError(`${param}: ${reason}`, param);
  if (source.kind === "upload") {
    const size = source.bytes.length;
    if (size > policy.maxBytes) throw fail(`upload is ${size} bytes, over the limit of ${policy.maxBytes}`);
    return source.bytes;
  }
  const value = source.value;
  if (value.length === 0) throw fail("empty reference");
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return readLocalFile(value, policy, fail);
  if (scheme === "data") return decodeDataUrl(value, policy.maxBytes, fail);
  if (scheme === "http" || scheme === "https") return fetchRemote(value, policy.remote, fail);
  if (scheme === "file") {
    let local: string;
    try {
      local = fileURLToPath(value);
    } catch {
      throw fail("invalid file: URL (only file:///absolute/path is accepted)");
    }
    return readLocalFile(local, policy, fail);
  }
  throw fail(`unsupported URL scheme '${scheme}:' (use http(s), data, or a local path)`);
}

type Fail = (reason: string) => InvalidMediaError;

/** `data:[<media type>][;base64],<data>`; the declared type is ignored (the bytes are sniffed). */
function decodeDataUrl(url: string, maxBytes: number, fail: Fail): Uint8Array {
  const comma = url.indexOf(",");
  if (comma < 0) throw fail("malformed data: URL (no ',')");
  const isBase64 = /;\s*base64\s*$/i.test(url.slice(5, comma));
  const payload = url.slice(comma + 1);
  if (!isBase64) {
    const bytes = percentDecode(payload);
    if (bytes.length > maxBytes) throw fail(`data: URL holds ${bytes.length} bytes, over the limit of ${maxBytes}`);
    return bytes;
  }
  // As browsers do: percent-decode, drop ASCII whitespace, then strict base64 (URL-safe letters too).
  const unescaped = payload.includes("%") ? new TextDecoder("latin1").decode(percentDecode(payload)) : payload;
  const text = unescaped.replace(/[\t\n\f\r ]/g, "");
  const body = text.replace(/={1,2}$/, "");
  if (!/^[A-Za-z0-9+/_-]*$/.test(body) || body.length % 4 === 1) throw fail("data: URL is not valid base64");
  const size = Math.floor((body.length * 3) / 4); // checked before decoding anything
  if (size > maxBytes) throw fail(`data: URL holds ${size} bytes, over the limit of ${maxBytes}`);
  return new Uint8Array(Buffer.from(body, "base64"));
}

/** Percent-decoding at the byte level (%XX may encode binary that is not UTF-8). */
function percentDecode(text: string): Uint8Array {
  const input = new TextEncoder().encode(text);
  const out = new Uint8Array(input.length);
  let n = 0;
  for (let i = 0; i < input.length; i++) {
    const hex = input[i] === 0x25 && i + 2 < input.length ? String.fromCharCode(input[i + 1]!, input[i + 2]!) : "";
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      out[n++] = parseInt(hex, 16);
      i += 2;
    } else {
      out[n++] = input[i]!;
    }
  }
  return out.subarray(0, n);
}

const isInside = (root: string, target: string) => {
  const rel = path.relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

/**
 * Reads a local file only if it lies under an allowed root both as written (so nothing outside the
 * roots is even looked at) and after resolving symlinks. Messages say why, never what the file holds.
 */
async function readLocalFile(value: string, policy: ReferencePolicy, fail: Fail): Promise<Uint8Array> {
  if (policy.allowedLocalRoots.length === 0) throw fail("local file paths are not allowed on this server");
  if (value.includes("\0")) throw fail("invalid local path");
  const realRoots = (await Promise.all(policy.allowedLocalRoots.map((r) => realpath(r).catch(() => null)))).filter(
    (r): r is string => r !== null,
  );
  const requested = path.resolve(value);
  const asWritten = [...policy.allowedLocalRoots.map((r) => path.resolve(r)), ...realRoots];
  if (!asWritten.some((r) => isInside(r, requested))) throw fail("local path is outside the allowed directories");

  let real: string;
  try {
    real = await realpath(requested);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw fail(code === "ENOENT" || code === "ENOTDIR" ? "local file does not exist" : `local file cannot be read (${code})`);
  }
  if (!realRoots.some((r) => isInside(r, real))) {
    throw fail("local path resolves (through a symlink) outside the allowed directories");
  }
  // Checked before opening: opening a FIFO or device could block or have side effects.
  const isFile = await stat(real).then((s) => s.isFile(), () => false);
  if (!isFile) throw fail("local path is not a regular file");

  // O_NOFOLLOW: a symlink swapped in after the checks above is refused, not followed. O_NONBLOCK:
  // a FIFO swapped in cannot hang the open.
  let handle: FileHandle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw fail(`local file cannot be read (${(error as NodeJS.ErrnoException).code})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw fail("local path is not a regular file");
    if (info.size > policy.maxBytes) throw fail(`local file is ${info.size} bytes, over the limit of ${policy.maxBytes}`);
    return new Uint8Array(await handle.readFile());
  } finally {
    await handle.close();
  }
}

function hostAllowed(url: URL, allowHosts: string[]): boolean {
  if (allowHosts.length === 0) return true;
  const bare = (h: string) => h.toLowerCase().replace(/^\[(.*)\]$/, "$1"); // IPv6 literals with or without []
  const host = bare(url.hostname);
  return allowHosts.map((entry) => entry.toLowerCase()).some((entry) =>
    entry.startsWith("*.") ? host.endsWith(entry.slice(1)) : bare(entry) === host || entry === url.host.toLowerCase(),
  );
}

/**
 * GETs an http(s) reference within the remote policy. Redirects are followed by hand so that every hop
 * is checked against the allowlist; the body is streamed and abandoned as soon as it passes the cap.
 */
async function fetchRemote(value: string, remote: ReferencePolicy["remote"], fail: Fail): Promise<Uint8Array> {
  if (!remote.enabled) throw fail("remote URLs are not allowed on this server (send a data: URL or upload the file)");
  const stop = new AbortController();
  const signal = AbortSignal.any([AbortSignal.timeout(remote.timeoutMs), stop.signal]);
  try {
    let url = parseHttpUrl(value, fail);
    for (let hop = 0; ; hop++) {
      if (!hostAllowed(url, remote.allowHosts)) throw fail(`host '${url.host}' is not in the allowed remote hosts`);
      const response = await fetch(url, { redirect: "manual", signal });
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        if (hop >= MAX_REDIRECTS) throw fail(`more than ${MAX_REDIRECTS} redirects`);
        url = parseHttpUrl(new URL(location, url).href, fail);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw fail(`fetching the URL returned HTTP ${response.status}`);
      }
      const declared = Number(response.headers.get("content-length") ?? NaN);
      if (declared > remote.maxBytes) {
        stop.abort();
        throw fail(`remote file is ${declared} bytes, over the limit of ${remote.maxBytes}`);
      }
      return await readCapped(response, remote.maxBytes, stop, fail);
    }
  } catch (error) {
    if (error instanceof InvalidMediaError) throw error;
    if ((error as Error).name === "TimeoutError") throw fail(`fetching the URL timed out after ${remote.timeoutMs} ms`);
    throw fail(`fetching the URL failed (${(error as Error).message})`);
  } finally {
    stop.abort(); // ends any body still open (a no-op once it was read)
  }
}

function parseHttpUrl(value: string, fail: Fail): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail("invalid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw fail(`unsupported URL scheme '${url.protocol}'`);
  return url;
}

async function readCapped(response: Response, maxBytes: number, stop: AbortController, fail: Fail): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (response.body === null) return new Uint8Array();
  for await (const chunk of response.body) {
    total += chunk.length;
    if (total > maxBytes) {
      stop.abort();
      throw fail(`remote file is over the limit of ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
