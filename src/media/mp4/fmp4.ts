// Fragmented MP4 for streaming (ISO/IEC 14496-12 §8.8): an init segment (ftyp + moov with empty
// sample tables and mvex/trex), then one moof + mdat per fragment, then an mfra trailer. Fragments
// follow what Chromium's MediaSource needs: the stream starts with an IDR, decode times (tfdt) run on
// without gaps, sample data is addressed relative to its moof (default-base-is-moof), and every sample
// says whether it is a sync sample.

import { BoxWriter, mdatHeader } from "./boxes.ts";
import { checkTrack, codecString, sampleByteLength, writeSampleData, type AvcSample, type AvcTrackConfig } from "./avc.ts";
import { mediaTiming, writeMovie, type MediaTiming } from "./mp4-file.ts";

const TRACK_ID = 1;

// Sample flags (§8.8.3.1): sample_depends_on = 2 ("depends on no other sample") for IDR frames;
// sample_depends_on = 1 plus sample_is_non_sync_sample for everything else.
const SYNC_SAMPLE_FLAGS = 0x02000000;
const NON_SYNC_SAMPLE_FLAGS = 0x01010000;

const TFHD_DEFAULT_BASE_IS_MOOF = 0x020000;
const TRUN_DATA_OFFSET = 0x000001;
const TRUN_SAMPLE_DURATION = 0x000100;
const TRUN_SAMPLE_SIZE = 0x000200;
const TRUN_SAMPLE_FLAGS = 0x000400;

/** A fragment that starts with a sync sample, for the `tfra` random-access index. */
interface RandomAccessPoint {
  time: number;
  moofOffset: number;
}

export class FragmentedMp4Writer {
  /** RFC 6381 codec string from the SPS, e.g. "avc1.42C01E". */
  readonly codec: string;
  /** For `MediaSource.isTypeSupported` / `addSourceBuffer`. */
  readonly mimeType: string;
  private readonly timing: MediaTiming;
  private readonly init: Uint8Array;
  private sequenceNumber = 0;
  /** Decode time of the next fragment's first sample, in timescale ticks. */
  private decodeTime = 0;
  /** Bytes of init segment + fragments so far: where the next moof starts in the stream. */
  private streamOffset: number;
  private readonly randomAccessPoints: RandomAccessPoint[] = [];
  private closed = false;

  constructor(private readonly track: AvcTrackConfig) {
    checkTrack(track);
    this.codec = codecString(track.sps);
    this.mimeType = `video/mp4; codecs="${this.codec}"`;
    this.timing = mediaTiming(track.fps);
    this.init = this.buildInitSegment();
    this.streamOffset = this.init.length;
  }

  /** ftyp + moov. The same bytes every call, so late joiners can be sent it again. */
  initSegment(): Uint8Array {
    return this.init.slice();
  }

  /**
   * moof + mdat for the next samples (one or more, in decode order). The first fragment must begin
   * with a keyframe. Fragments must reach the client in the order they were made.
   */
  fragment(samples: AvcSample[]): Uint8Array {
    if (this.closed) throw new Error("FragmentedMp4Writer is closed");
    if (samples.length === 0) throw new Error("a fragment needs at least one sample");
    if (this.sequenceNumber === 0 && !samples[0]!.keyframe) {
      throw new Error("the first fragment must start with a keyframe (IDR); browsers drop frames before it");
    }
    const sizes = samples.map(sampleByteLength);
    const payloadBytes = sizes.reduce((a, b) => a + b, 0);
    const mdat = mdatHeader(payloadBytes);
    this.sequenceNumber++;
    // trun's data offset counts from the start of the moof, so the moof's own size is needed first.
    const moofBytes = this.buildMoof(samples, sizes, 0).length;
    const moof = this.buildMoof(samples, sizes, moofBytes + mdat.length);

    const out = new Uint8Array(moof.length + mdat.length + payloadBytes);
    out.set(moof);
    out.set(mdat, moof.length);
    let offset = moof.length + mdat.length;
    for (const sample of samples) offset = writeSampleData(sample, out, offset);

    if (samples[0]!.keyframe) this.randomAccessPoints.push({ time: this.decodeTime, moofOffset: this.streamOffset });
    this.decodeTime += samples.length * this.timing.sampleDelta;
    this.streamOffset += out.length;
    return out;
  }

