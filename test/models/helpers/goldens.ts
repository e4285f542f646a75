// Access to the Wan goldens (test/goldens, see its README): tensors read on the host with our own
// safetensors reader, and error measures for comparing results with them.
import { join, resolve } from "node:path";
import { readSafetensorsHeader, readTensorBytes } from "../../../src/models/safetensors.ts";

export const GOLDENS = resolve(import.meta.dir, "../../goldens");

export function goldenPath(...parts: string[]): string {
  return join(GOLDENS, ...parts);
}

export interface HostTensor {
  shape: number[];
  data: Float32Array;
}

/** All tensors of a golden file (every golden tensor is F32). */
export async function loadGolden(...parts: string[]): Promise<Map<string, HostTensor>> {
  const table = await readSafetensorsHeader(goldenPath(...parts));
  const out = new Map<string, HostTensor>();
  for (const [name, info] of table.tensors) {
    const bytes = await readTensorBytes(info);
    out.set(name, { shape: info.shape, data: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) });
  }
  return out;
}

export function get(m: Map<string, HostTensor>, name: string): HostTensor {
  const t = m.get(name);
  if (!t) throw new Error(`golden tensor ${name} missing`);
  return t;
}

/** Largest |a − b| (and whether shapes agree in element count). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

/** The goldens' suggested fp32 check: |a − b| ≤ atol + rtol·|b| everywhere. Returns the worst excess ratio. */
export function closeTo(actual: ArrayLike<number>, expected: ArrayLike<number>, atol = 1e-4, rtol = 1e-4): { ok: boolean; maxAbs: number } {
  let ok = actual.length === expected.length;
  for (let i = 0; ok && i < actual.length; i++) {
    const d = Math.abs(actual[i]! - expected[i]!);
    if (!(d <= atol + rtol * Math.abs(expected[i]!))) ok = false;
  }
  return { ok, maxAbs: actual.length === expected.length ? maxAbsDiff(actual, expected) : Infinity };
}

export async function goldenJson(...parts: string[]): Promise<any> {
  return Bun.file(goldenPath(...parts)).json();
}
