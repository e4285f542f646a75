// Decodes an MP4 (or concatenated fMP4) to RGB24 frames with ffmpeg, the independent decoder.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function decodeFrames(bytes: Uint8Array, width: number, height: number): Promise<Uint8Array[]> {
  const dir = mkdtempSync(join(tmpdir(), "kino-decode-"));
  try {
    const path = join(dir, "in.mp4");
    await Bun.write(path, bytes);
    const proc = Bun.spawnSync(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], { stdout: "pipe" });
    if (proc.exitCode !== 0) throw new Error(`ffmpeg failed: ${proc.stderr.toString()}`);
    const raw = new Uint8Array(proc.stdout);
    const size = width * height * 3;
    return Array.from({ length: raw.length / size }, (_, i) => raw.subarray(i * size, (i + 1) * size));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The RGB of pixel (x, y) of an RGB24 frame. */
export function pixel(frame: Uint8Array, width: number, x: number, y: number): [number, number, number] {
  const o = (y * width + x) * 3;
  return [frame[o]!, frame[o + 1]!, frame[o + 2]!];
}
