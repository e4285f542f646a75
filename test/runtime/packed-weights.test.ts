// The wasm backend's packed GEMM weight copies (src/runtime/backends/wasm-packed.ts) must never be
// stale: after a weight is rewritten — by write, by an op writing into it or a view of it, or freed and
// its memory reused — the next GEMM uses the new values, and the result always equals the GEMM that
// packs per call.
import { afterAll, describe, expect, test } from "bun:test";
import type { Backend } from "../../src/runtime/backend.ts";
import type { Tensor } from "../../src/runtime/tensor.ts";
import { buildCpuWasm } from "../../tools/build/cpu.ts";

await buildCpuWasm();
const { openWasmBackend } = await import("../../src/runtime/backends/wasm.ts");

const [M, N, K] = [9, 20, 37];
const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7.1 + i * 0.37));

describe("packed GEMM weights on wasm", () => {
  const packed: Backend[] = [];
  afterAll(() => packed.forEach((b) => b.dispose()));

  async function pair(threads: number) {
    const be = await openWasmBackend({ threads, parallelMinWork: 0 });
    const plain = await openWasmBackend({ threads: 1, packedWeightBytes: 0 });
    packed.push(be, plain);
    const a = values(M * K, 1);
    /** be.gemm(a, w) next to the per-call packing backend's result for the same host weights. */
    const check = async (w: Tensor, host: Float32Array, dtype: "f32" | "bf16" = "f32") => {
      const out = be.alloc([M, N]), ad = be.upload(a, [M, K]);
      be.gemm(out, ad, w);
      const got = await be.download(out);
      be.free(out, ad);
      const pa = plain.upload(a, [M, K]), pw = plain.upload(host, [N, K], dtype), po = plain.alloc([M, N]);
      plain.gemm(po, pa, pw);
      const want = await plain.download(po);
      plain.free(pa, pw, po);
      expect(got).toEqual(want);
    };
    return { be, check };
  }

  for (const threads of [1, 2]) {
    test(`${threads} thread(s): write, op outputs into the weight or a view of it, free and reuse`, async () => {
      const { be, check } = await pair(threads);
      let host = values(N * K, 2);
      const w = be.upload(host, [N, K]);
      await check(w, host);
      await check(w, host); // from the packed copy
      host = values(N * K, 3);
      be.write(w, host);
      await check(w, host);
      be.fill(w.view([K], 2 * K), 0.5); // an op writing into a view of row 2
      host = host.slice();
      host.fill(0.5, 2 * K, 3 * K);
      await check(w, host);
      const other = be.upload(values(N * K, 4), [N, K]);
      be.axpby(w, w, other, 1, -1); // an op writing into the weight
      const o = values(N * K, 4);
      host = host.map((v, i) => Math.fround(v - o[i]!));
      await check(w, host);
      be.free(w, other);
      host = values(N * K, 5); // a new weight, likely at the freed address
      const w2 = be.upload(host, [N, K], "bf16");
      await check(w2, host, "bf16");
      be.free(w2);
    });
  }
});
