// Turns a pipeline's frames into the files the engine asked for: an MP4 (our H.264 encoder + the
// faststart writer) or one image per frame. Runs inside the worker process.
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import type { OutputSpec } from "./ipc.ts";
import type { GenerationResult } from "../pipelines/pipeline.ts";
import { H264Encoder } from "../media/h264/encoder.ts";
import { encodeImage } from "../media/images.ts";
import { Mp4FileWriter } from "../media/mp4/index.ts";
import { storing } from "../media/storage.ts";

/** QP for REST outputs: visually clean for generated content at a moderate bitrate. */
export const DEFAULT_VIDEO_QP = 23;

/** REST outputs (streams are encoded chunk by chunk in src/realtime/stream-task.ts). */
export type FileOutput = Exclude<OutputSpec, { kind: "stream" }>;

export async function writeOutputs(result: GenerationResult, output: FileOutput): Promise<{ path: string; bytes: number }[]> {
  if (output.kind === "mp4") return [await storing("write the video file", () => writeMp4(result, output.path))];
  // the pipelines keep images in RGB (FrameFormat); a 4:2:0 frame here is a pipeline's mistake
  if (result.format !== "rgb24") throw new Error(`Images are written from rgb24 frames; the pipeline produced ${result.format}`);
  if (output.paths.length !== result.frames.length) {
    throw new Error(`Expected ${output.paths.length} images, the pipeline produced ${result.frames.length}`);
  }
  return Promise.all(
    output.paths.map(async (path, i) => {
      const bytes = await encodeImage(result.frames[i]!, result.width, result.height, output.format, output.quality);
      await storing(`write image ${i + 1} of ${output.paths.length}`, async () => {
        await mkdir(dirname(path), { recursive: true });
        await Bun.write(path, bytes);
      });
      return { path, bytes: bytes.byteLength };
    }),
  );
}

async function writeMp4(result: GenerationResult, path: string): Promise<{ path: string; bytes: number }> {
  await mkdir(dirname(path), { recursive: true });
  // a finished file is not realtime: the quality preset (one long GOP keeps its PSNR; fast loses ~2 dB)
  const encoder = await H264Encoder.create({
    width: result.width, height: result.height, fps: result.fps, qp: DEFAULT_VIDEO_QP, preset: "quality", input: result.format,
  });
  try {
    const writer = await Mp4FileWriter.open(path, {
      width: result.width,
      height: result.height,
      fps: result.fps,
      sps: encoder.sps,
      pps: encoder.pps,
    });
    try {
      for (const frame of result.frames) await writer.add(encoder.encode(frame));
      const closed = await writer.close();
      return { path, bytes: closed.bytes };
    } catch (err) {
      await writer.abort();
      throw err;
    }
  } finally {
    encoder.close();
  }
}

