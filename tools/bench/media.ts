// npm run bench:media — kino's H.264 encoder side by side with Debian's ffmpeg + libx264 in one run:
// the same frames, one thread each, Constrained Baseline, the realtime pattern (an IDR every
// --keyint frames).
//
//   encode speed: frames per CPU second over the four QPs, ours as WebAssembly and native (bun:ffi;
//                 the same stream, checked), x264 through ffmpeg less ffmpeg's start-up (a 1-frame
//                 run). Each from the same input both ways: RGB frames (ours converts inside the
//                 timed call, ffmpeg's swscale converts for x264 in the same process) and the I420
//                 frames of that conversion (ours with input "i420", ffmpeg reading the raw file);
//                 each kino build first encodes --warmup frames untimed (JavaScriptCore's tier-up of
//                 the wasm module);
//   quality:      each encoder at four QPs, Y-PSNR against the same I420 frames (ours: our own
//                 conversion, which x264 is then given), and the Bjøntegaard delta rate of ours against
//                 each x264 preset (negative = ours needs fewer bits for the same Y-PSNR).
//
// Clips (procedural, deterministic): "fractal" zooms into a Mandelbrot/fractal-noise texture with
// film grain (hard to code); "pan" is a landscape the camera pans across with a passing car and mild
// grain (natural-looking).
//
// Presets: kino's "fast" (the default, x264-ultrafast-like decisions) and "quality" are both measured;
// the BD-rate column of each x264 row gives kino fast's figure, then kino quality's.
//
// Flags: --sizes 832x480,1280x720  --clips fractal,pan  --frames 72  --keyint 8  --qps 22,27,32,37
//        --presets fast,quality  --warmup 24 (frames each kino build encodes untimed before each
//        preset's runs, so that the wasm module is past JavaScriptCore's tier-up; 0 = none)
// Prints a markdown table (docs/BENCHMARKS.md, section Media).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { H264Encoder } from "../../src/media/h264/encoder.ts";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}
const SIZES = flag("sizes", "832x480,1280x720").split(",").map((s) => s.split("x").map(Number) as [number, number]);
const CLIPS = flag("clips", "fractal,pan").split(",");
const FRAMES = Number(flag("frames", "72"));
const KEYINT = Number(flag("keyint", "8"));
const QPS = flag("qps", "22,27,32,37").split(",").map(Number);
const FPS = 24;
const X264_PRESETS = ["ultrafast", "veryfast"];
const PRESETS = flag("presets", "fast,quality").split(",") as ("fast" | "quality")[];
const WARMUP = Number(flag("warmup", "24"));

// ---- clips ----

/** Deterministic hash noise in [0, 1). */
function hash(x: number, y: number, seed: number): number {
  let h = Math.imul(x | 0, 374761393) ^ Math.imul(y | 0, 668265263) ^ Math.imul(seed, 2246822519);
  h = Math.imul(h ^ (h >>> 13), 1274126177);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/** Smooth value noise with `octaves` octaves, about [0, 1). */
function fbm(x: number, y: number, octaves: number, seed: number): number {
  let sum = 0, amp = 0.5, norm = 0;
  for (let o = 0; o < octaves; o++, x *= 2, y *= 2, amp *= 0.5) {
    const xi = Math.floor(x), yi = Math.floor(y), fx = x - xi, fy = y - yi;
    const sx = fx * fx * (3 - 2 * fx), sy = fy * fy * (3 - 2 * fy);
    const a = hash(xi, yi, seed + o), b = hash(xi + 1, yi, seed + o), c = hash(xi, yi + 1, seed + o), d = hash(xi + 1, yi + 1, seed + o);
    sum += amp * (a + (b - a) * sx + (c - a) * sy + (a - b - c + d) * sx * sy);
    norm += amp;
  }
  return sum / norm;
}

interface Texture {
  w: number;
  h: number;
  rgb: Float32Array;
}

/** Bilinear sample of a texture at (x, y), clamped to its edges. */
function sample(tex: Texture, x: number, y: number, out: number[]): void {
  x = Math.max(0, Math.min(tex.w - 1.001, x));
  y = Math.max(0, Math.min(tex.h - 1.001, y));
  const xi = Math.floor(x), yi = Math.floor(y), fx = x - xi, fy = y - yi;
  const i = (yi * tex.w + xi) * 3, j = i + tex.w * 3;
  for (let c = 0; c < 3; c++) {
    const top = tex.rgb[i + c]! + (tex.rgb[i + 3 + c]! - tex.rgb[i + c]!) * fx;
    const bottom = tex.rgb[j + c]! + (tex.rgb[j + 3 + c]! - tex.rgb[j + c]!) * fx;
    out[c] = top + (bottom - top) * fy;
  }
}

function makeTexture(w: number, h: number, texel: (x: number, y: number, out: number[]) => void): Texture {
  const rgb = new Float32Array(w * h * 3), px = [0, 0, 0];
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      texel(x, y, px);
      rgb.set(px, (y * w + x) * 3);
    }
  return { w, h, rgb };
}

