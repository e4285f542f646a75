// Complete ("faststart") MP4 files with one H.264 video track: ftyp, then moov, then mdat, so a
// player has the whole index before the first sample byte arrives. `buildMp4` assembles a small file
// in memory; `Mp4FileWriter` streams samples of a long clip to a temporary mdat file and, at close,
// writes the header (whose chunk offsets are only known once every sample size is) followed by a copy
// of the sample data. Both produce byte-identical files for the same input.
//
// The moov skeleton (`writeMovie`) is shared with the fragmented writer, which fills it with empty
// sample tables and an `mvex`.

import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { BoxWriter, mdatHeader } from "./boxes.ts";
import { checkTrack, sampleByteLength, writeAvcC, writeSampleData, type AvcSample, type AvcTrackConfig } from "./avc.ts";

export interface MediaTiming {
  /** Ticks per second of the track's media time (also used for the movie). */
  timescale: number;
  /** Ticks per frame. */
  sampleDelta: number;
}

/**
 * Picks a timescale that represents the frame rate exactly where it can: decimal rates as
 * (fps·1000)/1000 (24 fps → 24000/1000, 23.976 → 23976/1000), NTSC-style rates as n/1001
 * (24000/1001 → 24000/1001).
 */
export function mediaTiming(fps: number): MediaTiming {
  for (const sampleDelta of [1000, 1001]) {
    const timescale = Math.round(fps * sampleDelta);
    if (Math.abs(timescale / sampleDelta - fps) <= 1e-9 * fps) return { timescale, sampleDelta };
  }
  const timescale = Math.round(fps * 1000);
  if (timescale < 1) throw new Error(`fps too small to represent: ${fps}`);
  return { timescale, sampleDelta: 1000 };
}

/**
 * Writes `moov`: mvhd, one video trak (tkhd, mdia with mdhd/hdlr/minf, the avc1 sample entry), the
 * caller's sample tables, then optional extra children (the fragmented writer's `mvex`).
 * `duration` is in `timing.timescale` ticks; 0 means unknown (fragmented files).
 */
export function writeMovie(
  w: BoxWriter,
  track: AvcTrackConfig,
  timing: MediaTiming,
  duration: number,
  writeSampleTables: (w: BoxWriter) => void,
  writeExtra: (w: BoxWriter) => void = () => {},
): void {
  // Version 1 headers carry 64-bit times; needed only past 2^32 ticks (~50 hours at 24000 ticks/s).
  const version = duration > 0xffffffff ? 1 : 0;
  const times = (w: BoxWriter, withTimescale: boolean, trackId?: number) => {
    const word = (v: number) => (version === 1 ? w.u64(v) : w.u32(v));
    word(0); // creation and modification time: 0 keeps output reproducible
    word(0);
    if (withTimescale) w.u32(timing.timescale);
    if (trackId !== undefined) w.u32(trackId).u32(0);
    word(duration);
  };
  w.box("moov", (w) => {
    w.fullBox("mvhd", version, 0, (w) => {
      times(w, true);
      w.fixed16_16(1).fixed8_8(1).u16(0).zeros(8); // rate 1.0, volume 1.0, reserved
      w.identityMatrix().zeros(24).u32(2); // pre_defined, next_track_ID
    });
    w.box("trak", (w) => {
      // flags 3: track enabled and used in the presentation
      w.fullBox("tkhd", version, 3, (w) => {
        times(w, false, 1);
        w.zeros(8).i16(0).i16(0).fixed8_8(0).u16(0); // reserved, layer, alternate_group, volume (video: 0)
        w.identityMatrix().fixed16_16(track.width).fixed16_16(track.height);
      });
      w.box("mdia", (w) => {
        w.fullBox("mdhd", version, 0, (w) => {
          times(w, true);
          w.u16(0x55c4).u16(0); // language "und" (packed ISO-639-2/T), pre_defined
        });
        w.fullBox("hdlr", 0, 0, (w) => w.u32(0).fourcc("vide").zeros(12).cstring("VideoHandler"));
        w.box("minf", (w) => {
          w.fullBox("vmhd", 0, 1, (w) => w.u16(0).zeros(6)); // graphicsmode copy, opcolor
          w.box("dinf", (w) =>
            // one data reference, flag 1: the media data is in this file
            w.fullBox("dref", 0, 0, (w) => w.u32(1).fullBox("url ", 0, 1, () => {})),
          );
          w.box("stbl", (w) => {
            w.fullBox("stsd", 0, 0, (w) => {
              w.u32(1);
              writeAvc1SampleEntry(w, track);
            });
            writeSampleTables(w);
          });
        });
      });
    });
    writeExtra(w);
  });
}

