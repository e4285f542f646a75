// Reading safetensors files without ever holding a whole checkpoint in one JS buffer: the header is
// parsed once (8-byte little-endian length, JSON, raw data), every entry is validated against the file
// size, and tensor bytes are read later in slices of the file (Bun.file().slice) as they are streamed
// to the device. Sharded checkpoints (`*.safetensors.index.json` with a weight_map) open as one table.
// Every failure names the file and, where there is one, the tensor.
import { dirname, join } from "node:path";

/** Bytes per element of every dtype the format defines (only F32/BF16/F16 can be loaded). */
const DTYPE_SIZE: Readonly<Record<string, number>> = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
  F8_E4M3: 1, F8_E5M2: 1,
};

/** A header larger than this is not a real checkpoint (real ones are < 10 MB even for 100k tensors). */
const MAX_HEADER_BYTES = 256 * 1024 * 1024;

export class CheckpointError extends Error {
  override name = "CheckpointError";
}

export interface TensorInfo {
  name: string;
  /** The file's dtype string: "F32", "BF16", "F16", ... */
  dtype: string;
  shape: number[];
  file: string;
  /** Absolute byte offset of the data in `file`. */
  offset: number;
  byteLength: number;
}

export interface TensorTable {
  /** Tensor name → where its bytes are. */
  tensors: Map<string, TensorInfo>;
  /** `__metadata__` of the (first) file. */
  metadata: Record<string, string>;
  /** The files read, for messages. */
  files: string[];
}

/** Parses and validates one file's header. */
export async function readSafetensorsHeader(file: string): Promise<TensorTable> {
  const handle = Bun.file(file);
  if (!(await handle.exists())) throw new CheckpointError(`${file}: file not found`);
  const size = handle.size;
  if (size < 8) throw new CheckpointError(`${file}: truncated safetensors file (${size} bytes, no header length)`);
  const headerLen = Number(new DataView(await handle.slice(0, 8).arrayBuffer()).getBigUint64(0, true));
  if (headerLen > MAX_HEADER_BYTES) throw new CheckpointError(`${file}: bad safetensors header (declared length ${headerLen} bytes)`);
  if (8 + headerLen > size) {
    throw new CheckpointError(`${file}: truncated safetensors file (header needs ${headerLen} bytes, file has ${size - 8} after the length)`);
  }
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(await handle.slice(8, 8 + headerLen).arrayBuffer()));
  } catch (err) {
    throw new CheckpointError(`${file}: bad safetensors header (not JSON: ${(err as Error).message})`);
  }
  if (!header || typeof header !== "object" || Array.isArray(header)) {
    throw new CheckpointError(`${file}: bad safetensors header (not a JSON object)`);
  }
  const dataStart = 8 + headerLen;
  const dataLen = size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = (entry ?? {}) as Record<string, string>;
      continue;
    }
    tensors.set(name, parseEntry(file, name, entry, dataStart, dataLen));
  }
  return { tensors, metadata, files: [file] };
}

function parseEntry(file: string, name: string, entry: unknown, dataStart: number, dataLen: number): TensorInfo {
  const bad = (why: string) => new CheckpointError(`${file}: bad safetensors header for tensor '${name}': ${why}`);
  const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (!e || typeof e !== "object") throw bad("entry is not an object");
  if (typeof e.dtype !== "string" || !(e.dtype in DTYPE_SIZE)) throw bad(`unknown dtype ${JSON.stringify(e.dtype)}`);
  const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
  if (!Array.isArray(e.shape) || !e.shape.every(isCount)) throw bad(`shape ${JSON.stringify(e.shape)} is not a list of sizes`);
  const off = e.data_offsets;
  if (!Array.isArray(off) || off.length !== 2 || !off.every(isCount) || off[1] < off[0]) {
    throw bad(`data_offsets ${JSON.stringify(off)} are not [begin, end]`);
  }
  const numel = (e.shape as number[]).reduce((a, b) => a * b, 1);
  const byteLength = off[1] - off[0];
  if (byteLength !== numel * DTYPE_SIZE[e.dtype]!) {
    throw bad(`${byteLength} bytes do not hold ${e.dtype} [${e.shape.join(", ")}] (${numel * DTYPE_SIZE[e.dtype]!} bytes)`);
  }
  if (off[1] > dataLen) {
    throw new CheckpointError(`${file}: truncated safetensors file (tensor '${name}' ends at data byte ${off[1]}, the file holds ${dataLen})`);
  }
  return { name, dtype: e.dtype, shape: e.shape as number[], file, offset: dataStart + off[0], byteLength };
}

/**
 * Opens a checkpoint file: a single `.safetensors`, or a `.safetensors.index.json` whose weight_map
 * spreads the tensors over shards in the same folder.
 */
export async function openTensorTable(path: string): Promise<TensorTable> {
  if (!path.endsWith(".index.json")) return readSafetensorsHeader(path);
  let index: { weight_map?: Record<string, string>; metadata?: Record<string, string> };
  try {
    index = await Bun.file(path).json();
  } catch (err) {
    throw new CheckpointError(`${path}: cannot read the shard index (${(err as Error).message})`);
  }
  if (!index.weight_map || typeof index.weight_map !== "object") throw new CheckpointError(`${path}: shard index has no weight_map`);
  const shards = [...new Set(Object.values(index.weight_map))].sort();
  const tables = await Promise.all(shards.map((s) => readSafetensorsHeader(join(dirname(path), s))));
  const tensors = new Map<string, TensorInfo>();
  for (const [name, shard] of Object.entries(index.weight_map)) {
    const info = tables[shards.indexOf(shard)]!.tensors.get(name);
    if (!info) throw new CheckpointError(`${path}: tensor '${name}' is listed in shard ${shard} but missing from it`);
    tensors.set(name, info);
  }
  for (const t of tables) for (const name of t.tensors.keys()) {
    if (!tensors.has(name)) throw new CheckpointError(`${t.files[0]}: tensor '${name}' is not in the shard index ${path}`);
  }
  return { tensors, metadata: index.metadata ?? tables[0]?.metadata ?? {}, files: tables.flatMap((t) => t.files) };
}

/** Bytes [start, end) of a tensor's data (relative to the tensor), read from the file. */
export async function readTensorBytes(info: TensorInfo, start = 0, end = info.byteLength): Promise<Uint8Array> {
  const buf = await Bun.file(info.file).slice(info.offset + start, info.offset + end).arrayBuffer();
  if (buf.byteLength !== end - start) {
    throw new CheckpointError(`${info.file}: truncated while reading tensor '${info.name}' (the file changed or shrank)`);
  }
  return new Uint8Array(buf);
}