  /**
   * Ends the stream and returns its `mfra` trailer: `tfra` lists each fragment that starts with a
   * keyframe (decode time, moof offset counted from the start of the init segment), then `mfro`.
   * Only such fragments are listed because every entry must be a sync sample and ffmpeg's reader
   * takes an entry's time as its fragment's start time. MSE ignores mfra; file readers seek with it.
   */
  close(): Uint8Array {
    if (this.closed) throw new Error("FragmentedMp4Writer is already closed");
    this.closed = true;
    const tfra = new BoxWriter();
    tfra.fullBox("tfra", 1, 0, (w) => {
      w.u32(TRACK_ID);
      w.u32(0); // traf, trun and sample numbers are stored in one byte each
      w.u32(this.randomAccessPoints.length);
      for (const p of this.randomAccessPoints) w.u64(p.time).u64(p.moofOffset).u8(1).u8(1).u8(1);
    });
    const tfraBytes = tfra.finish();
    const mfroBytes = 16;
    const w = new BoxWriter(tfraBytes.length + 8 + mfroBytes);
    w.box("mfra", (w) => {
      w.bytes(tfraBytes);
      w.fullBox("mfro", 0, 0, (w) => w.u32(8 + tfraBytes.length + mfroBytes)); // size of the whole mfra
    });
    return w.finish();
  }

  private buildInitSegment(): Uint8Array {
    const w = new BoxWriter();
    // iso5 is the first brand that allows default-base-is-moof and tfdt; iso6 and mp41 follow what
    // ffmpeg declares for the same kind of stream, avc1 says the track is AVC in its file format.
    w.box("ftyp", (w) => w.fourcc("iso5").u32(0x200).fourcc("iso5").fourcc("iso6").fourcc("avc1").fourcc("mp41"));
    const emptySampleTables = (w: BoxWriter) => {
      w.fullBox("stts", 0, 0, (w) => w.u32(0));
      w.fullBox("stsc", 0, 0, (w) => w.u32(0));
      w.fullBox("stsz", 0, 0, (w) => w.u32(0).u32(0));
      w.fullBox("stco", 0, 0, (w) => w.u32(0));
    };
    writeMovie(w, this.track, this.timing, 0, emptySampleTables, (w) =>
      w.box("mvex", (w) =>
        w.fullBox("trex", 0, 0, (w) => {
          w.u32(TRACK_ID).u32(1); // default_sample_description_index
          w.u32(this.timing.sampleDelta).u32(0).u32(NON_SYNC_SAMPLE_FLAGS); // defaults: duration, size, flags
        }),
      ),
    );
    return w.finish();
  }

  private buildMoof(samples: AvcSample[], sizes: number[], dataOffset: number): Uint8Array {
    const w = new BoxWriter(128 + samples.length * 12);
    w.box("moof", (w) => {
      w.fullBox("mfhd", 0, 0, (w) => w.u32(this.sequenceNumber));
      w.box("traf", (w) => {
        w.fullBox("tfhd", 0, TFHD_DEFAULT_BASE_IS_MOOF, (w) => w.u32(TRACK_ID));
        w.fullBox("tfdt", 1, 0, (w) => w.u64(this.decodeTime));
        const flags = TRUN_DATA_OFFSET | TRUN_SAMPLE_DURATION | TRUN_SAMPLE_SIZE | TRUN_SAMPLE_FLAGS;
        w.fullBox("trun", 0, flags, (w) => {
          w.u32(samples.length).i32(dataOffset);
          samples.forEach((sample, i) => {
            w.u32(this.timing.sampleDelta).u32(sizes[i]!);
            w.u32(sample.keyframe ? SYNC_SAMPLE_FLAGS : NON_SYNC_SAMPLE_FLAGS);
          });
        });
      });
    });
    return w.finish();
  }
}
