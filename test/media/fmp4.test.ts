// The fragmented MP4 writer, checked against real libx264 output: the init segment and each moof we
// read back, the mfra index, and ffprobe/ffmpeg reading the concatenated stream frame for frame.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FragmentedMp4Writer } from "../../src/media/mp4/index.ts";
import {
  children,
  decodeRgb,
  encodeX264,
  ffprobe,
  findBox,
  ftypBrands,
  fullBox,
  lengthPrefixed,
  PROFILE_IDC,
  scratchDir,
  walkBoxes,
  type X264Clip,
} from "./helpers/x264.ts";

let dir: string;
let clip: X264Clip; // 320x240, 24 fps, 48 frames, IDRs at 0, 12, 24, 36
const FRAGMENT_SIZES = [1, 4, 12, 31]; // one frame, a few, a GOP's worth, and the rest
const DELTA = 1000; // ticks per frame at timescale 24000

beforeAll(() => {
  dir = scratchDir("fmp4");
  clip = encodeX264(dir, { width: 320, height: 240, fps: 24, frames: 48, gop: 12 });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fragmentsOf(writer: FragmentedMp4Writer, sizes = FRAGMENT_SIZES): Uint8Array[] {
  const out: Uint8Array[] = [];
  let next = 0;
  for (const n of sizes) {
    out.push(writer.fragment(clip.samples.slice(next, next + n)));
    next += n;
  }
  expect(next).toBe(clip.samples.length);
  return out;
}

describe("FragmentedMp4Writer", () => {
  test("codec string and MIME type come from the SPS and agree with ffprobe", () => {
    const writer = new FragmentedMp4Writer(clip.track);
    const probed = ffprobe(clip.h264Path);
    const hex = (v: number) => v.toString(16).toUpperCase().padStart(2, "0");
    expect(writer.codec).toMatch(/^avc1\.[0-9A-F]{6}$/);
    expect(writer.codec).toBe(`avc1.${hex(PROFILE_IDC[probed.profile]!)}C0${hex(probed.level)}`);
    expect(writer.mimeType).toBe(`video/mp4; codecs="${writer.codec}"`);
  });

  test("init segment: ftyp + moov with empty sample tables and mvex/trex", () => {
    const init = new FragmentedMp4Writer(clip.track).initSegment();
    const top = walkBoxes(init);
    expect(top.map((b) => b.type)).toEqual(["ftyp", "moov"]);
    expect(ftypBrands(top[0]!)).toEqual(["iso5", "iso5", "iso6", "avc1", "mp41"]);
    expect(children(top[1]!).map((b) => b.type)).toEqual(["mvhd", "trak", "mvex"]);

    const mdhd = fullBox(findBox(top, "moov/trak/mdia/mdhd"));
    mdhd.skip(8);
    expect([mdhd.u32(), mdhd.u32()]).toEqual([24000, 0]); // timescale, duration unknown
    const stbl = children(findBox(top, "moov/trak/mdia/minf/stbl"));
    expect(stbl.map((b) => b.type)).toEqual(["stsd", "stts", "stsc", "stsz", "stco"]);
    for (const type of ["stts", "stsc", "stco"]) expect(fullBox(findBox(stbl, type)).u32()).toBe(0);
    const stsz = fullBox(findBox(stbl, "stsz"));
    expect([stsz.u32(), stsz.u32()]).toEqual([0, 0]);
    expect(children(findBox(stbl, "stsd"), 8).map((b) => b.type)).toEqual(["avc1"]);

    const trex = fullBox(findBox(top, "moov/mvex/trex"));
    expect([trex.u32(), trex.u32(), trex.u32(), trex.u32(), trex.u32()]).toEqual([1, 1, DELTA, 0, 0x01010000]);
  });

  test("fragments: sequence numbers, continuous tfdt, trun sizes/flags and data offsets", () => {
    const writer = new FragmentedMp4Writer(clip.track);
    const fragments = fragmentsOf(writer);
    let sampleIndex = 0;
    fragments.forEach((fragment, k) => {
      const [moof, mdat, ...rest] = walkBoxes(fragment);
      expect([moof!.type, mdat!.type, rest.length]).toEqual(["moof", "mdat", 0]);
      expect(fullBox(findBox([moof!], "moof/mfhd")).u32()).toBe(k + 1);

      const tfhd = fullBox(findBox([moof!], "moof/traf/tfhd"));
      expect(tfhd.flags & 0x020000).toBe(0x020000); // default-base-is-moof
      expect(tfhd.u32()).toBe(1);
      const tfdt = fullBox(findBox([moof!], "moof/traf/tfdt"));
      expect(tfdt.version).toBe(1);
      expect(tfdt.u64()).toBe(sampleIndex * DELTA); // sum of the earlier fragments' durations
      expect(children(findBox([moof!], "moof/traf")).map((b) => b.type)).toEqual(["tfhd", "tfdt", "trun"]);

      const trun = fullBox(findBox([moof!], "moof/traf/trun"));
      expect(trun.flags).toBe(0x000701); // data offset, per-sample duration, size, flags
      const count = trun.u32();
      expect(count).toBe(FRAGMENT_SIZES[k]!);
      let offset = trun.i32(); // from the start of the moof
      expect(offset).toBe(moof!.size + 8);
      for (let i = 0; i < count; i++, sampleIndex++) {
        const sample = clip.samples[sampleIndex]!;
        const bytes = lengthPrefixed(sample);
        expect([trun.u32(), trun.u32(), trun.u32()]).toEqual([
          DELTA,
          bytes.length,
          sample.keyframe ? 0x02000000 : 0x01010000,
        ]);
        expect(fragment.subarray(offset, offset + bytes.length)).toEqual(bytes);
        offset += bytes.length;
      }
      expect(offset).toBe(fragment.length);
    });
    expect(sampleIndex).toBe(48);
  });

  test("the concatenated stream plays: ffprobe counts every frame, decoding matches the raw stream", () => {
    const writer = new FragmentedMp4Writer(clip.track);
    const stream = Buffer.concat([writer.initSegment(), ...fragmentsOf(writer), writer.close()]);
    const path = join(dir, "stream.mp4");
    writeFileSync(path, stream);
    const probed = ffprobe(path);
    expect(probed.codec_name).toBe("h264");
    expect([probed.width, probed.height]).toEqual([320, 240]);
    expect(Number(probed.nb_read_frames)).toBe(48);
    expect(probed.r_frame_rate).toBe("24/1");
    expect(Buffer.compare(decodeRgb(path), decodeRgb(clip.h264Path, "h264"))).toBe(0);
  });

  test("mfra lists the fragments that start with a keyframe; mfro gives its size", () => {
    const sizes = [12, 5, 7, 12, 12]; // starts at frames 0, 12, 17, 24, 36: all but the third are IDRs
    const writer = new FragmentedMp4Writer(clip.track);
    const stream = Buffer.concat([writer.initSegment(), ...fragmentsOf(writer, sizes), writer.close()]);
    const top = walkBoxes(stream);
    expect(top.map((b) => b.type)).toEqual(["ftyp", "moov", ...sizes.flatMap(() => ["moof", "mdat"]), "mfra"]);

    const mfra = top.at(-1)!;
    const [tfraBox, mfroBox] = children(mfra);
    const mfro = fullBox(mfroBox!);
    expect(mfro.u32()).toBe(mfra.size);
    expect(mfroBox!.start + mfroBox!.size).toBe(stream.length); // readers find mfra from the end

    const tfra = fullBox(tfraBox!);
    expect(tfra.version).toBe(1);
    expect([tfra.u32(), tfra.u32()]).toEqual([1, 0]); // track 1; traf/trun/sample numbers in 1 byte
    const entries = Array.from({ length: tfra.u32() }, () => ({
      time: tfra.u64(),
      moofOffset: tfra.u64(),
      numbers: [tfra.u8(), tfra.u8(), tfra.u8()],
    }));
    expect(tfra.remaining).toBe(0);
    const moofs = top.filter((b) => b.type === "moof");
    expect(entries).toEqual(
      [0, 1, 3, 4].map((k) => ({ time: [0, 12, 17, 24, 36][k]! * DELTA, moofOffset: moofs[k]!.start, numbers: [1, 1, 1] })),
    );

    // ffmpeg can be told to take fragment times from mfra instead of tfdt: they must agree
    const path = join(dir, "mfra.mp4");
    writeFileSync(path, stream);
    const proc = Bun.spawnSync(
      ["ffprobe", "-v", "error", "-use_mfra_for", "dts", "-show_entries", "packet=dts", "-of", "csv=p=0", path],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect(proc.stderr.toString()).toBe("");
    const dts = proc.stdout.toString().trim().split("\n").map(Number);
    expect(dts).toEqual(clip.samples.map((_, i) => i * DELTA));
  });

  test("rejects empty fragments, a stream that starts without a keyframe, and use after close", () => {
    const writer = new FragmentedMp4Writer(clip.track);
    expect(() => writer.fragment([])).toThrow(/at least one sample/);
    expect(() => writer.fragment(clip.samples.slice(1, 3))).toThrow(/first fragment must start with a keyframe/);
    writer.fragment(clip.samples.slice(0, 2));
    writer.fragment(clip.samples.slice(2, 3)); // later fragments may start anywhere
    writer.close();
    expect(() => writer.fragment(clip.samples.slice(3, 4))).toThrow(/closed/);
    expect(() => writer.close()).toThrow(/already closed/);
    expect(() => new FragmentedMp4Writer({ ...clip.track, sps: new Uint8Array(2) })).toThrow(/SPS too short/);
  });
});
