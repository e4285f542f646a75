import type { TSchema } from "@sinclair/typebox";
import { ServeConfigSchema } from "../../schemas/config.ts";

export const HELP = `kino — serve video-generation models over OpenAI-style REST and realtime WebSocket

Usage:
  kino serve [--config FILE.yaml] [--server.port N ...]   start the server (default model on :8000)
  kino generate --prompt "..." -o out.mp4                 one generation, no server, with a progress bar
        [--size WxH] [--seconds S | --num-frames N] [--fps F] [--seed N] [--steps N]
        [--guidance-scale G] [--negative-prompt "..."] [--image FILE (image-to-video)] [--quiet]
        [--config FILE.yaml] [--generator.* ...]
  kino status --redis URL [--queue NAME] [--json]         a cluster's nodes (workers up, free session
                                                          slots, draining, last heartbeat), its queue
                                                          depth and its jobs by status (KINO_REDIS_PASSWORD
                                                          if the URL has none)
  kino worker                                             internal: a generation worker process
  kino --help | --version

Run 'kino serve --help' for the config keys.

Stopping: SIGTERM (or Ctrl-C) drains the server — no new jobs or sessions (503), realtime sessions end
with session.done (reason "draining"), running jobs get server.drain_timeout_s to finish (then a cluster
hands them to another node, one node fails them) — and exits 0. A second signal exits at once.`;

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

GPUs: --generator.engine.num_gpus N starts one worker process per GPU, worker i pinned to GPU i mod N
by its CUDA_VISIBLE_DEVICES (entry i mod N of your own CUDA_VISIBLE_DEVICES when you set one, else i mod N).
num_workers may stay 1 (it is raised to N) or be a multiple of N (the same number of workers on each GPU).
A job or realtime session goes to a free worker on the least busy GPU; with every worker busy it waits in
one FIFO queue. num_gpus > 1 is refused with device cpu, and with device auto every worker must find its
GPU (no quiet CPU fallback). GET /health lists each worker: its GPU, the device it runs on, busy or not.
SIGTERM drains: see 'kino --help'.

default_request: a request field left out takes the value written here, else the loaded model's own
default from its card (GET /v1/models/{model} shows it). Nothing is filled in for you: the default
model, kino-tiny, makes 64x64 clips of 33 frames at 16 fps in 8 steps unless you write otherwise.`;
