// npm run bench:kernels — CPU kernel throughput, side by side in one run:
//   wasm ×1 / ×2   the WebAssembly backend (kernels/cpu → wasm32 + SIMD128) through the Backend API,
//                  on one thread and on a two-thread pool;
//   native ×1 / ×2 the same C built with gcc -O3 -march=native (build/libkino_cpu.so, bun:ffi),
//                  same (tid, nth) split on POSIX threads — what the WebAssembly engine costs;
//   OpenBLAS ×1/×2 numpy's float32 matmul (attention: matmul + softmax + matmul per head), when
//                  python3 with numpy is installed (else the column says so).
// Each figure is the best of RUNS timed runs after a warm-up, over ROUNDS rounds of the whole table
// (the least disturbed run on a shared machine); GFLOP/s count 2·M·N·K for GEMM and 4·B·H·Lq·Lk·D for
// attention. numpy has no bf16, so its column is float32 weights throughout.
import { dlopen } from "bun:ffi";
import { openWasmBackend } from "../../src/runtime/backends/wasm.ts";
import type { Backend } from "../../src/runtime/backend.ts";
import { buildCpuNative, buildCpuWasm } from "../build/cpu.ts";

const RUNS = 5;
const ROUNDS = 3;
const THREADS = [1, 2];

interface Gemm { kind: "gemm"; M: number; N: number; K: number; wdt: "f32" | "bf16" }
interface Attn { kind: "attention"; L: number; H: number; D: number }
type Shape = Gemm | Attn;

const SHAPES: Shape[] = [
  { kind: "gemm", M: 1024, N: 1024, K: 1024, wdt: "f32" },
  { kind: "gemm", M: 1560, N: 1536, K: 1536, wdt: "bf16" }, // a Wan-1.3B projection over one 480p latent frame
  { kind: "attention", L: 1560, H: 12, D: 128 }, // Wan-1.3B self-attention over one 480p latent frame
];

const label = (s: Shape) =>
  s.kind === "gemm" ? `GEMM ${s.M}×${s.N}×${s.K}, w ${s.wdt}` : `attention L ${s.L}, H ${s.H}, D ${s.D}`;
const flops = (s: Shape) => (s.kind === "gemm" ? 2 * s.M * s.N * s.K : 4 * s.H * s.L * s.L * s.D);
const random = (n: number) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);

function best(run: () => void): number {
  run(); // warm-up: JIT tiers, page faults
  let min = Infinity;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    run();
    min = Math.min(min, performance.now() - t);
  }
  return min / 1000;
}

function wasmGflops(be: Backend, s: Shape): number {
  if (s.kind === "gemm") {
    const a = be.upload(random(s.M * s.K), [s.M, s.K]), w = be.upload(random(s.N * s.K), [s.N, s.K], s.wdt);
    const out = be.alloc([s.M, s.N]);
    const secs = best(() => be.gemm(out, a, w));
    be.free(a, w, out);
    return flops(s) / secs / 1e9;
  }
  const shape = [1, s.L, s.H, s.D];
  const [q, k, v] = [0, 1, 2].map(() => be.upload(random(s.L * s.H * s.D), shape));
  const out = be.alloc(shape);
  const secs = best(() => be.attention(out, q!, k!, v!, { scale: 1 / Math.sqrt(s.D) }));
  be.free(q!, k!, v!, out);
  return flops(s) / secs / 1e9;
}

