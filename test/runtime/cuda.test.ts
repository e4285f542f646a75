// The CUDA backend everywhere, GPU or not: the library compiles with nvcc, every C ABI symbol the
// backend binds resolves through bun:ffi, and opening the backend on a machine without a GPU (CI,
// laptops) fails with a "no device:" error instead of taking the process down, which is what lets
// `generator.engine.device: auto` fall back to WebAssembly. Where a GPU answers, a few end-to-end
// results are checked here; the full op sweep is test/runtime/ops.test.ts.
import { describe, expect, test } from "bun:test";
import { dlopen } from "bun:ffi";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CUDA_GRAPH_SYMBOLS, CUDA_READBACK_SYMBOLS, CUDA_SYMBOLS } from "../../src/runtime/backends/cuda.ts";
import { openCudaBackend } from "../../src/runtime/backends/cuda-open.ts";
import * as ref from "../../src/runtime/reference.ts";
import { buildCudaLib, findNvcc } from "../../tools/build/cuda.ts";

const root = resolve(import.meta.dir, "../..");
const hasNvcc = findNvcc() !== null;

/** Opens the backend, or returns the error it was refused with. */
async function tryOpen() {
  try {
    return { backend: await openCudaBackend() };
  } catch (e) {
    return { error: e as Error };
  }
}

describe.skipIf(!hasNvcc)("libkino_cuda.so", () => {
  test("builds with nvcc and exports every symbol the backend binds, the graph and readback symbols included", async () => {
    const rel = await buildCudaLib();
    expect(rel).toBe("build/libkino_cuda.so");
    const lib = dlopen(join(root, rel!), CUDA_SYMBOLS);
    // bound apart (cuda-library.ts), so that a library built before them still opens; this build has them
    const graphs = dlopen(join(root, rel!), CUDA_GRAPH_SYMBOLS);
    for (const name of Object.keys(CUDA_GRAPH_SYMBOLS)) expect(typeof graphs.symbols[name as keyof typeof CUDA_GRAPH_SYMBOLS]).toBe("function");
    graphs.close();
    const readbacks = dlopen(join(root, rel!), CUDA_READBACK_SYMBOLS);
    for (const name of Object.keys(CUDA_READBACK_SYMBOLS)) expect(typeof readbacks.symbols[name as keyof typeof CUDA_READBACK_SYMBOLS]).toBe("function");
    readbacks.close();
    try {
      for (const name of Object.keys(CUDA_SYMBOLS)) expect(typeof lib.symbols[name as keyof typeof CUDA_SYMBOLS]).toBe("function");
      // Error strings come from the library itself, also without a device.
      expect(String(lib.symbols.kc_error_string(35))).toContain("driver");
      expect(String(lib.symbols.kc_error_string(10002))).toBe("unsupported dtype or shape");
    } finally {
      lib.close();
    }
  }, 600_000);

  test("without a GPU, opening the backend rejects with 'no device:' and the process carries on", async () => {
    await buildCudaLib();
    const r = await tryOpen();
    if (r.backend) {
      // A GPU answered: the backend describes it instead.
      expect(r.backend.description).toMatch(/^CUDA .+ \(sm_\d+, \d+ GiB\)$/);
      expect(r.backend.pciBusId).toMatch(/^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/i); // which physical GPU, for /health
      r.backend.dispose();
      return;
    }
    expect(r.error!.message).toMatch(/^no device: cudaGetDeviceCount: .+ \(error (35|100)\)$/);
    // The library stays usable for the next attempt (a worker retries after a driver install).
    expect((await tryOpen()).error?.message).toBe(r.error!.message);
  }, 600_000);
});

