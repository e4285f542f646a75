import { ServeConfigDefaults } from "../../schemas/config.ts";

export const HELP = `kino — serve video-generation models over OpenAI-style REST and realtime WebSocket

Usage:
  kino serve [--config FILE.yaml] [--server.port N ...]   start the server (default model on :8000)
  kino generate --prompt "..." -o out.mp4                 one generation, no server, with a progress bar
        [--size WxH] [--seconds S | --num-frames N] [--fps F] [--seed N] [--steps N]
        [--guidance-scale G] [--negative-prompt "..."] [--quiet] [--config FILE.yaml] [--generator.* ...]
  kino worker                                             internal: a generation worker process
  kino --help | --version

Run 'kino serve --help' for the config keys.`;

/** Every config leaf with its default, as dotted override paths. */
function configKeys(node: unknown, prefix: string): string[] {
  if (node && typeof node === "object" && !Array.isArray(node)) {
    return Object.entries(node).flatMap(([k, v]) => configKeys(v, prefix ? `${prefix}.${k}` : k));
  }
  return [`  --${prefix.padEnd(44)} ${JSON.stringify(node)}`];
}

export const SERVE_HELP = `Usage: kino serve [--config FILE.yaml] [overrides]

Overrides are dotted config paths under generator., server. and default_request.
(e.g. --server.port 8123 --server.output_dir out/). Keys and defaults:
${configKeys(ServeConfigDefaults, "").join("\n")}
  default_request.{negative_prompt, sampling.{width,height,num_frames,fps,num_inference_steps,guidance_scale,seed}}
                                                 (no defaults: only what you set applies)`;
