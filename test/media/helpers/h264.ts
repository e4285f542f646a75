// Helpers for the H.264 encoder tests: deterministic synthetic video (a panning textured scene
// with moving shapes and mild noise, like camera footage), ffmpeg/ffprobe as independent decoder,
// and PSNR.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Small deterministic hash noise in [-1, 1). */
function noise(x: number, y: number, t: number): number {
  let h = (x * 374761393 + y * 668265263 + t * 2147483647) | 0;
  h = Math.imul(h ^ (h >>> 13), 1274126177);
  h ^= h >>> 16;
  return ((h & 0xffff) / 32768) - 1;
}

export interface SceneOptions {
  /** Camera pan in pixels per frame (fractional values exercise sub-sample motion). */
  panX?: number;
  panY?: number;
  /** Noise amplitude in 8-bit steps. */
  noise?: number;
  /** Amplitude of an extra fine texture (2-3 pixel period) moving with the pan: more detail to code. */
  detail?: number;
}

/**
 * Frame t of a panning scene: smooth colour gradients with a fine texture, a textured disc and a
 * checkered box that move on their own, plus per-frame noise. Returns rgb24 (or rgba with alpha 255).
 */
export function sceneFrame(width: number, height: number, t: number, o: SceneOptions = {}, rgba = false): Uint8Array {
  const bpp = rgba ? 4 : 3;
  const panX = o.panX ?? 1.25, panY = o.panY ?? 0.5, amp = o.noise ?? 2, detail = o.detail ?? 0;
  const out = new Uint8Array(width * height * bpp);
  const discX = width * (0.3 + 0.2 * Math.sin(t / 9)), discY = height * (0.5 + 0.25 * Math.cos(t / 11));
  const discR = Math.max(4, Math.min(width, height) * 0.2);
  const boxX = (width * 0.6 + t * 2.5) % width, boxY = height * 0.2, boxW = width * 0.25, boxH = height * 0.3;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const X = x + t * panX, Y = y + t * panY;
      let r = 110 + 70 * Math.sin(X / 53) + 30 * Math.cos(Y / 29) + 12 * Math.sin((X + Y) / 5);
      let g = 120 + 60 * Math.cos(Y / 41) + 25 * Math.sin(X / 17) + 10 * Math.sin((X - 2 * Y) / 7);
      let b = 100 + 50 * Math.sin((X + Y) / 61) + 20 * Math.cos(X / 13);
      if (detail) {
        const fine = detail * Math.sin(X * 2.1 + Math.cos(Y * 0.7)) * Math.cos(Y * 1.9 - X * 0.3);
        r += fine;
        g += fine;
        b += fine;
      }
      const dx = x - discX, dy = y - discY;
      if (dx * dx + dy * dy < discR * discR) {
        const ring = Math.sin(Math.sqrt(dx * dx + dy * dy) / 2 + t / 3);
        r = 200 + 40 * ring;
        g = 80 + 30 * ring;
        b = 60;
      }
      const bx = (x - boxX + width) % width;
      if (bx < boxW && y >= boxY && y < boxY + boxH) {
        const check = ((Math.floor(bx / 6) + Math.floor((y - boxY) / 6)) & 1) === 0;
        r = check ? 230 : 40;
        g = check ? 230 : 60;
        b = check ? 210 : 140;
      }
      const n = amp * noise(x, y, t);
      const i = (y * width + x) * bpp;
      out[i] = Math.max(0, Math.min(255, Math.round(r + n)));
      out[i + 1] = Math.max(0, Math.min(255, Math.round(g + n)));
      out[i + 2] = Math.max(0, Math.min(255, Math.round(b + n)));
      if (rgba) out[i + 3] = 255;
    }
  }
  return out;
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32), for reproducible fuzzing. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A constant-colour frame. */
export function flatFrame(width: number, height: number, value: number): Uint8Array {
  return new Uint8Array(width * height * 3).fill(value);
}

/** Uniform random bytes from a seeded generator (worst case for the encoder). */
export function noiseFrame(width: number, height: number, seed: number): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < out.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
  }
  return out;
}

function withScratch<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "kino-h264-"));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface DecodedVideo {
  /** Concatenated yuv420p frames as ffmpeg decodes them. */
  yuv: Uint8Array;
  frames: number;
  /** ffmpeg's error output; empty when the stream decoded cleanly. */
  errors: string;
}

/** Decodes an Annex B stream with ffmpeg into raw yuv420p (one frame per decoded picture). */
export function decodeH264(stream: Uint8Array, width: number, height: number): DecodedVideo {
  return withScratch((dir) => {
    const path = join(dir, "in.h264");
    writeFileSync(path, stream);
    const proc = Bun.spawnSync(
      ["ffmpeg", "-v", "error", "-err_detect", "crccheck+bitstream+buffer+explode", "-f", "h264", "-i", path,
        "-f", "rawvideo", "-pix_fmt", "yuv420p", "-vsync", "passthrough", "-"],
      { stdout: "pipe", stderr: "pipe" },
    );
    const yuv = new Uint8Array(proc.stdout);
    const frameSize = (width * height * 3) / 2;
    const errors = proc.exitCode === 0 ? proc.stderr.toString() : `exit ${proc.exitCode}: ${proc.stderr.toString()}`;
    return { yuv, frames: Math.floor(yuv.byteLength / frameSize), errors };
  });
}

export interface ProbedFrame {
  keyframe: boolean;
  pictType: string;
}

/** Per-frame key flags and picture types as ffprobe reports them. */
export function probeFrames(stream: Uint8Array): { width: number; height: number; profile: string; level: number; frames: ProbedFrame[] } {
  return withScratch((dir) => {
    const path = join(dir, "in.h264");
    writeFileSync(path, stream);
    const proc = Bun.spawnSync(
      ["ffprobe", "-v", "error", "-f", "h264", "-select_streams", "v:0", "-show_entries",
        "stream=width,height,profile,level:frame=key_frame,pict_type", "-of", "json", path],
      { stdout: "pipe", stderr: "pipe" },
    );
    if (proc.exitCode !== 0) throw new Error(`ffprobe failed: ${proc.stderr.toString()}`);
    const info = JSON.parse(proc.stdout.toString());
    const s = info.streams[0];
    return {
      width: s.width,
      height: s.height,
      profile: s.profile,
      level: s.level,
      frames: (info.frames as { key_frame: number; pict_type: string }[]).map((f) => ({ keyframe: f.key_frame === 1, pictType: f.pict_type })),
    };
  });
}

/** PSNR in dB between two equally sized byte planes (Infinity when identical). */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  if (a.byteLength !== b.byteLength) throw new Error(`psnr: sizes differ (${a.byteLength} vs ${b.byteLength})`);
  let sse = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    sse += d * d;
  }
  if (sse === 0) return Infinity;
  return 10 * Math.log10((255 * 255 * a.length) / sse);
}

/** The Y plane of frame `index` in a buffer of concatenated I420 frames. */
export function lumaOf(yuv: Uint8Array, width: number, height: number, index = 0): Uint8Array {
  const frameSize = (width * height * 3) / 2;
  return yuv.subarray(index * frameSize, index * frameSize + width * height);
}

/** Frame `index` (all three planes) in a buffer of concatenated I420 frames. */
export function frameOf(yuv: Uint8Array, width: number, height: number, index: number): Uint8Array {
  const frameSize = (width * height * 3) / 2;
  return yuv.subarray(index * frameSize, (index + 1) * frameSize);
}
