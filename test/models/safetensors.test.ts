// The safetensors reader against the goldens' manifest (every tensor's sum/abssum), sharded indexes,
// and crafted broken files: each failure must be a clear error naming the file and the tensor.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openTensorTable, readSafetensorsHeader, readTensorBytes } from "../../src/models/safetensors.ts";
import { encodeSafetensors, writeSafetensorsStreaming, type TensorToStream } from "../../src/models/safetensors-write.ts";
import { WeightReader } from "../../src/models/weights.ts";
import { HostBackend } from "./helpers/host-backend.ts";
import { GOLDENS, goldenJson, goldenPath } from "./helpers/goldens.ts";

const dir = mkdtempSync(join(tmpdir(), "kino-st-"));

describe("safetensors reader", () => {
  test("every golden tensor matches the manifest's sum and abssum", async () => {
    const manifest = await goldenJson("manifest.json");
    // The manifest covers every golden file, so no file escapes the check.
    const onDisk = [...new Bun.Glob("**/*.safetensors").scanSync(GOLDENS)].sort();
    expect(Object.keys(manifest.files).sort()).toEqual(onDisk);
    let checked = 0;
    for (const [file, entry] of Object.entries<any>(manifest.files)) {
      const table = await readSafetensorsHeader(goldenPath(file));
      expect([...table.tensors.keys()].sort()).toEqual(Object.keys(entry.tensors).sort());
      for (const [name, m] of Object.entries<any>(entry.tensors)) {
        const info = table.tensors.get(name)!;
        expect(info.shape).toEqual(m.shape);
        const bytes = await readTensorBytes(info);
        const v = new Float32Array(bytes.buffer, 0, bytes.length / 4);
        let sum = 0, abs = 0;
        for (const x of v) (sum += x), (abs += Math.abs(x));
        expect(Math.abs(sum - m.sum)).toBeLessThan(1e-6 * Math.max(1, m.abssum));
        expect(Math.abs(abs - m.abssum)).toBeLessThan(1e-6 * Math.max(1, m.abssum));
        checked++;
      }
    }
    expect(checked).toBe(Object.values<any>(manifest.files).reduce((n, entry) => n + Object.keys(entry.tensors).length, 0));
  });

  test("reads a tensor in slices", async () => {
    const data = Float32Array.from({ length: 1000 }, (_, i) => i * 0.5);
    const path = join(dir, "slices.safetensors");
    writeFileSync(path, encodeSafetensors([{ name: "a", shape: [10, 100], data }]));
    const info = (await readSafetensorsHeader(path)).tensors.get("a")!;
    const part = await readTensorBytes(info, 40, 80);
    expect([...new Float32Array(part.buffer)]).toEqual([...data.subarray(10, 20)]);
  });

  test("sharded checkpoints open as one table", async () => {
    writeFileSync(join(dir, "m-00001.safetensors"), encodeSafetensors([{ name: "a", shape: [2], data: new Float32Array([1, 2]) }]));
    writeFileSync(join(dir, "m-00002.safetensors"), encodeSafetensors([{ name: "b", shape: [1], data: new Float32Array([3]), dtype: "BF16" }]));
    writeFileSync(join(dir, "m.safetensors.index.json"), JSON.stringify({ weight_map: { a: "m-00001.safetensors", b: "m-00002.safetensors" } }));
    const table = await openTensorTable(join(dir, "m.safetensors.index.json"));
    expect([...table.tensors.keys()].sort()).toEqual(["a", "b"]);
    expect(table.tensors.get("b")!.dtype).toBe("BF16");
    writeFileSync(join(dir, "bad.safetensors.index.json"), JSON.stringify({ weight_map: { a: "m-00001.safetensors", c: "m-00002.safetensors" } }));
    await expect(openTensorTable(join(dir, "bad.safetensors.index.json"))).rejects.toThrow("tensor 'c' is listed in shard m-00002.safetensors but missing from it");
  });

  const good = () => encodeSafetensors([{ name: "w", shape: [4, 4], data: new Float32Array(16).fill(1) }]);
  const craft = (name: string, bytes: Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    return path;
  };
  const header = (json: string) => {
    const h = new TextEncoder().encode(json);
    const out = new Uint8Array(8 + h.length + 64);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    return out;
  };

  test("bad files fail with clear errors", async () => {
    const cases: [string, Uint8Array, string][] = [
      ["tiny.safetensors", new Uint8Array(3), "truncated safetensors file (3 bytes, no header length)"],
      ["trunc-header.safetensors", good().slice(0, 20), "truncated safetensors file (header needs"],
      ["trunc-data.safetensors", good().slice(0, good().length - 4), "truncated safetensors file (tensor 'w' ends at data byte 64"],
      ["not-json.safetensors", header("{nope"), "bad safetensors header (not JSON"],
      ["huge-len.safetensors", (() => { const b = good(); new DataView(b.buffer).setBigUint64(0, 1n << 40n, true); return b; })(), "bad safetensors header (declared length"],
      ["bad-dtype.safetensors", header(`{"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}}`), "tensor 'w': unknown dtype \"Q4\""],
      ["bad-size.safetensors", header(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`), "tensor 'w': 8 bytes do not hold F32 [3]"],
      ["bad-offsets.safetensors", header(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`), "tensor 'w': data_offsets [8] are not [begin, end]"],
    ];
    for (const [name, bytes, message] of cases) {
      const path = craft(name, bytes);
      await expect(readSafetensorsHeader(path)).rejects.toThrow(message);
      await expect(readSafetensorsHeader(path)).rejects.toThrow(path);
    }
    await expect(readSafetensorsHeader(join(dir, "absent.safetensors"))).rejects.toThrow("file not found");
  });
});

