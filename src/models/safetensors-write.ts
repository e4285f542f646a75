// Writing safetensors files: used by tools/make-tiny-checkpoint.ts and by tests that craft checkpoints
// (good and deliberately broken ones). Header padded with spaces to a multiple of 8, tensors stored in
// the order given, offsets contiguous — the layout every reader accepts. A checkpoint of real size
// (gigabytes) is streamed: the header is known from names, shapes and dtypes alone, and each tensor's
// bytes are made and written one after the other, so no copy of the whole file is ever held.
import { closeSync, openSync, writeSync } from "node:fs";
import { toHalf } from "../runtime/dtype.ts";
import { numelOf } from "../runtime/tensor.ts";

export type StoredDtype = "F32" | "BF16" | "F16";

export interface TensorToWrite {
  name: string;
  shape: number[];
  /** Values; stored as `dtype` (default F32; BF16/F16 are rounded to nearest even). */
  data: Float32Array;
  dtype?: StoredDtype;
}

/** A tensor whose bytes are made only when the writer reaches it. */
export interface TensorToStream {
  name: string;
  shape: number[];
  dtype: StoredDtype;
  /** Hands the tensor's bytes to `write` in order, in as many pieces as it likes. */
  produce(write: (bytes: Uint8Array) => void): void;
}

const BYTES: Record<StoredDtype, number> = { F32: 4, BF16: 2, F16: 2 };

/** The 8-byte length and the padded JSON header for tensors of these shapes, stored in this order. */
function headerBytes(tensors: { name: string; shape: number[]; dtype: StoredDtype }[], metadata: Record<string, string>): { head: Uint8Array; dataBytes: number } {
  const header: Record<string, unknown> = Object.keys(metadata).length ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const t of tensors) {
    const length = numelOf(t.shape) * BYTES[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + length] };
    offset += length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const head = new Uint8Array(8 + padded).fill(0x20, 8); // pad with spaces
  new DataView(head.buffer).setBigUint64(0, BigInt(padded), true);
  head.set(json, 8);
  return { head, dataBytes: offset };
}

function storedBytes(t: TensorToWrite): Uint8Array {
  const dtype = t.dtype ?? "F32";
  if (numelOf(t.shape) !== t.data.length) throw new Error(`tensor ${t.name}: ${t.data.length} values for shape [${t.shape}]`);
  return dtype === "F32"
    ? new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)
    : new Uint8Array(toHalf(t.data, dtype === "BF16" ? "bf16" : "f16").buffer);
}

export function encodeSafetensors(tensors: TensorToWrite[], metadata: Record<string, string> = {}): Uint8Array {
  const blobs = tensors.map(storedBytes);
  const { head, dataBytes } = headerBytes(tensors.map((t) => ({ name: t.name, shape: t.shape, dtype: t.dtype ?? "F32" })), metadata);
  const out = new Uint8Array(head.length + dataBytes);
  out.set(head);
  let at = head.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

export async function writeSafetensors(path: string, tensors: TensorToWrite[], metadata?: Record<string, string>): Promise<void> {
  await Bun.write(path, encodeSafetensors(tensors, metadata));
}

/** Writes tensors made one at a time; a tensor that hands over more or fewer bytes than its shape holds is an error naming it. */
export function writeSafetensorsStreaming(path: string, tensors: TensorToStream[], metadata: Record<string, string> = {}): void {
  const { head } = headerBytes(tensors, metadata);
  const fd = openSync(path, "w");
  try {
    writeSync(fd, head);
    for (const t of tensors) {
      const expected = numelOf(t.shape) * BYTES[t.dtype];
      let written = 0;
      t.produce((bytes) => {
        if (written + bytes.length > expected) throw new Error(`tensor ${t.name}: more than the ${expected} bytes of [${t.shape}] ${t.dtype}`);
        for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
        written += bytes.length;
      });
      if (written !== expected) throw new Error(`tensor ${t.name}: ${written} bytes for [${t.shape}] ${t.dtype} (${expected} expected)`);
    }
  } finally {
    closeSync(fd);
  }
}