function writeAvc1SampleEntry(w: BoxWriter, track: AvcTrackConfig): void {
  w.box("avc1", (w) => {
    w.zeros(6).u16(1); // reserved, data_reference_index
    w.u16(0).u16(0).zeros(12); // pre_defined, reserved, pre_defined
    w.u16(track.width).u16(track.height);
    w.fixed16_16(72).fixed16_16(72).u32(0).u16(1); // 72 dpi, reserved, frame_count
    w.zeros(32); // compressorname (empty Pascal string)
    w.u16(0x18).i16(-1); // depth: colour without alpha, pre_defined
    writeAvcC(w, track.sps, track.pps);
    w.box("pasp", (w) => w.u32(1).u32(1)); // square pixels
  });
}

/** Sample sizes and sync samples of a complete file, growing as samples arrive. */
class SampleList {
  sizes = new Uint32Array(1024);
  count = 0;
  payloadBytes = 0;
  /** 1-based sample numbers of keyframes, as `stss` lists them. */
  syncSamples: number[] = [];

  add(sample: AvcSample): number {
    const size = sampleByteLength(sample);
    if (this.count === 0 && !sample.keyframe) throw new Error("the first sample must be a keyframe (IDR)");
    if (this.count === this.sizes.length) {
      const grown = new Uint32Array(this.sizes.length * 2);
      grown.set(this.sizes);
      this.sizes = grown;
    }
    this.sizes[this.count++] = size;
    this.payloadBytes += size;
    if (sample.keyframe) this.syncSamples.push(this.count);
    return size;
  }
}

/**
 * ftyp + moov + the mdat header for samples of the given sizes, laid out contiguously after it.
 * Samples are grouped into chunks of about one second; chunk offsets use `co64` when one would not
 * fit `stco`'s 32 bits, and the mdat header its 64-bit form when the data passes 4 GiB.
 */
export function movieHeader(track: AvcTrackConfig, sampleSizes: ArrayLike<number>, syncSamples: number[]): Uint8Array {
  checkTrack(track);
  const count = sampleSizes.length;
  if (count === 0) throw new Error("cannot write an MP4 with no samples");
  const timing = mediaTiming(track.fps);
  const samplesPerChunk = Math.max(1, Math.round(track.fps));
  const chunkStarts: number[] = []; // byte offset of each chunk within the mdat payload
  let payloadBytes = 0;
  for (let i = 0; i < count; i++) {
    if (i % samplesPerChunk === 0) chunkStarts.push(payloadBytes);
    payloadBytes += sampleSizes[i]!;
  }
  const lastChunkSamples = count - (chunkStarts.length - 1) * samplesPerChunk;
  const build = (dataStart: number | undefined, co64: boolean) => {
    const w = new BoxWriter(64 * 1024 + count * 4);
    w.box("ftyp", (w) => w.fourcc("isom").u32(0x200).fourcc("isom").fourcc("iso2").fourcc("avc1").fourcc("mp41"));
    writeMovie(w, track, timing, count * timing.sampleDelta, (w) => {
      w.fullBox("stts", 0, 0, (w) => w.u32(1).u32(count).u32(timing.sampleDelta));
      w.fullBox("stss", 0, 0, (w) => {
        w.u32(syncSamples.length);
        for (const n of syncSamples) w.u32(n);
      });
      w.fullBox("stsc", 0, 0, (w) => {
        // runs of chunks with the same sample count: all full, then maybe a shorter last one
        const runs: [number, number][] = [[1, Math.min(samplesPerChunk, count)]];
        if (chunkStarts.length > 1 && lastChunkSamples !== samplesPerChunk) runs.push([chunkStarts.length, lastChunkSamples]);
        w.u32(runs.length);
        for (const [firstChunk, samples] of runs) w.u32(firstChunk).u32(samples).u32(1);
      });
      w.fullBox("stsz", 0, 0, (w) => {
        w.u32(0).u32(count); // sample_size 0: sizes listed per sample
        for (let i = 0; i < count; i++) w.u32(sampleSizes[i]!);
      });
      w.fullBox(co64 ? "co64" : "stco", 0, 0, (w) => {
        w.u32(chunkStarts.length);
        for (const start of chunkStarts) {
          const offset = dataStart === undefined ? 0 : dataStart + start; // undefined: measuring only
          if (co64) w.u64(offset);
          else w.u32(offset);
        }
      });
    });
    w.bytes(mdatHeader(payloadBytes));
    return w.finish();
  };
  // The header's size does not depend on the offset values, so a trial build gives the data start.
  let co64 = false;
  let dataStart = build(undefined, co64).length;
  if (dataStart + chunkStarts[chunkStarts.length - 1]! > 0xffffffff) {
    co64 = true;
    dataStart = build(undefined, co64).length;
  }
  return build(dataStart, co64);
}