/** Frames of a clip as rgb24; `at(t, x, y, out)` gives the colour before grain. */
function render(w: number, h: number, frames: number, grain: number, at: (t: number, x: number, y: number, out: number[]) => void): Uint8Array[] {
  const px = [0, 0, 0];
  return Array.from({ length: frames }, (_, t) => {
    const out = new Uint8Array(w * h * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        at(t, x, y, px);
        const n = (hash(x, y, 1000 + t) - 0.5) * 2 * grain, i = (y * w + x) * 3;
        for (let c = 0; c < 3; c++) out[i + c] = Math.max(0, Math.min(255, Math.round(px[c]! + n)));
      }
    return out;
  });
}

/** Zoom (2x over the clip) into a texture made at twice the frame size, so detail never runs out. */
export function fractalClip(w: number, h: number, frames: number): Uint8Array[] {
  const tw = 2 * w, th = 2 * h;
  const tex = makeTexture(tw, th, (x, y, out) => {
    let zr = 0, zi = 0, n = 0;
    const cr = -0.7453 + (x / tw - 0.5) * 0.02, ci = 0.1127 + (y / th - 0.5) * 0.02 * (th / tw);
    for (; n < 48 && zr * zr + zi * zi < 4; n++) [zr, zi] = [zr * zr - zi * zi + cr, 2 * zr * zi + ci];
    const f = fbm(x / 24, y / 24, 5, 7), m = n / 48;
    out[0] = 255 * (0.5 + 0.5 * Math.sin(6 * m + 4 * f));
    out[1] = 255 * (0.5 + 0.5 * Math.sin(6 * m + 4 * f + 2));
    out[2] = 255 * (0.45 * f + 0.55 * (0.5 + 0.5 * Math.cos(9 * m)));
  });
  return render(w, h, frames, 6, (t, x, y, out) => {
    const scale = 2 / Math.pow(2, t / Math.max(1, frames - 1)); // texture pixels per frame pixel: 2 -> 1
    sample(tex, tw / 2 + (x - w / 2) * scale, th / 2 + (y - h / 2) * scale, out);
  });
}

