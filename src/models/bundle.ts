// A model folder packed into one file, so `bun build --compile` can embed it (embedded files keep only
// their base name, and a diffusers folder has several config.json). Format: 8-byte little-endian
// length of a JSON index {files: [{path, offset, size}]}, the index, then the files' bytes.
// build.ts packs models/kino-tiny; at run time the bundle is unpacked once into a private folder keyed
// by its content, which the safetensors reader can then read in slices like any checkpoint.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";

interface BundleIndex {
  files: { path: string; offset: number; size: number }[];
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

/** Packs every file under `dir` into `out`. */
export async function packBundle(dir: string, out: string): Promise<void> {
  const files = listFiles(dir).sort();
  let offset = 0;
  const index: BundleIndex = {
    files: files.map((file) => {
      const size = statSync(file).size;
      const entry = { path: relative(dir, file), offset, size };
      offset += size;
      return entry;
    }),
  };
  const header = Buffer.from(JSON.stringify(index));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  // Read, not Bun.file(): a Blob made of BunFile parts is written empty. The default model is ≤ 30 MB.
  await Bun.write(out, Buffer.concat([length, header, ...files.map((f) => readFileSync(f))]));
}

/**
 * Unpacks a bundle into `${tmpdir()}/kino-model-<hash>/` (once: later calls, other worker processes
 * and later runs reuse it) and returns that folder.
 */
export async function unpackBundle(bundle: Blob): Promise<string> {
  const bytes = new Uint8Array(await bundle.arrayBuffer());
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
  const dir = join(tmpdir(), `kino-model-${hash}`);
  if (existsSync(join(dir, ".complete"))) return dir;
  const headerLength = Number(Buffer.from(bytes.buffer, bytes.byteOffset, 8).readBigUInt64LE());
  const index = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength))) as BundleIndex;
  const base = 8 + headerLength;
  // Unpack beside the final folder and rename, so a concurrent reader never sees half a model.
  const staging = `${dir}.${process.pid}-${Date.now()}`;
  for (const f of index.files) {
    if (f.path.startsWith("..") || f.path.startsWith("/")) throw new Error(`bundle entry '${f.path}' escapes its folder`);
    const target = join(staging, f.path);
    mkdirSync(dirname(target), { recursive: true });
    await Bun.write(target, bytes.subarray(base + f.offset, base + f.offset + f.size));
  }
  await Bun.write(join(staging, ".complete"), "");
  try {
    renameSync(staging, dir);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another process won the race; use its copy
  }
  return dir;
}

/** The bundle embedded in a compiled executable under this base name, if any. */
export function embeddedBundle(name: string): Blob | undefined {
  const pattern = new RegExp(`^${name}(-[a-z0-9]+)?\\.bundle$`);
  return Bun.embeddedFiles.find((f) => pattern.test((f as Blob & { name: string }).name));
}
