// ffprobe (Debian ffmpeg) as the independent judge of the MP4s kino writes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ProbedVideo {
  codec: string;
  profile: string;
  width: number;
  height: number;
  frames: number;
  fps: number;
  durationS: number;
}

export async function probeMp4(bytes: Uint8Array): Promise<ProbedVideo> {
  const dir = mkdtempSync(join(tmpdir(), "kino-probe-"));
  try {
    const path = join(dir, "video.mp4");
    await Bun.write(path, bytes);
    const proc = Bun.spawnSync([
      "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
      "-show_entries", "stream=codec_name,profile,width,height,nb_read_frames,r_frame_rate:format=duration,format_name",
      "-of", "json", path,
    ]);
    if (proc.exitCode !== 0) throw new Error(`ffprobe failed: ${proc.stderr.toString()}`);
    const info = JSON.parse(proc.stdout.toString());
    const stream = info.streams[0];
    const [num, den] = stream.r_frame_rate.split("/").map(Number);
    return {
      codec: stream.codec_name,
      profile: stream.profile,
      width: stream.width,
      height: stream.height,
      frames: Number(stream.nb_read_frames),
      fps: num / den,
      durationS: Number(info.format.duration),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Top-level MP4 box types in order, e.g. ["ftyp", "moov", "mdat"]. */
export function topLevelBoxes(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const types: string[] = [];
  for (let offset = 0; offset + 8 <= bytes.byteLength; ) {
    let size = view.getUint32(offset);
    if (size === 1) size = Number(view.getBigUint64(offset + 8));
    types.push(new TextDecoder().decode(bytes.subarray(offset + 4, offset + 8)));
    if (size < 8) break;
    offset += size;
  }
  return types;
}

/** Indices of the frames ffprobe reports as key frames (IDR pictures in our streams). */
export async function keyFrameIndices(bytes: Uint8Array): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), "kino-probe-"));
  try {
    const path = join(dir, "video.mp4");
    await Bun.write(path, bytes);
    const proc = Bun.spawnSync(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=key_frame", "-of", "csv=p=0", path]);
    if (proc.exitCode !== 0) throw new Error(`ffprobe failed: ${proc.stderr.toString()}`);
    return proc.stdout.toString().trim().split("\n").flatMap((line, i) => (line.trim() === "1" ? [i] : []));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