/** A complete MP4 file, in memory. Fine for short clips; use `Mp4FileWriter` for long ones. */
export function buildMp4(track: AvcTrackConfig, samples: AvcSample[]): Uint8Array {
  checkTrack(track);
  if (samples.length === 0) throw new Error("cannot write an MP4 with no samples");
  const list = new SampleList();
  for (const sample of samples) list.add(sample);
  const header = movieHeader(track, list.sizes.subarray(0, list.count), list.syncSamples);
  const file = new Uint8Array(header.length + list.payloadBytes);
  file.set(header);
  let offset = header.length;
  for (const sample of samples) offset = writeSampleData(sample, file, offset);
  return file;
}

const FLUSH_BYTES = 1 << 20;
const COPY_CHUNK_BYTES = 4 << 20;

/**
 * A complete MP4 written to disk for clips too long to hold in memory. Samples go to
 * `<path>.<unique>.mdat` as they arrive; `close()` writes `<path>.<unique>.mp4` (header, then the
 * sample data copied over) and renames it to `path`, so `path` never holds a half-written file.
 */
export class Mp4FileWriter {
  private readonly samples = new SampleList();
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private writes: Promise<void> = Promise.resolve();
  private state: "open" | "closing" | "done" = "open";
  private closing: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private readonly track: AvcTrackConfig,
    private readonly tempBase: string,
    private readonly mdatFile: FileHandle,
  ) {}

  static async open(path: string, track: AvcTrackConfig): Promise<Mp4FileWriter> {
    checkTrack(track);
    // Next to the output, so the final copy stays on one filesystem and /tmp is not filled.
    const tempBase = `${path}.${process.pid}-${randomBytes(4).toString("hex")}`;
    const mdatFile = await open(`${tempBase}.mdat`, "wx+");
    return new Mp4FileWriter(path, track, tempBase, mdatFile);
  }

  async add(sample: AvcSample): Promise<void> {
    if (this.state !== "open") throw new Error(`Mp4FileWriter for ${this.path} is already closed`);
    const bytes = new Uint8Array(this.samples.add(sample));
    writeSampleData(sample, bytes, 0);
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    if (this.pendingBytes >= FLUSH_BYTES) await this.flush();
  }

  async close(): Promise<{ path: string; bytes: number; frames: number; durationS: number }> {
    if (this.state !== "open") throw new Error(`Mp4FileWriter for ${this.path} is already closed`);
    this.state = "closing";
    const result = this.finish()
      .catch(async (err) => {
        await this.removeTempFiles();
        throw err;
      })
      .finally(() => {
        this.state = "done";
      });
    this.closing = result.catch(() => {});
    return result;
  }

  /** Stops writing and removes the temporary files (a finished file at `path` is left alone). */
  async abort(): Promise<void> {
    if (this.state === "closing") await this.closing;
    if (this.state === "done") return;
    this.state = "done";
    await this.writes.catch(() => {});
    await this.removeTempFiles();
  }

  private async finish() {
    await this.flush();
    const { count, payloadBytes } = this.samples;
    const header = movieHeader(this.track, this.samples.sizes.subarray(0, count), this.samples.syncSamples);
    const out = await open(`${this.tempBase}.mp4`, "wx");
    try {
      await writeAll(out, header);
      const buf = new Uint8Array(Math.min(COPY_CHUNK_BYTES, payloadBytes));
      let copied = 0;
      while (copied < payloadBytes) {
        const { bytesRead } = await this.mdatFile.read(buf, 0, buf.length, copied);
        if (bytesRead === 0) break;
        await writeAll(out, buf.subarray(0, bytesRead));
        copied += bytesRead;
      }
      if (copied !== payloadBytes) throw new Error(`temporary mdat holds ${copied} bytes, expected ${payloadBytes}`);
    } finally {
      await out.close();
    }
    await this.mdatFile.close();
    await rename(`${this.tempBase}.mp4`, this.path);
    await unlink(`${this.tempBase}.mdat`);
    const timing = mediaTiming(this.track.fps);
    return {
      path: this.path,
      bytes: header.length + payloadBytes,
      frames: count,
      durationS: (count * timing.sampleDelta) / timing.timescale,
    };
  }

  /** Queues the staged samples for writing; writes run one after another, in order. */
  private flush(): Promise<void> {
    if (this.pending.length > 0) {
      const chunk = concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      this.writes = this.writes.then(() => writeAll(this.mdatFile, chunk));
    }
    return this.writes;
  }

  private async removeTempFiles(): Promise<void> {
    await this.mdatFile.close().catch(() => {});
    for (const suffix of [".mdat", ".mp4"]) {
      await unlink(`${this.tempBase}${suffix}`).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      });
    }
  }
}

async function writeAll(file: FileHandle, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done);
    done += bytesWritten;
  }
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}
