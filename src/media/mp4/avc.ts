// H.264 (AVC) facts the MP4 writers need: Annex B start-code splitting, just enough sequence
// parameter set parsing (ITU-T H.264 §7.3.2.1.1) to know the profile, level and picture size, the
// AVCDecoderConfigurationRecord (`avcC`, ISO/IEC 14496-15 §5.3.3.1) and the RFC 6381 codec string.

import { BoxWriter } from "./boxes.ts";

export const NAL_TYPE = { NON_IDR_SLICE: 1, IDR_SLICE: 5, SEI: 6, SPS: 7, PPS: 8, AUD: 9 } as const;

export function nalType(nal: Uint8Array): number {
  return nal[0]! & 0x1f;
}

/** The one video track both MP4 writers carry. NAL units are passed without start codes. */
export interface AvcTrackConfig {
  width: number;
  height: number;
  fps: number;
  sps: Uint8Array;
  pps: Uint8Array;
}

/** One access unit (one frame): its NAL units without start codes; the writers add 4-byte lengths. */
export interface AvcSample {
  nals: Uint8Array[];
  keyframe: boolean;
}

/** Checks a track config against its own SPS and returns the parsed SPS. */
export function checkTrack(track: AvcTrackConfig): SpsInfo {
  if (!Number.isFinite(track.fps) || track.fps <= 0) throw new Error(`fps must be a positive number, got ${track.fps}`);
  const info = parseSps(track.sps);
  if (info.width !== track.width || info.height !== track.height) {
    throw new Error(
      `track size ${track.width}x${track.height} does not match the SPS picture size ${info.width}x${info.height}`,
    );
  }
  return info;
}

/** Bytes a sample occupies in `mdat` (each NAL unit with its 4-byte length), after checking its shape. */
export function sampleByteLength(sample: AvcSample): number {
  if (!Array.isArray(sample.nals) || sample.nals.length === 0) throw new Error("a sample needs at least one NAL unit");
  let bytes = 0;
  for (const nal of sample.nals) {
    if (nal.length === 0) throw new Error("empty NAL unit in sample");
    if (nal[0] === 0 && nal[1] === 0 && (nal[2] === 1 || (nal[2] === 0 && nal[3] === 1))) {
      throw new Error("NAL unit starts with an Annex B start code; pass NAL units without start codes");
    }
    bytes += 4 + nal.length;
  }
  return bytes;
}

/** Writes a sample as length-prefixed NAL units into `out` at `offset`; returns the offset after it. */
export function writeSampleData(sample: AvcSample, out: Uint8Array, offset: number): number {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (const nal of sample.nals) {
    view.setUint32(offset, nal.length);
    out.set(nal, offset + 4);
    offset += 4 + nal.length;
  }
  return offset;
}

export interface SpsInfo {
  profileIdc: number;
  /** The byte after profile_idc: constraint_set0..5 flags in the high bits (0xC0 = set0 + set1). */
  constraintFlags: number;
  levelIdc: number;
  /** Displayed size, after the SPS frame cropping. */
  width: number;
  height: number;
  /** 0 = monochrome, 1 = 4:2:0, 2 = 4:2:2, 3 = 4:4:4 (1 unless a High-family profile says otherwise). */
  chromaFormatIdc: number;
  bitDepthLuma: number;
  bitDepthChroma: number;
}

// Profiles whose SPS carries chroma_format_idc, bit depths and scaling matrices (H.264 §7.3.2.1.1);
// 14496-15 adds the same fields to avcC for the first four.
const HIGH_FAMILY_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);
const AVCC_EXTENSION_PROFILES = new Set([100, 110, 122, 144]);