describe("library location", () => {
  test("a missing library is reported as 'CUDA library unavailable:'", async () => {
    const saved = process.env.KINO_CUDA_LIB;
    process.env.KINO_CUDA_LIB = "/nonexistent/libkino_cuda.so";
    try {
      await expect(openCudaBackend()).rejects.toThrow(/^CUDA library unavailable: KINO_CUDA_LIB=\/nonexistent/);
    } finally {
      if (saved === undefined) delete process.env.KINO_CUDA_LIB;
      else process.env.KINO_CUDA_LIB = saved;
    }
  });

  test("a file that is not a loadable library is reported the same way", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kino-cuda-test-"));
    const bogus = join(dir, "libkino_cuda.so");
    writeFileSync(bogus, "not an ELF file");
    const saved = process.env.KINO_CUDA_LIB;
    process.env.KINO_CUDA_LIB = bogus;
    try {
      await expect(openCudaBackend()).rejects.toThrow(/^CUDA library unavailable: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      if (saved === undefined) delete process.env.KINO_CUDA_LIB;
      else process.env.KINO_CUDA_LIB = saved;
    }
  });
});

// End-to-end on a GPU: the two tensor-core paths against the reference at Wan-like awkward sizes.
const gpu = hasNvcc ? await buildCudaLib().then(tryOpen) : { error: new Error("no nvcc"), backend: undefined };

