import type { TSchema } from "@sinclair/typebox";
import { ServeConfigSchema } from "../../schemas/config.ts";

export const HELP = `kino — serve video-generation models over OpenAI-style REST and realtime WebSocket

Usage:
  kino serve [--config FILE.yaml] [--server.port N ...]   start the server (default model on :8000)
  kino generate --prompt "..." -o out.mp4                 one generation, no server, with a progress bar
        [--size WxH] [--seconds S | --num-frames N] [--fps F] [--seed N] [--steps N]
        [--guidance-scale G] [--negative-prompt "..."] [--image FILE (image-to-video)] [--quiet]
        [--config FILE.yaml] [--generator.* ...]
  kino worker                                             internal: a generation worker process
  kino --help | --version

Run 'kino serve --help' for the config keys.`;

/** Every config leaf as a dotted override path, with its default ("unset" when it has none) and what it does. */
function configKeys(schema: TSchema, prefix: string): string[] {
  if (schema.type === "object" && schema.properties) {
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) => configKeys(s, prefix ? `${prefix}.${k}` : k));
  }
  const value = schema.default === undefined ? "unset" : JSON.stringify(schema.default);
  return [`  --${prefix.padEnd(45)} ${value.padEnd(19)} ${schema.description ?? ""}`.trimEnd()];
}

export const SERVE_HELP = `Usage: kino serve [--config FILE.yaml] [overrides]

Overrides are dotted config paths under generator., server., default_request. and cluster.
(e.g. --server.port 8123 --server.output_dir out/). Keys, defaults, meaning:
${configKeys(ServeConfigSchema, "").join("\n")}

default_request: a request field left out takes the value written here, else the loaded model's own
default from its card (GET /v1/models/{model} shows it). Nothing is filled in for you: the default
model, kino-tiny, makes 64x64 clips of 33 frames at 16 fps in 8 steps unless you write otherwise.`;
