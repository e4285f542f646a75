// `kino generate --prompt "..." -o out.mp4`: one generation without a server. The request goes
// through the same admission as POST /v1/videos (defaults, model card checks), the worker's runner runs
// it in this process, and a progress bar is drawn on stderr when it is a terminal. `--image FILE` is the
// request's image reference (image-to-video), read from the local file as the user's own input.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { LoadedConfig } from "../config/load.ts";
import { admissionContext } from "../api/admission/context.ts";
import { admitVideo } from "../api/videos/admission.ts";
import { newVideoJobId } from "../api/ids.ts";
import { ApiError } from "../api/errors.ts";
import { validateOrThrow } from "../api/validate.ts";
import { VideoCreateSchema } from "../../schemas/videos.ts";
import { loadOptionsFrom, Runner } from "../worker/runner.ts";
import type { ParsedArgs } from "./args.ts";
import { UsageError } from "./args.ts";

/** CLI flag → request field (and whether it is a number). */
const FLAGS: Record<string, [field: string, numeric: boolean]> = {
  prompt: ["prompt", false],
  "negative-prompt": ["negative_prompt", false],
  size: ["size", false],
  seconds: ["seconds", false],
  "num-frames": ["num_frames", true],
  fps: ["fps", true],
  seed: ["seed", true],
  steps: ["num_inference_steps", true],
  "guidance-scale": ["guidance_scale", true],
  image: ["input_reference", false],
};

export async function generate(args: ParsedArgs, loaded: LoadedConfig): Promise<void> {
  const output = args.flags.o ?? args.flags.output;
  if (typeof output !== "string") throw new UsageError("kino generate needs -o FILE.mp4");
  const body: Record<string, unknown> = {};
  for (const [flag, value] of Object.entries(args.flags)) {
    if (["o", "output", "config", "quiet"].includes(flag)) continue;
    const known = FLAGS[flag];
    if (!known) throw new UsageError(`Unknown option --${flag} for 'kino generate' (see kino --help)`);
    if (value === true) throw new UsageError(`--${flag} needs a value`);
    body[known[0]] = known[1] ? Number(value) : value;
  }
  if (typeof body.prompt !== "string") throw new UsageError('kino generate needs --prompt "..."');
  const image = typeof body.input_reference === "string" ? resolve(body.input_reference) : null;
  if (image && !existsSync(image)) throw new UsageError(`--image ${body.input_reference}: no such file`);

  const asUsage = (err: unknown) => (err instanceof ApiError ? new UsageError(err.message) : err);
  let fields;
  try {
    fields = validateOrThrow(VideoCreateSchema, body, "kino generate"); // before the model loads: a typo fails at once
  } catch (err) {
    throw asUsage(err);
  }
  // One process on the first GPU it sees: num_gpus is for the server's workers.
  const runner = await Runner.load({ ...loadOptionsFrom(loaded), numGpus: 1 });
  const request = await admitVideo(fields, new Map(), newVideoJobId(), admissionContext(loaded, runner.pipeline.card)).then(
    (admitted) => admitted.request,
    (err) => Promise.reject(asUsage(err)),
  );
  if (image) request.references = [{ kind: "image", path: image }];
  const bar = progressBar(Boolean(process.stderr.isTTY) && !args.flags.quiet);
  const path = resolve(output);
  const result = await runner.runToFiles(request, { kind: "mp4", path }, new AbortController().signal, bar);
  console.error(
    `kino: wrote ${path} (${request.width}x${request.height}, ${request.num_frames} frames at ${request.fps} fps, ${result.files[0]!.bytes} bytes) in ${result.inference_time_s.toFixed(2)} s`,
  );
}

/** A one-line bar redrawn in place; silent when stderr is not a terminal. */
function progressBar(enabled: boolean): (fraction: number, stage: string) => void {
  const width = 30;
  return (fraction, stage) => {
    if (!enabled) return;
    const filled = Math.round(Math.min(1, fraction) * width);
    process.stderr.write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${stage.padEnd(10)}`);
    if (fraction >= 1) process.stderr.write("\n");
  };
}
