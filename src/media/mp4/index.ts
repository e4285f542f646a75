// MP4 output for H.264 access units: complete faststart files and fragmented MP4 for streaming.
export { codecString, parseSps, splitAnnexB, type AvcSample, type AvcTrackConfig, type SpsInfo } from "./avc.ts";
export { buildMp4, Mp4FileWriter } from "./mp4-file.ts";
export { FragmentedMp4Writer } from "./fmp4.ts";