/** A landscape (sky, clouds, hills, grass, trees) panned across at 1.7 px/frame with a car passing. */
export function panClip(w: number, h: number, frames: number): Uint8Array[] {
  const tw = w + Math.ceil(1.7 * frames) + 4, th = h + Math.ceil(0.3 * frames) + 4;
  const tex = makeTexture(tw, th, (x, y, out) => {
    const v = y / th, horizon = 0.45 + 0.12 * (fbm(x / 300, 0, 3, 11) - 0.5) + 0.04 * (fbm(x / 60, 0, 2, 12) - 0.5);
    if (v < horizon) {
      const cloud = Math.max(0, fbm(x / 140, y / 70, 5, 3) - 0.45) * 2.2;
      out[0] = 90 + 80 * v + 150 * cloud;
      out[1] = 140 + 70 * v + 110 * cloud;
      out[2] = 230 - 30 * v + 25 * cloud;
    } else {
      const grass = fbm(x / 9, y / 5, 4, 5), patch = fbm(x / 120, y / 60, 3, 6);
      const tree = fbm(x / 40, 0, 2, 9) > 0.62 && v < horizon + 0.12 * fbm(x / 15, 0, 2, 10);
      const shade = tree ? 0.45 : 1;
      out[0] = shade * (60 + 70 * patch + 60 * grass);
      out[1] = shade * (90 + 70 * patch + 70 * grass);
      out[2] = shade * (40 + 30 * grass);
    }
  });
  return render(w, h, frames, 2, (t, x, y, out) => {
    const carX = (w * 1.2 - t * 9) % (w * 1.4), carY = h * 0.72, cw = w * 0.12, ch = h * 0.07;
    if (x > carX && x < carX + cw && y > carY && y < carY + ch) {
      const window = y < carY + ch * 0.45 && (x - carX) % (cw / 3) > cw / 12;
      out[0] = window ? 40 : 190;
      out[1] = window ? 50 : 30;
      out[2] = window ? 70 : 35;
      return;
    }
    sample(tex, x + 1.7 * t + 1, y + 0.3 * t + 1, out);
  });
}

// ---- measurements ----

interface Point {
  kbps: number;
  psnr: number;
}