/** Parses a sequence parameter set NAL unit (with its one-byte NAL header, without a start code). */
export function parseSps(sps: Uint8Array): SpsInfo {
  if (sps.length < 4) {
    throw new Error(`SPS too short: ${sps.length} bytes (a sequence parameter set has at least 4)`);
  }
  if (nalType(sps) !== NAL_TYPE.SPS) {
    throw new Error(`not an SPS: NAL unit type ${nalType(sps)} (expected 7; pass the NAL without its start code)`);
  }
  const r = new BitReader(unescapeRbsp(sps.subarray(1)));
  try {
    const profileIdc = r.bits(8);
    const constraintFlags = r.bits(8);
    const levelIdc = r.bits(8);
    r.ue(); // seq_parameter_set_id
    let chromaFormatIdc = 1;
    let separateColourPlane = false;
    let bitDepthLuma = 8;
    let bitDepthChroma = 8;
    if (HIGH_FAMILY_PROFILES.has(profileIdc)) {
      chromaFormatIdc = r.ue();
      if (chromaFormatIdc === 3) separateColourPlane = r.bit() === 1;
      bitDepthLuma = r.ue() + 8;
      bitDepthChroma = r.ue() + 8;
      r.bit(); // qpprime_y_zero_transform_bypass_flag
      if (r.bit()) skipScalingMatrices(r, chromaFormatIdc === 3 ? 12 : 8);
    }
    r.ue(); // log2_max_frame_num_minus4
    const picOrderCntType = r.ue();
    if (picOrderCntType === 0) {
      r.ue(); // log2_max_pic_order_cnt_lsb_minus4
    } else if (picOrderCntType === 1) {
      r.bit(); // delta_pic_order_always_zero_flag
      r.se(); // offset_for_non_ref_pic
      r.se(); // offset_for_top_to_bottom_field
      const cycle = r.ue();
      for (let i = 0; i < cycle; i++) r.se(); // offset_for_ref_frame[i]
    }
    r.ue(); // max_num_ref_frames
    r.bit(); // gaps_in_frame_num_value_allowed_flag
    const widthInMbs = r.ue() + 1;
    const heightInMapUnits = r.ue() + 1;
    const frameMbsOnly = r.bit();
    if (!frameMbsOnly) r.bit(); // mb_adaptive_frame_field_flag
    r.bit(); // direct_8x8_inference_flag
    let crop = { left: 0, right: 0, top: 0, bottom: 0 };
    if (r.bit()) crop = { left: r.ue(), right: r.ue(), top: r.ue(), bottom: r.ue() };

    // Crop offsets count in chroma samples (H.264 §7.4.2.1.1, CropUnitX/CropUnitY); field-coded
    // streams (frame_mbs_only_flag = 0) have map units of two macroblock rows.
    const chromaArrayType = separateColourPlane ? 0 : chromaFormatIdc;
    const subWidthC = chromaArrayType === 1 || chromaArrayType === 2 ? 2 : 1;
    const subHeightC = chromaArrayType === 1 ? 2 : 1;
    const cropUnitX = chromaArrayType === 0 ? 1 : subWidthC;
    const cropUnitY = (chromaArrayType === 0 ? 1 : subHeightC) * (2 - frameMbsOnly);
    const width = widthInMbs * 16 - cropUnitX * (crop.left + crop.right);
    const height = (2 - frameMbsOnly) * heightInMapUnits * 16 - cropUnitY * (crop.top + crop.bottom);
    if (width <= 0 || height <= 0) throw new Error(`SPS cropping leaves no picture (${width}x${height})`);
    return { profileIdc, constraintFlags, levelIdc, width, height, chromaFormatIdc, bitDepthLuma, bitDepthChroma };
  } catch (err) {
    if (err instanceof SpsTruncated) throw new Error(`SPS truncated: ran out of bits after ${sps.length} bytes`);
    throw err;
  }
}

/** RFC 6381 codec parameter, e.g. "avc1.42C01E" (profile_idc, constraint flags, level_idc in hex). */
export function codecString(sps: Uint8Array): string {
  const { profileIdc, constraintFlags, levelIdc } = parseSps(sps);
  const hex = (v: number) => v.toString(16).toUpperCase().padStart(2, "0");
  return `avc1.${hex(profileIdc)}${hex(constraintFlags)}${hex(levelIdc)}`;
}

/**
 * The AVCDecoderConfigurationRecord for one SPS and one PPS, as the body of an `avcC` box.
 * NAL units in samples are prefixed with 4-byte lengths (lengthSizeMinusOne = 3).
 */
