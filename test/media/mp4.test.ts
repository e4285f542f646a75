// The complete-file MP4 writer and the H.264 helpers, checked against real libx264 output with
// ffprobe/ffmpeg as the oracle: the structure we read back, what ffprobe reports, and that every
// decoded frame is byte-identical to decoding the raw stream.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildMp4, codecString, Mp4FileWriter, parseSps, splitAnnexB } from "../../src/media/mp4/index.ts";
import { mediaTiming, movieHeader } from "../../src/media/mp4/mp4-file.ts";
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
let baseline: X264Clip; // 320x240, 24 fps, 48 frames, an IDR every 12
let highCropped: X264Clip; // 250x138 (SPS cropping), High profile, 16 fps

beforeAll(() => {
  dir = scratchDir("mp4");
  baseline = encodeX264(dir, { width: 320, height: 240, fps: 24, frames: 48, gop: 12 });
  highCropped = encodeX264(dir, { width: 250, height: 138, fps: 16, frames: 20, gop: 10, profile: "high" });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An empty directory of its own, so a test can assert exactly which files are left in it. */
function emptyDir(): string {
  return mkdtempSync(join(dir, "writer-"));
}

function writeFile(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe("splitAnnexB", () => {
  test("splits at 3- and 4-byte start codes and keeps emulation prevention bytes", () => {
    const stream = new Uint8Array([0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 0, 0, 3, 1]);
    expect(splitAnnexB(stream).map((n) => [...n])).toEqual([[0x67, 1, 2], [0x68, 3], [0x65, 0, 0, 3, 1]]);
  });

  test("rejects data that is not Annex B", () => {
    expect(splitAnnexB(new Uint8Array())).toEqual([]);
    expect(() => splitAnnexB(new Uint8Array([0x67, 1, 2, 3]))).toThrow(/no start code/);
    expect(() => splitAnnexB(new Uint8Array([9, 0, 0, 1, 0x67]))).toThrow(/before the first start code/);
  });
});

describe("parseSps / codecString", () => {
  test("match what ffprobe reports for libx264 streams", () => {
    const encoded = [
      baseline,
      highCropped,
      encodeX264(dir, { width: 254, height: 142, fps: 16, frames: 2, gop: 2, profile: "high444", pixFmt: "yuv444p" }),
    ];
    for (const clip of encoded) {
      const probed = ffprobe(clip.h264Path);
      const sps = parseSps(clip.track.sps);
      expect({ width: sps.width, height: sps.height }).toEqual({ width: probed.width, height: probed.height });
      expect(sps.profileIdc).toBe(PROFILE_IDC[probed.profile]!);
      expect(sps.levelIdc).toBe(probed.level);
      const hex = (v: number) => v.toString(16).toUpperCase().padStart(2, "0");
      expect(codecString(clip.track.sps)).toBe(`avc1.${hex(sps.profileIdc)}${hex(sps.constraintFlags)}${hex(sps.levelIdc)}`);
    }
    // x264's baseline is Constrained Baseline: constraint_set0 and set1 are both set
    expect(codecString(baseline.track.sps)).toMatch(/^avc1\.42C0[0-9A-F]{2}$/);
    expect(parseSps(highCropped.track.sps).chromaFormatIdc).toBe(1);
  });

  test("fail clearly on SPS bytes that are short, truncated or not an SPS", () => {
    expect(() => parseSps(new Uint8Array([0x67, 0x42]))).toThrow(/SPS too short/);
    expect(() => parseSps(baseline.track.sps.subarray(0, 6))).toThrow(/SPS truncated/);
    expect(() => parseSps(baseline.track.pps)).toThrow(/not an SPS/);
  });
});

describe("buildMp4", () => {
  test("writes ftyp, moov, mdat with correct timing and sample tables", () => {
    const { track, samples } = baseline;
    const file = buildMp4(track, samples);
    const top = walkBoxes(file);
    expect(top.map((b) => b.type)).toEqual(["ftyp", "moov", "mdat"]);
    expect(ftypBrands(top[0]!)).toEqual(["isom", "isom", "iso2", "avc1", "mp41"]);

    const mvhd = fullBox(findBox(top, "moov/mvhd"));
    mvhd.skip(8);
    const movieTimescale = mvhd.u32();
    expect(mvhd.u32() / movieTimescale).toBe(2); // 48 frames at 24 fps
    const tkhd = findBox(top, "moov/trak/tkhd");
    expect(fullBox(tkhd).flags).toBe(3);
    expect([tkhd.view.getUint32(tkhd.body.length - 8), tkhd.view.getUint32(tkhd.body.length - 4)]).toEqual([
      320 << 16,
      240 << 16,
    ]);
    const mdhd = fullBox(findBox(top, "moov/trak/mdia/mdhd"));
    mdhd.skip(8);
    const timescale = mdhd.u32();
    expect(mdhd.u32() / timescale).toBe(2);

    const stbl = findBox(top, "moov/trak/mdia/minf/stbl");
    const stblBoxes = children(stbl);
    expect(stblBoxes.map((b) => b.type)).toEqual(["stsd", "stts", "stss", "stsc", "stsz", "stco"]);
    const avc1 = children(findBox(stblBoxes, "stsd"), 8)[0]!;
    expect(avc1.type).toBe("avc1");
    expect([avc1.view.getUint16(24), avc1.view.getUint16(26)]).toEqual([320, 240]);
    const avcC = findBox(children(avc1, 78), "avcC");
    const { sps, pps } = track;
    expect([...avcC.body]).toEqual([
      1, sps[1]!, sps[2]!, sps[3]!, 0xff, 0xe1, 0, sps.length, ...sps, 1, 0, pps.length, ...pps,
    ]);

    const stts = fullBox(findBox(stblBoxes, "stts"));
    expect([stts.u32(), stts.u32(), stts.u32() / timescale]).toEqual([1, 48, 1 / 24]);

    const stss = fullBox(findBox(stblBoxes, "stss"));
    const syncSamples = Array.from({ length: stss.u32() }, () => stss.u32());
    const expectedSync = samples.flatMap((s, i) => (s.keyframe ? [i + 1] : []));
    expect(syncSamples).toEqual(expectedSync);
    expect(expectedSync).toContain(13); // the -g 12 IDRs really are there

    const stsz = fullBox(findBox(stblBoxes, "stsz"));
    expect(stsz.u32()).toBe(0);
    const sizes = Array.from({ length: stsz.u32() }, () => stsz.u32());
    expect(sizes).toEqual(samples.map((s) => lengthPrefixed(s).length));

    // stsc + stco give every sample's offset; the bytes there are the sample, length-prefixed
    const stsc = fullBox(findBox(stblBoxes, "stsc"));
    const runs = Array.from({ length: stsc.u32() }, () => ({ first: stsc.u32(), perChunk: stsc.u32(), desc: stsc.u32() }));
    const stco = fullBox(findBox(stblBoxes, "stco"));
    const chunkOffsets = Array.from({ length: stco.u32() }, () => stco.u32());
    let sample = 0;
    chunkOffsets.forEach((chunkOffset, c) => {
      const run = runs.filter((r) => r.first <= c + 1).at(-1)!;
      expect(run.desc).toBe(1);
      let offset = chunkOffset;
      for (let k = 0; k < run.perChunk; k++, sample++) {
        const expected = lengthPrefixed(samples[sample]!);
        expect(file.subarray(offset, offset + expected.length)).toEqual(expected);
        offset += expected.length;
      }
    });
    expect(sample).toBe(48);
    expect(chunkOffsets[0]).toBe(top[2]!.start + 8);
  });

  test("ffprobe reads it and every decoded frame equals the raw stream's", () => {
    for (const clip of [baseline, highCropped]) {
      const path = writeFile(`${clip.track.width}.mp4`, buildMp4(clip.track, clip.samples));
      const probed = ffprobe(path);
      expect(probed.codec_name).toBe("h264");
      expect([probed.width, probed.height]).toEqual([clip.track.width, clip.track.height]);
      expect(Number(probed.nb_read_frames)).toBe(clip.samples.length);
      expect(probed.r_frame_rate).toBe(`${clip.track.fps}/1`);
      const expectedS = clip.samples.length / clip.track.fps;
      expect(Math.abs(Number(probed.duration) - expectedS)).toBeLessThan(1 / clip.track.fps);

      const fromMp4 = decodeRgb(path);
      const fromRaw = decodeRgb(clip.h264Path, "h264");
      expect(fromMp4.length).toBe(clip.track.width * clip.track.height * 3 * clip.samples.length);
      expect(Buffer.compare(fromMp4, fromRaw)).toBe(0);
    }
  });

  test("High profile avcC carries chroma format and bit depths", () => {
    const file = buildMp4(highCropped.track, highCropped.samples);
    const avc1 = children(findBox(walkBoxes(file), "moov/trak/mdia/minf/stbl/stsd"), 8)[0]!;
    const avcC = findBox(children(avc1, 78), "avcC");
    expect([...avcC.body.subarray(-4)]).toEqual([0xfc | 1, 0xf8, 0xf8, 0]); // 4:2:0, 8-bit, no SPS ext
  });

  test("timescales represent common frame rates exactly", () => {
    expect(mediaTiming(24)).toEqual({ timescale: 24000, sampleDelta: 1000 });
    expect(mediaTiming(16)).toEqual({ timescale: 16000, sampleDelta: 1000 });
    expect(mediaTiming(23.976)).toEqual({ timescale: 23976, sampleDelta: 1000 });
    expect(mediaTiming(30000 / 1001)).toEqual({ timescale: 30000, sampleDelta: 1001 });
  });

  test("offsets past 4 GiB switch to co64 and a 64-bit mdat size", () => {
    const chunkBytes = 4 << 20;
    const sizes = new Array(1100).fill(chunkBytes); // 1100 × 4 MiB ≈ 4.3 GiB
    const header = movieHeader({ ...baseline.track, fps: 1 }, sizes, [1]);
    const boxes = walkBoxes(header.subarray(0, header.length - 16));
    expect(boxes.map((b) => b.type)).toEqual(["ftyp", "moov"]);
    const stbl = children(findBox(boxes, "moov/trak/mdia/minf/stbl"));
    expect(stbl.map((b) => b.type)).not.toContain("stco");
    const co64 = fullBox(findBox(stbl, "co64"));
    const offsets = Array.from({ length: co64.u32() }, () => co64.u64());
    expect(offsets.length).toBe(1100); // fps 1: one sample per chunk
    expect(offsets[0]).toBe(header.length);
    expect(offsets[1099]).toBe(header.length + 1099 * chunkBytes);
    const mdat = new DataView(header.buffer, header.byteOffset + header.length - 16, 16);
    expect([mdat.getUint32(0), mdat.getUint32(4), Number(mdat.getBigUint64(8))]).toEqual([
      1,
      0x6d646174, // "mdat"
      1100 * chunkBytes + 16,
    ]);
  });

  test("rejects bad input with clear errors", () => {
    const { track, samples } = baseline;
    expect(() => buildMp4(track, [])).toThrow(/no samples/);
    expect(() => buildMp4({ ...track, sps: new Uint8Array([0x67, 0x42, 0xc0]) }, samples)).toThrow(/SPS too short/);
    expect(() => buildMp4({ ...track, width: 640 }, samples)).toThrow(/does not match the SPS picture size 320x240/);
    expect(() => buildMp4({ ...track, fps: 0 }, samples)).toThrow(/fps must be a positive number/);
    expect(() => buildMp4(track, samples.slice(1))).toThrow(/first sample must be a keyframe/);
    expect(() => buildMp4(track, [{ nals: [], keyframe: true }])).toThrow(/at least one NAL unit/);
    const withStartCode = new Uint8Array([0, 0, 0, 1, ...samples[0]!.nals[0]!]);
    expect(() => buildMp4(track, [{ nals: [withStartCode], keyframe: true }])).toThrow(/without start codes/);
  });
});

describe("Mp4FileWriter", () => {
  test("writes the same bytes as buildMp4 and leaves no temporary files", async () => {
    const { track, samples } = baseline;
    // 30 copies of the 2 s clip (each starts with an IDR, so it still decodes): > 1 MiB, several flushes
    const many = Array.from({ length: 30 }, () => samples).flat();
    const outDir = emptyDir();
    const path = join(outDir, "long.mp4");
    const writer = await Mp4FileWriter.open(path, track);
    for (const s of many) await writer.add(s);
    const result = await writer.close();
    const expected = buildMp4(track, many);
    expect(result).toEqual({ path, bytes: expected.length, frames: many.length, durationS: 60 });
    expect(Buffer.compare(readFileSync(path), expected)).toBe(0);
    expect(readdirSync(outDir)).toEqual(["long.mp4"]);
    expect(Number(ffprobe(path).nb_read_frames)).toBe(many.length);
    await expect(writer.add(samples[0]!)).rejects.toThrow(/already closed/);
  });

  test("keeps sample order when adds are not awaited one by one", async () => {
    const { track, samples } = baseline;
    const many = Array.from({ length: 15 }, () => samples).flat();
    const path = join(emptyDir(), "unawaited.mp4");
    const writer = await Mp4FileWriter.open(path, track);
    await Promise.all(many.map((s) => writer.add(s)));
    await writer.close();
    expect(Buffer.compare(readFileSync(path), buildMp4(track, many))).toBe(0);
  });

  test("abort removes the temporary files", async () => {
    const outDir = emptyDir();
    const writer = await Mp4FileWriter.open(join(outDir, "aborted.mp4"), baseline.track);
    for (const s of baseline.samples) await writer.add(s);
    expect(readdirSync(outDir).length).toBe(1); // the temporary mdat
    await writer.abort();
    expect(readdirSync(outDir)).toEqual([]);
    await expect(writer.add(baseline.samples[0]!)).rejects.toThrow(/already closed/);
  });

  test("close with no samples fails and cleans up", async () => {
    const outDir = emptyDir();
    const writer = await Mp4FileWriter.open(join(outDir, "empty.mp4"), baseline.track);
    await expect(writer.close()).rejects.toThrow(/no samples/);
    expect(readdirSync(outDir)).toEqual([]);
    await writer.abort(); // harmless afterwards
  });
});