function openNative(path: string) {
  return dlopen(path, {
    kino_native_init: { args: [], returns: "i32" },
    kino_native_gemm: { args: ["i32", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32"], returns: "void" },
    kino_native_attention: { args: ["i32", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "f32"], returns: "void" },
  }).symbols;
}

function nativeGflops(lib: ReturnType<typeof openNative>, s: Shape, threads: number): number {
  if (s.kind === "gemm") {
    const a = random(s.M * s.K), out = new Float32Array(s.M * s.N);
    const w = s.wdt === "f32" ? random(s.N * s.K) : Uint16Array.from(random(s.N * s.K), (x) => new Uint32Array(Float32Array.of(x).buffer)[0]! >>> 16);
    const code = s.wdt === "f32" ? 0 : 1;
    return flops(s) / best(() => lib.kino_native_gemm(threads, out, a, w, code, s.M, s.N, s.K)) / 1e9;
  }
  const [q, k, v, out] = [0, 1, 2, 3].map(() => random(s.L * s.H * s.D));
  return flops(s) / best(() => lib.kino_native_attention(threads, out!, q!, k!, v!, s.L, s.L, s.H, s.D, 1 / Math.sqrt(s.D))) / 1e9;
}

// numpy baseline: one python process per thread count (OpenBLAS reads its thread count at start-up).
const NUMPY_SCRIPT = `
import json, sys, time
import numpy as np
shapes, runs = json.loads(sys.argv[1]), ${RUNS}
def best(f):
    f(); t = []
    for _ in range(runs):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t)
def attention(q, k, v, scale):
    out = np.empty_like(q)
    for h in range(q.shape[1]):
        s = (q[:, h] @ k[:, h].T) * scale
        s = np.exp(s - s.max(axis=1, keepdims=True))
        out[:, h] = (s / s.sum(axis=1, keepdims=True)) @ v[:, h]
    return out
res = []
for s in shapes:
    r = lambda *d: np.random.rand(*d).astype(np.float32)
    if s["kind"] == "gemm":
        a, w = r(s["M"], s["K"]), r(s["N"], s["K"])
        res.append(2 * s["M"] * s["N"] * s["K"] / best(lambda: a @ w.T) / 1e9)
    else:
        q, k, v = (r(s["L"], s["H"], s["D"]) for _ in range(3))
        res.append(4 * s["H"] * s["L"] ** 2 * s["D"] / best(lambda: attention(q, k, v, s["D"] ** -0.5)) / 1e9)
print(json.dumps(res))
`;

function numpyGflops(threads: number): number[] | string {
  const python = Bun.which("python3");
  if (!python) return "no python3";
  const env = { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) };
  const r = Bun.spawnSync([python, "-c", NUMPY_SCRIPT, JSON.stringify(SHAPES)], { env });
  if (r.exitCode !== 0) {
    const err = r.stderr.toString();
    return err.includes("No module named 'numpy'") ? "no numpy" : `numpy failed: ${err.trim().split("\n").pop()}`;
  }
  return JSON.parse(r.stdout.toString()) as number[];
}

await buildCpuWasm();
const nativePath = await buildCpuNative();
const native = nativePath ? openNative(nativePath) : null;
if (native && !native.kino_native_init()) throw new Error("native baseline: out of memory");

// Rounds: the whole table is measured ROUNDS times and each cell keeps its best, so a burst of load
// from another process on this shared machine does not decide a ratio.
const cells = new Map<string, number>();
const keep = (key: string, v: number) => cells.set(key, Math.max(cells.get(key) ?? 0, v));
let numpyMissing = "";
for (let round = 0; round < ROUNDS; round++) {
  for (const threads of THREADS) {
    const numpy = numpyGflops(threads);
    if (typeof numpy === "string") numpyMissing = numpy;
    const be = await openWasmBackend({ threads });
    for (const [i, s] of SHAPES.entries()) {
      keep(`wasm ${threads} ${i}`, wasmGflops(be, s));
      if (native) keep(`native ${threads} ${i}`, nativeGflops(native, s, threads));
      if (typeof numpy !== "string") keep(`numpy ${threads} ${i}`, numpy[i]!);
    }
    be.dispose();
  }
}

const fmt = (x: number | undefined) => (x === undefined ? "–" : x.toFixed(1));
const ratio = (a: number | undefined, b: number | undefined) => (a && b ? `${Math.round((100 * a) / b)} %` : "–");
const cpu = (await Bun.file("/proc/cpuinfo").text().catch(() => "")).match(/model name\s*:\s*(.+)/)?.[1] ?? "unknown CPU";
console.log(`CPU: ${cpu}, ${navigator.hardwareConcurrency} threads; GFLOP/s, best of ${ROUNDS} rounds × ${RUNS} runs\n`);
console.log("| kernel | threads | wasm | native (gcc -O3 -march=native) | OpenBLAS (numpy, f32) | wasm / native | wasm / OpenBLAS |");
console.log("|---|---|---|---|---|---|---|");
for (const threads of THREADS) {
  for (const [i, s] of SHAPES.entries()) {
    const w = cells.get(`wasm ${threads} ${i}`), n = cells.get(`native ${threads} ${i}`), o = cells.get(`numpy ${threads} ${i}`);
    const nCell = native ? fmt(n) : "no gcc", oCell = numpyMissing || fmt(o);
    console.log(`| ${label(s)} | ${threads} | ${fmt(w)} | ${nCell} | ${oCell} | ${ratio(w, n)} | ${ratio(w, o)} |`);
  }
}