export function writeAvcC(w: BoxWriter, sps: Uint8Array, pps: Uint8Array): void {
  const info = parseSps(sps);
  if (pps.length < 2 || nalType(pps) !== NAL_TYPE.PPS) {
    throw new Error(`not a PPS: ${pps.length} bytes, NAL unit type ${pps.length ? nalType(pps) : "none"} (expected 8)`);
  }
  w.box("avcC", (w) => {
    w.u8(1); // configurationVersion
    w.u8(sps[1]!).u8(sps[2]!).u8(sps[3]!); // profile, compatibility (constraint flags), level: copied from the SPS
    w.u8(0xfc | 3); // 6 reserved bits set, lengthSizeMinusOne = 3
    w.u8(0xe0 | 1).u16(sps.length).bytes(sps); // 3 reserved bits set, one SPS
    w.u8(1).u16(pps.length).bytes(pps); // one PPS
    if (AVCC_EXTENSION_PROFILES.has(info.profileIdc)) {
      w.u8(0xfc | info.chromaFormatIdc);
      w.u8(0xf8 | (info.bitDepthLuma - 8));
      w.u8(0xf8 | (info.bitDepthChroma - 8));
      w.u8(0); // numOfSequenceParameterSetExt
    }
  });
}

/**
 * Splits an H.264 Annex B byte stream at its start codes (00 00 01 or 00 00 00 01) into NAL units,
 * without the start codes. Zero bytes before a start code belong to the byte stream, not to the NAL
 * unit (a NAL unit never ends in 0x00), so they are dropped.
 */
export function splitAnnexB(bytes: Uint8Array): Uint8Array[] {
  const nals: Uint8Array[] = [];
  let nalStart = -1;
  let i = 0;
  while (i + 2 < bytes.length) {
    if (bytes[i + 2]! > 1) {
      i += 3; // no start code can begin at i, i+1 or i+2
    } else if (bytes[i] === 0 && bytes[i + 1] === 0 && bytes[i + 2] === 1) {
      if (nalStart < 0) {
        if (bytes.subarray(0, i).some((b) => b !== 0)) {
          throw new Error(`not an Annex B stream: ${i} bytes of data before the first start code`);
        }
      } else {
        pushNal(nals, bytes.subarray(nalStart, i));
      }
      i += 3;
      nalStart = i;
    } else {
      i += 1;
    }
  }
  if (nalStart < 0) {
    if (bytes.some((b) => b !== 0)) throw new Error("not an Annex B stream: no start code (00 00 01) found");
    return nals;
  }
  pushNal(nals, bytes.subarray(nalStart));
  return nals;
}

function pushNal(nals: Uint8Array[], nal: Uint8Array): void {
  let end = nal.length;
  while (end > 0 && nal[end - 1] === 0) end--;
  if (end > 0) nals.push(nal.subarray(0, end));
}

/** Removes emulation prevention bytes (00 00 03 → 00 00) so the payload can be read as bits. */
function unescapeRbsp(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length);
  let n = 0;
  let zeros = 0;
  for (const b of payload) {
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    zeros = b === 0 ? zeros + 1 : 0;
    out[n++] = b;
  }
  return out.subarray(0, n);
}

function skipScalingMatrices(r: BitReader, count: number): void {
  for (let i = 0; i < count; i++) {
    if (!r.bit()) continue; // seq_scaling_list_present_flag[i]
    const size = i < 6 ? 16 : 64;
    let last = 8;
    let next = 8;
    for (let j = 0; j < size; j++) {
      if (next !== 0) next = (last + r.se() + 256) % 256;
      last = next === 0 ? last : next;
    }
  }
}

class SpsTruncated extends Error {}

/** MSB-first bit reader with Exp-Golomb codes (H.264 §9.1). */
class BitReader {
  private pos = 0;
  constructor(private readonly data: Uint8Array) {}

  bit(): number {
    if (this.pos >= this.data.length * 8) throw new SpsTruncated();
    const b = (this.data[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1;
    this.pos++;
    return b;
  }

  bits(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 2 + this.bit();
    return v;
  }

  ue(): number {
    let leadingZeros = 0;
    while (this.bit() === 0) {
      if (++leadingZeros > 31) throw new Error("SPS malformed: Exp-Golomb code longer than 32 bits");
    }
    return 2 ** leadingZeros - 1 + this.bits(leadingZeros);
  }

  se(): number {
    const k = this.ue();
    return k % 2 === 1 ? (k + 1) / 2 : -(k / 2);
  }
}
