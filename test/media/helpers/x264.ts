// Test helpers for the MP4 writers: real H.264 from Debian's ffmpeg + libx264, grouped into access
// units; ffprobe / ffmpeg as oracles; and a minimal ISO-BMFF box walker to read back what we wrote.
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { splitAnnexB, type AvcSample, type AvcTrackConfig } from "../../../src/media/mp4/index.ts";

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `kino-${prefix}-`));
}

function run(cmd: string[]): Uint8Array {
  const proc = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} failed (${proc.exitCode}): ${proc.stderr.toString()}`);
  }
  return proc.stdout;
}

export interface X264Clip {
  /** The raw Annex B stream ffmpeg wrote. */
  h264Path: string;
  track: AvcTrackConfig;
  samples: AvcSample[];
}

export interface X264Options {
  width: number;
  height: number;
  fps: number;
  frames: number;
  gop: number;
  profile?: "baseline" | "main" | "high" | "high444";
  pixFmt?: string;
}

/** Encodes a synthetic test pattern with libx264 (no B-frames) and splits it into access units. */
export function encodeX264(dir: string, o: X264Options): X264Clip {
  const h264Path = join(dir, `clip-${o.width}x${o.height}-${o.profile ?? "baseline"}.h264`);
  run([
    "ffmpeg", "-v", "error", "-y",
    "-f", "lavfi", "-i", `testsrc2=size=${o.width}x${o.height}:rate=${o.fps}`,
    "-frames:v", String(o.frames), "-pix_fmt", o.pixFmt ?? "yuv420p",
    "-c:v", "libx264", "-profile:v", o.profile ?? "baseline", "-bf", "0", "-g", String(o.gop),
    "-f", "h264", h264Path,
  ]);
  const { sps, pps, samples } = accessUnits(new Uint8Array(readFileSync(h264Path)));
  return { h264Path, track: { width: o.width, height: o.height, fps: o.fps, sps, pps }, samples };
}

/**
 * Groups an Annex B stream into access units: a new one starts at each slice NAL (type 1 or 5)
 * whose first_mb_in_slice is 0 (its ue(v) code is the single bit 1). SPS/PPS go to the track
 * config; AUD and SEI are dropped.
 */
export function accessUnits(stream: Uint8Array): { sps: Uint8Array; pps: Uint8Array; samples: AvcSample[] } {
  let sps: Uint8Array | undefined;
  let pps: Uint8Array | undefined;
  const samples: AvcSample[] = [];
  for (const nal of splitAnnexB(stream)) {
    const type = nal[0]! & 0x1f;
    if (type === 7) sps ??= nal;
    else if (type === 8) pps ??= nal;
    else if (type === 1 || type === 5) {
      const firstMbIsZero = (nal[1]! & 0x80) !== 0;
      if (firstMbIsZero || samples.length === 0) samples.push({ nals: [], keyframe: false });
      const au = samples[samples.length - 1]!;
      au.nals.push(nal);
      if (type === 5) au.keyframe = true;
    }
  }
  if (!sps || !pps) throw new Error("stream has no SPS/PPS");
  return { sps, pps, samples };
}

export interface ProbedStream {
  codec_name: string;
  profile: string;
  level: number;
  width: number;
  height: number;
  r_frame_rate: string;
  nb_read_frames: string;
  duration?: string;
}

export function ffprobe(path: string): ProbedStream {
  const out = run(["ffprobe", "-v", "error", "-count_frames", "-show_streams", "-of", "json", path]);
  const streams = JSON.parse(new TextDecoder().decode(out)).streams as ProbedStream[];
  if (streams.length !== 1) throw new Error(`expected one stream in ${path}, got ${streams.length}`);
  return streams[0]!;
}

/** Every frame decoded to packed RGB, in decode order, with no frame dropped or duplicated. */
export function decodeRgb(path: string, inputFormat?: string): Uint8Array {
  return run([
    "ffmpeg", "-v", "error",
    ...(inputFormat ? ["-f", inputFormat] : []), "-i", path,
    "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
  ]);
}

// ---- a minimal ISO-BMFF box walker ----

export interface Box {
  type: string;
  /** Offset of the box's first byte in the buffer that was walked. */
  start: number;
  size: number;
  /** The box contents after its header (size, type, largesize if any). */
  body: Uint8Array;
  view: DataView;
}

/** The boxes laid end to end in `bytes` (a whole file, or one box's body). */
export function walkBoxes(bytes: Uint8Array, base = 0): Box[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const boxes: Box[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    if (pos + 8 > bytes.length) throw new Error(`truncated box header at ${base + pos}`);
    let size = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    let header = 8;
    if (size === 1) {
      size = Number(view.getBigUint64(pos + 8));
      header = 16;
    }
    if (size < header || pos + size > bytes.length) throw new Error(`bad size ${size} for '${type}' at ${base + pos}`);
    const body = bytes.subarray(pos + header, pos + size);
    boxes.push({ type, start: base + pos, size, body, view: new DataView(body.buffer, body.byteOffset, body.byteLength) });
    pos += size;
  }
  return boxes;
}

/** The children of a container box; `skip` bytes of fields come before them (stsd: 8, avc1: 78). */
export function children(box: Box, skip = 0): Box[] {
  return walkBoxes(box.body.subarray(skip), box.start + (box.size - box.body.length) + skip);
}

/** Follows a path like "moov/trak/mdia/minf/stbl/stsz" through plain containers. */
export function findBox(boxes: Box[], path: string): Box {
  const [first, ...rest] = path.split("/");
  const found = boxes.find((b) => b.type === first);
  if (!found) throw new Error(`no '${first}' box (have ${boxes.map((b) => b.type).join(", ")})`);
  return rest.length === 0 ? found : findBox(children(found), rest.join("/"));
}

/** A FullBox's version, flags, and a reader over the fields after them. */
export function fullBox(box: Box) {
  const v = box.view;
  let pos = 4;
  const reader = {
    version: v.getUint8(0),
    flags: v.getUint32(0) & 0xffffff,
    u8: () => v.getUint8((pos += 1) - 1),
    u16: () => v.getUint16((pos += 2) - 2),
    u32: () => v.getUint32((pos += 4) - 4),
    i32: () => v.getInt32((pos += 4) - 4),
    u64: () => Number(v.getBigUint64((pos += 8) - 8)),
    skip: (n: number) => void (pos += n),
    get remaining() {
      return v.byteLength - pos;
    },
  };
  return reader;
}

/** Four-character codes of an ftyp: major brand first, then the compatible brands. */
export function ftypBrands(ftyp: Box): string[] {
  const brands: string[] = [];
  for (let pos = 0; pos < ftyp.body.length; pos += 4) {
    if (pos === 4) continue; // minor_version
    brands.push(String.fromCharCode(...ftyp.body.subarray(pos, pos + 4)));
  }
  return brands;
}

/** The bytes a sample occupies in mdat: its NAL units, each after a 4-byte big-endian length. */
export function lengthPrefixed(sample: AvcSample): Uint8Array {
  const total = sample.nals.reduce((n, nal) => n + 4 + nal.length, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let pos = 0;
  for (const nal of sample.nals) {
    view.setUint32(pos, nal.length);
    out.set(nal, pos + 4);
    pos += 4 + nal.length;
  }
  return out;
}

/** x264 baseline/high streams name their profile in ffprobe's words; map to profile_idc. */
export const PROFILE_IDC: Record<string, number> = {
  "Constrained Baseline": 66,
  Baseline: 66,
  Main: 77,
  High: 100,
  "High 4:4:4 Predictive": 244,
};