function psnrY(a: Uint8Array, b: Uint8Array, n: number): number {
  let sse = 0;
  for (let i = 0; i < n; i++) sse += (a[i]! - b[i]!) ** 2;
  return sse === 0 ? 99 : 10 * Math.log10((255 * 255 * n) / sse);
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const kbpsOf = (bytes: number, frames: number) => (bytes * 8 * FPS) / frames / 1000;

/** Our encoder: bits, Y-PSNR of the reconstruction (what decoders output), CPU seconds of the encode calls. */
export async function encodeOurs(frames: Uint8Array[], w: number, h: number, qp: number, backend: "wasm" | "native", preset: "fast" | "quality" = "fast", input: "rgb24" | "i420" = "rgb24") {
  const enc = await H264Encoder.create({ width: w, height: h, qp, keyframeInterval: KEYINT, fps: FPS, backend, preset, input });
  let bytes = 0, cpu = 0;
  const psnrs: number[] = [], sources: Uint8Array[] = [];
  for (const frame of frames) {
    const c0 = process.cpuUsage();
    bytes += enc.encode(frame).nals[0]!.byteLength;
    const c = process.cpuUsage(c0);
    cpu += (c.user + c.system) / 1e6;
    const src = enc.sourceI420();
    sources.push(src);
    psnrs.push(psnrY(enc.reconstructionI420(), src, w * h));
  }
  enc.close();
  return { point: { kbps: kbpsOf(bytes, frames.length), psnr: mean(psnrs) }, cpu, sources };
}

function run(cmd: string[]): { cpu: number } {
  const proc = Bun.spawnSync(cmd, { stdout: "ignore", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${proc.stderr.toString()}`);
  const usage = proc.resourceUsage!;
  return { cpu: Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 };
}

/** libx264 through ffmpeg on the raw I420 file (or, with `rgb`, on the raw RGB file, converted by
 *  swscale to BT.601 limited range on the same thread); CPU seconds beyond ffmpeg's own start-up;
 *  quality is measured on the I420 encode. */
function encodeX264(dir: string, input: { yuv: string } | { rgb: string }, w: number, h: number, frames: number, preset: string, qp: number, sources: Uint8Array[]) {
  const out = join(dir, `x264-${preset}-${qp}.h264`), decoded = join(dir, "decoded.yuv");
  const source = "yuv" in input ? ["-pix_fmt", "yuv420p", "-s", `${w}x${h}`, "-r", String(FPS), "-i", input.yuv]
    : ["-pix_fmt", "rgb24", "-s", `${w}x${h}`, "-r", String(FPS), "-i", input.rgb, "-filter_threads", "1", "-vf", "scale=out_color_matrix=bt601:out_range=tv,format=yuv420p"];
  const args = (n: number) => ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", ...source,
    "-frames:v", String(n), "-c:v", "libx264", "-preset", preset, "-profile:v", "baseline", "-threads", "1", "-g", String(KEYINT || 250),
    "-keyint_min", String(KEYINT || 250), "-sc_threshold", "0", "-qp", String(qp), "-f", "h264", out];
  const startup = run(args(1)).cpu;
  const { cpu } = run(args(frames));
  if ("rgb" in input) return { point: { kbps: NaN, psnr: NaN }, cpu: Math.max(1e-6, cpu - startup) };
  run(["ffmpeg", "-v", "error", "-y", "-i", out, "-f", "rawvideo", "-pix_fmt", "yuv420p", decoded]);
  const yuv420 = readFileSync(decoded), size = (w * h * 3) / 2;
  const psnrs = sources.map((src, i) => psnrY(yuv420.subarray(i * size, i * size + w * h), src, w * h));
  return { point: { kbps: kbpsOf(readFileSync(out).byteLength, frames), psnr: mean(psnrs) }, cpu: Math.max(1e-6, cpu - startup) };
}

/** Bjøntegaard delta rate of `test` against `ref` in percent: cubic fits of log(rate) over Y-PSNR,
 *  averaged over the PSNR range both cover. */
export function bdRate(ref: Point[], test: Point[]): number {
  const fit = (pts: Point[]) => polyfit3(pts.map((p) => p.psnr), pts.map((p) => Math.log(p.kbps)));
  const integral = (c: number[], x: number) => c[0]! * x + (c[1]! * x ** 2) / 2 + (c[2]! * x ** 3) / 3 + (c[3]! * x ** 4) / 4;
  const lo = Math.max(Math.min(...ref.map((p) => p.psnr)), Math.min(...test.map((p) => p.psnr)));
  const hi = Math.min(Math.max(...ref.map((p) => p.psnr)), Math.max(...test.map((p) => p.psnr)));
  if (!(hi > lo)) return NaN;
  const a = fit(ref), b = fit(test);
  const diff = (integral(b, hi) - integral(b, lo) - (integral(a, hi) - integral(a, lo))) / (hi - lo);
  return (Math.exp(diff) - 1) * 100;
}

/** Least-squares cubic y = c0 + c1 x + c2 x^2 + c3 x^3 (normal equations, Gaussian elimination). */
function polyfit3(xs: number[], ys: number[]): number[] {
  const x0 = mean(xs), n = 4;
  const m = Array.from({ length: n }, (_, r) => Array.from({ length: n + 1 }, (_, c) =>
    c < n ? xs.reduce((s, x) => s + (x - x0) ** (r + c), 0) : xs.reduce((s, x, i) => s + (x - x0) ** r * ys[i]!, 0)));
  for (let col = 0; col < n; col++) {
    const pivot = m.slice(col).reduce((best, row, i) => (Math.abs(row[col]!) > Math.abs(m[best]![col]!) ? col + i : best), col);
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r]![col]! / m[col]![col]!;
      for (let c = col; c <= n; c++) m[r]![c]! -= f * m[col]![c]!;
    }
  }
  const shifted = m.map((row, i) => row[n]! / row[i]!);
  // expand sum s_k (x - x0)^k back into powers of x
  const c = [0, 0, 0, 0], binom = [[1], [1, 1], [1, 2, 1], [1, 3, 3, 1]];
  for (let k = 0; k < n; k++) for (let j = 0; j <= k; j++) c[j]! += shifted[k]! * binom[k]![j]! * (-x0) ** (k - j);
  return c;
}

// ---- the run ----

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), "kino-bench-media-"));
  const print = (s: string) => console.log(s);
  try {
    print(`| clip | size | encoder | fps from RGB | / x264 ultrafast | fps from I420 | / x264 ultrafast | ${QPS.map((q) => `QP ${q}: kbit/s @ Y-PSNR dB`).join(" | ")} | BD-rate of kino ${PRESETS.join(" / ")} vs this |`);
    print(`|---|---|---|---|---|---|---|${QPS.map(() => "---|").join("")}---|`);
    for (const [w, h] of SIZES) {
      for (const clip of CLIPS) {
        const frames = clip === "fractal" ? fractalClip(w, h, FRAMES) : panClip(w, h, FRAMES);
        // The I420 frames of kino's conversion: x264's input, and ours for the from-I420 figures.
        const sources = (await encodeOurs(frames, w, h, QPS[0]!, "wasm")).sources;
        const rows: { name: string; fps: { rgb: number; i420: number }; points: Point[]; wasm?: boolean }[] = [];
        const ours: { preset: string; points: Point[] }[] = [];
        for (const preset of PRESETS) {
          const cpu = { native: { rgb: 0, i420: 0 }, wasm: { rgb: 0, i420: 0 } };
          const points: Point[] = [];
          // Untimed warm-up, the same for both builds: the first WARMUP frames once. The wasm module's
          // code is compiled by JavaScriptCore's optimising tier in the background only after it has
          // run a while (about 20 frames at 832x480), and that compilation was charged to the first
          // frames (the first 72 ran at ~0.6x the steady speed); x264's start-up is taken off by the
          // subtraction of a 1-frame run (encodeX264).
          if (WARMUP > 0) for (const backend of ["native", "wasm"] as const) await encodeOurs(frames.slice(0, WARMUP), w, h, QPS[0]!, backend, preset);
          for (const qp of QPS) {
            for (const backend of ["native", "wasm"] as const) {
              const rgb = await encodeOurs(frames, w, h, qp, backend, preset);
              const yuv = await encodeOurs(sources, w, h, qp, backend, preset, "i420");
              if (backend === "native") points.push(rgb.point);
              else if (rgb.point.kbps !== points.at(-1)!.kbps) throw new Error(`wasm and native streams differ (${clip} ${w}x${h} QP ${qp} ${preset})`);
              if (yuv.point.kbps !== rgb.point.kbps) throw new Error(`i420 and rgb24 input streams differ (${clip} ${w}x${h} QP ${qp} ${preset} ${backend})`);
              cpu[backend].rgb += rgb.cpu;
              cpu[backend].i420 += yuv.cpu;
            }
          }
          ours.push({ preset, points });
          const fps = (c: { rgb: number; i420: number }) => ({ rgb: (FRAMES * QPS.length) / c.rgb, i420: (FRAMES * QPS.length) / c.i420 });
          rows.push({ name: `kino ${preset} native`, fps: fps(cpu.native), points });
          rows.push({ name: `kino ${preset} wasm`, fps: fps(cpu.wasm), points, wasm: true });
        }
        const yuv = join(dir, "source.yuv"), rgb = join(dir, "source.rgb");
        writeFileSync(yuv, Buffer.concat(sources));
        writeFileSync(rgb, Buffer.concat(frames));
        for (const preset of X264_PRESETS) {
          const cpu = { rgb: 0, i420: 0 };
          const points: Point[] = [];
          for (const qp of QPS) {
            const r = encodeX264(dir, { yuv }, w, h, FRAMES, preset, qp, sources);
            cpu.i420 += r.cpu;
            points.push(r.point);
            cpu.rgb += encodeX264(dir, { rgb }, w, h, FRAMES, preset, qp, sources).cpu;
          }
          rows.push({ name: `x264 ${preset}`, fps: { rgb: (FRAMES * QPS.length) / cpu.rgb, i420: (FRAMES * QPS.length) / cpu.i420 }, points });
        }
        const ultrafast = rows.find((r) => r.name === "x264 ultrafast")!.fps;
        for (const row of rows) {
          const bd = row.name.startsWith("kino") ? "" : ours.map((o) => `${fmt(bdRate(row.points, o.points))} %`).join(" / ");
          const points = row.wasm ? QPS.map(() => "same stream") : row.points.map((p) => `${fmt(p.kbps, 0)} @ ${fmt(p.psnr, 2)}`);
          const speed = `${fmt(row.fps.rgb, 0)} | ${fmt(row.fps.rgb / ultrafast.rgb, 2)} | ${fmt(row.fps.i420, 0)} | ${fmt(row.fps.i420 / ultrafast.i420, 2)}`;
          print(`| ${clip} | ${w}x${h} | ${row.name} | ${speed} | ${points.join(" | ")} | ${bd} |`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
