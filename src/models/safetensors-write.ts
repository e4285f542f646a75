// Writing safetensors files: used by tools/make-tiny-checkpoint.ts and by tests that craft checkpoints
// (good and deliberately broken ones). Header padded with spaces to a multiple of 8, tensors stored in
// the order given, offsets contiguous — the layout every reader accepts.
import { toHalf } from "../runtime/dtype.ts";
import { numelOf } from "../runtime/tensor.ts";

export interface TensorToWrite {
  name: string;
  shape: number[];
  /** Values; stored as `dtype` (default F32; BF16/F16 are rounded to nearest even). */
  data: Float32Array;
  dtype?: "F32" | "BF16" | "F16";
}

export function encodeSafetensors(tensors: TensorToWrite[], metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = Object.keys(metadata).length ? { __metadata__: metadata } : {};
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const t of tensors) {
    const dtype = t.dtype ?? "F32";
    const numel = numelOf(t.shape);
    if (numel !== t.data.length) throw new Error(`tensor ${t.name}: ${t.data.length} values for shape [${t.shape}]`);
    const bytes = dtype === "F32"
      ? new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)
      : new Uint8Array(toHalf(t.data, dtype === "BF16" ? "bf16" : "f16").buffer);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    blobs.push(bytes);
    offset += bytes.length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(Math.ceil(json.length / 8) * 8).fill(0x20); // pad with spaces
  head.set(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

export async function writeSafetensors(path: string, tensors: TensorToWrite[], metadata?: Record<string, string>): Promise<void> {
  await Bun.write(path, encodeSafetensors(tensors, metadata));
}