describe("streaming writer", () => {
  const values = (n: number, from: number) => Float32Array.from({ length: n }, (_, i) => from + i / 8);
  const streamed = (name: string, shape: number[], dtype: "F32" | "BF16", data: Float32Array, pieces = 3): TensorToStream => ({
    name, shape, dtype,
    produce: (write) => {
      const bytes = encodeSafetensors([{ name, shape: [data.length], data, dtype }]);
      const body = bytes.subarray(bytes.length - (dtype === "F32" ? 4 : 2) * data.length);
      const step = Math.ceil(body.length / pieces);
      for (let at = 0; at < body.length; at += step) write(body.subarray(at, at + step));
    },
  });

  test("writes the same file as the in-memory encoder, whatever pieces the tensors come in", async () => {
    const a = values(12, 1), b = values(5, -2);
    const path = join(dir, "streamed.safetensors");
    writeSafetensorsStreaming(path, [streamed("a", [3, 4], "BF16", a, 5), streamed("b", [5], "F32", b, 1)], { format: "pt" });
    const expected = encodeSafetensors([{ name: "a", shape: [3, 4], data: a, dtype: "BF16" }, { name: "b", shape: [5], data: b }], { format: "pt" });
    expect(new Uint8Array(await Bun.file(path).arrayBuffer())).toEqual(expected);
    const table = await readSafetensorsHeader(path);
    expect(table.tensors.get("b")).toMatchObject({ dtype: "F32", shape: [5], byteLength: 20 });
  });

  test("a tensor that hands over too few or too many bytes is an error naming it", () => {
    const path = join(dir, "short.safetensors");
    expect(() => writeSafetensorsStreaming(path, [streamed("blocks.0.q", [4, 4], "F32", values(15, 0))])).toThrow("tensor blocks.0.q: 60 bytes for [4,4] F32 (64 expected)");
    expect(() => writeSafetensorsStreaming(path, [streamed("blocks.0.k", [2], "F32", values(3, 0))])).toThrow("tensor blocks.0.k: more than the 8 bytes of [2] F32");
  });
});

describe("weight reader", () => {
  const path = join(dir, "weights.safetensors");
  writeFileSync(path, encodeSafetensors([
    { name: "lin.weight", shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]), dtype: "BF16" },
    { name: "lin.bias", shape: [2], data: new Float32Array([0.5, -0.5]) },
    { name: "ids", shape: [2], data: new Float32Array(2) },
  ]));
  writeFileSync(join(dir, "ints.safetensors"), (() => {
    const h = new TextEncoder().encode(`{"n":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`);
    const out = new Uint8Array(8 + h.length + 8);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    return out;
  })());

  test("loads with the dtype policy, names missing, mis-shaped, wrongly typed and extra tensors", async () => {
    const backend = new HostBackend();
    const table = await openTensorTable(path);
    const reader = new WeightReader(backend, table, { component: "transformer" });
    const w = await reader.matrix("lin.weight", [2, 3]);
    expect(w.dtype).toBe("bf16");
    expect([...(await backend.download(w))]).toEqual([1, 2, 3, 4, 5, 6]);
    const converted = new WeightReader(backend, table, { component: "transformer", weightDtype: "f32" });
    expect((await converted.matrix("lin.weight", [2, 3])).dtype).toBe("f32");
    expect((await reader.vector("lin.bias", [2])).dtype).toBe("f32");
    await expect(reader.vector("lin.missing", [2])).rejects.toThrow("transformer: missing tensor 'lin.missing'");
    await expect(reader.matrix("lin.weight", [3, 2])).rejects.toThrow("tensor 'lin.weight' has shape [2, 3], expected [3, 2]");
    expect(() => reader.finish()).toThrow("unexpected tensor 'ids'");
    const ints = new WeightReader(backend, await openTensorTable(join(dir, "ints.safetensors")), { component: "vae" });
    await expect(ints.vector("n", [1])).rejects.toThrow("vae: tensor 'n' has dtype I64; only F32, BF16 and F16 can be loaded");
  });
});