describe("on a GPU", () => {
  const backend = gpu.backend;
  const seeded = (n: number, seed: number) => {
    const a = new Float32Array(n);
    let s = seed;
    for (let i = 0; i < n; i++) {
      s = (s * 1664525 + 1013904223) >>> 0;
      a[i] = (s / 2 ** 32) * 2 - 1;
    }
    return a;
  };
  const maxRelErr = (got: Float32Array, want: Float32Array) => {
    let err = 0, scale = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i]! - want[i]!));
      scale = Math.max(scale, Math.abs(want[i]!));
    }
    return err / scale;
  };

  test.skipIf(!backend)("bf16-weight GEMM with M, N, K off the tiles matches the reference", async () => {
    const b = backend!;
    for (const [M, N, K] of [[133, 264, 200], [4680 / 8, 256, 64], [1, 8, 8]] as const) {
      const a = seeded(M * K, 1), w = seeded(N * K, 2), bias = seeded(N, 3);
      const [ta, tw, tb, to] = [b.upload(a, [M, K]), b.upload(w, [N, K], "bf16"), b.upload(bias, [N]), b.alloc([M, N])];
      b.gemm(to, ta, tw, tb);
      const got = await b.download(to);
      // The reference sees the bf16-rounded operands the kernels multiply.
      const a16 = b.upload(a, [M, K], "bf16");
      const want = ref.gemm(new ref.Host([M, K], await b.download(a16)), new ref.Host([N, K], await b.download(tw)), new ref.Host([N], bias));
      expect(maxRelErr(got, want.f32)).toBeLessThan(1e-3);
      b.free(ta, tw, tb, to, a16);
    }
  });

  test.skipIf(!backend)("attention with Lq ≠ Lk and a block-causal mask matches the reference", async () => {
    const b = backend!;
    const [B, Lq, Lk, H, D] = [1, 100, 230, 2, 128];
    const q = seeded(B * Lq * H * D, 4), k = seeded(B * Lk * H * D, 5), v = seeded(B * Lk * H * D, 6);
    const opts = { scale: 1 / Math.sqrt(D), blockCausal: { blockSize: 50, qOffset: 100 } };
    const [tq, tk, tv, to] = [b.upload(q, [B, Lq, H, D]), b.upload(k, [B, Lk, H, D]), b.upload(v, [B, Lk, H, D]), b.alloc([B, Lq, H, D])];
    b.attention(to, tq, tk, tv, opts);
    const got = await b.download(to);
    const want = ref.attention(new ref.Host([B, Lq, H, D], q), new ref.Host([B, Lk, H, D], k), new ref.Host([B, Lk, H, D], v), opts);
    expect(maxRelErr(got, want.f32)).toBeLessThan(2e-2); // q/k/v and P are rounded to bf16
    b.free(tq, tk, tv, to);
  });

  test.skipIf(!backend)("exact mode multiplies f32 activations by bf16 weights without rounding them", async () => {
    const b = await openCudaBackend({ exact: true });
    const [M, N, K] = [37, 53, 129];
    const a = seeded(M * K, 7), w = seeded(N * K, 8);
    const [ta, tw, to] = [b.upload(a, [M, K]), b.upload(w, [N, K], "bf16"), b.alloc([M, N])];
    b.gemm(to, ta, tw);
    const want = ref.gemm(new ref.Host([M, K], a), new ref.Host([N, K], await b.download(tw)));
    expect(maxRelErr(await b.download(to), want.f32)).toBeLessThan(1e-5);
    b.dispose();
  });

  test.skipIf(!backend)("a Wan-VAE conv runs on the tensor cores, the test models' small ones and exact mode on SIMT", async () => {
    const run = async (b: typeof backend, cin: number, cout: number) => {
      const [x, w] = [b!.upload(seeded(cin * 2 * 6 * 8, 9), [1, cin, 2, 6, 8]), b!.upload(seeded(cout * cin * 27, 10), [cout, cin, 3, 3, 3], "bf16")];
      const prev = b!.upload(seeded(cin * 2 * 6 * 8, 11), [1, cin, 2, 6, 8]);
      const out = b!.alloc([1, cout, 2, 6, 8]);
      b!.conv3d(out, x, w, null, { pad: [1, 1, 1, 1], prev });
      const got = await b!.download(out);
      const host = async (t: typeof x) => new ref.Host([...t.shape], await b!.download(t));
      const want = ref.conv3d(await host(x), await host(w), null, { pad: [1, 1, 1, 1], prev: await host(prev) });
      b!.free(x, w, prev, out);
      return { kernel: b!.ranKernel("conv3d"), err: maxRelErr(got, want.f32) };
    };
    const wan = await run(backend, 96, 96);
    expect(wan.kernel).toBe("mma.sync");
    expect(wan.err).toBeLessThan(1e-2); // x rounded to bf16 (the promise itself: ops.test.ts)
    expect((await run(backend, 12, 12)).kernel).toBe("simt");
    const exact = await openCudaBackend({ exact: true });
    const e = await run(exact, 96, 96);
    expect(e).toEqual({ kernel: "simt", err: expect.any(Number) });
    expect(e.err).toBeLessThan(1e-5);
    exact.dispose();
  });

  test.skipIf(!backend)("readbackRaw: the bytes downloadRaw gives, while ops enqueued after it run; refused while recording", async () => {
    const b = backend!;
    const frames = b.alloc([3, 1, 272, 480]), yuv = b.alloc([1, (272 * 480 * 3) / 2], "u8"), big = b.alloc([2048, 2048]);
    try {
      b.write(frames, seeded(frames.numel, 9));
      b.rgbToYuv420(yuv, frames, [-1, 1]);
      const pending = b.readbackRaw!(yuv);
      let settled = false;
      void pending.then(() => (settled = true));
      for (let i = 0; i < 20; i++) b.gemm(big, big, big); // work after the readback, enqueued without waiting
      const got = await pending;
      expect(settled).toBe(true);
      expect(Buffer.from(got).equals(Buffer.from(await b.downloadRaw(yuv)))).toBe(true);
      // several in flight at once, each its own slot; an empty tensor settles at once
      const many = await Promise.all([b.readbackRaw!(yuv), b.readbackRaw!(frames), b.readbackRaw!(b.alloc([0]))]);
      expect(Buffer.from(many[0]).equals(Buffer.from(got))).toBe(true);
      expect(Buffer.from(many[1]).equals(Buffer.from(await b.downloadRaw(frames)))).toBe(true);
      expect(many[2].length).toBe(0);
      expect(() => b.graphs!.record(() => b.readbackRaw!(yuv))).toThrow(/readbackRaw/);
    } finally {
      b.free(frames, yuv, big);
    }
  });

  test.skipIf(!backend)("dispose releases the device", () => {
    backend!.dispose();
    expect(() => backend!.alloc([1])).toThrow("used after dispose");
  });
});
