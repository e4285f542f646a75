// The serve config: what an operator may write in the YAML file or as dotted CLI overrides.
//
// Every object is closed (additionalProperties: false) so a typo fails at start with its path.
// Sections carry `default: {}` so Value.Default can fill the fields below them; fields the server
// needs carry their default here, once. `default_request` deliberately has no field defaults: a value
// there is operator intent, and intent must come from the operator (see src/config/load.ts).
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

const closed = { additionalProperties: false, default: {} } as const;
const NonEmpty = (description: string) => Type.String({ minLength: 1, description });
const PositiveInt = (def: number, description: string) => Type.Integer({ minimum: 1, default: def, description });

const LoraComponents = Type.Object(
  {
    lora_path: Type.Optional(NonEmpty("LoRA adapter (.safetensors file or diffusers LoRA dir) loaded at start")),
    lora_nickname: Type.Optional(NonEmpty("served model id while the adapter is loaded; default: adapter base name")),
    lora_strength: Type.Number({ default: 1.0, description: "scale applied to the adapter" }),
  },
  closed,
);

const Generator = Type.Object(
  {
    model_path: Type.String({ minLength: 1, default: "builtin:kino-tiny", description: "a Wan checkpoint directory (diffusers or original layout; text-to-video, Wan2.1 I2V with its CLIP encoder, Wan2.2 TI2V-5B), or builtin:<name>" }),
    engine: Type.Object(
      {
        num_gpus: PositiveInt(1, "GPUs to use: one worker each, pinned by CUDA_VISIBLE_DEVICES (not with device cpu)"),
        device: Type.Union([Type.Literal("auto"), Type.Literal("cuda"), Type.Literal("cpu")], {
          default: "auto",
          description: "auto takes CUDA when a device answers, else the WASM CPU backend",
        }),
        num_workers: PositiveInt(1, "worker processes, one loaded pipeline each; at least num_gpus, a multiple of it"),
        stall_timeout_s: Type.Number({
          minimum: 0,
          default: 600,
          description: "a running job or stream with no progress (a step, a chunk) this long has its worker killed and restarted; 0 never",
        }),
      },
      closed,
    ),
    pipeline: Type.Object({ components: LoraComponents }, closed),
  },
  closed,
);

const RemoteReferences = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: "fetch http(s) reference URLs at all" }),
    allow_hosts: Type.Array(Type.String(), { default: [], description: "host names a reference URL may name" }),
    max_bytes: PositiveInt(32 * 1024 * 1024, "largest remote reference body"),
    timeout_ms: PositiveInt(15000, "whole-fetch timeout"),
  },
  closed,
);

const Realtime = Type.Object(
  {
    max_sessions: PositiveInt(4, "concurrent /v1/realtime/video sessions; more get error server_busy"),
    start_timeout_s: Type.Number({ exclusiveMinimum: 0, default: 10, description: "time for the first frame to be session.start" }),
    stall_timeout_s: Type.Number({ exclusiveMinimum: 0, default: 60, description: "no generation progress for this long ends the session" }),
    max_start_bytes: PositiveInt(4 * 1024 * 1024, "largest session.start message"),
    max_control_bytes: PositiveInt(128 * 1024, "largest message after session.start"),
    pace_lead_chunks: Type.Integer({ minimum: 0, default: 1, description: "with pace_to_media_time: chunks generated ahead of playback" }),
  },
  closed,
);

const Server = Type.Object(
  {
    host: Type.String({ minLength: 1, default: "0.0.0.0", description: "address to listen on" }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8000, description: "0 picks a free port" }),
    output_dir: Type.String({ minLength: 1, default: "outputs", description: "where videos, images and references are written" }),
    served_model_name: Type.Optional(NonEmpty("model id reported by /v1/models")),
    public_url: Type.Optional(
      Type.String({
        pattern: "^https?://[^/?#\\s]+(/[^?#\\s]*)?$",
        description: "where clients reach kino (https://...); image urls are absolute on it, else relative",
      }),
    ),
    api_key: Type.Optional(NonEmpty("bearer key required on every /v1 route")),
    max_body_bytes: Type.Integer({ minimum: 1024, default: 64 * 1024 * 1024, description: "largest request body (413 beyond)" }),
    max_jobs: PositiveInt(1000, "jobs kept in memory"),
    references: Type.Object(
      {
        allowed_local_roots: Type.Array(Type.String(), { default: [], description: "dirs local-path references may be read from" }),
        max_bytes: PositiveInt(32 * 1024 * 1024, "largest reference (data URL, upload, local file)"),
        max_pixels: PositiveInt(16 * 1024 * 1024, "largest decoded reference image/frame"),
        remote: RemoteReferences,
      },
      closed,
    ),
    realtime: Realtime,
    drain_timeout_s: Type.Number({
      minimum: 0,
      default: 30,
      description: "on SIGTERM: how long running jobs may finish; then a cluster hands them to another node, one node fails them",
    }),
  },
  closed,
);

const ArtifactStorage = Type.Object(
  {
    kind: Type.Union([Type.Literal("local"), Type.Literal("s3")], {
      default: "local",
      description: "local: a directory (shared by every node in a cluster); s3: an S3-compatible bucket",
    }),
    path: Type.Optional(NonEmpty("local: the directory; unset: server.output_dir")),
    endpoint: Type.Optional(Type.String({ pattern: "^https?://", description: "s3: the endpoint URL; unset: AWS for the region" })),
    bucket: Type.Optional(NonEmpty("s3: the bucket (required for s3)")),
    prefix: Type.String({ default: "", description: "s3: key prefix for everything kino stores" }),
    region: Type.String({ minLength: 1, default: "us-east-1", description: "s3: the bucket's region" }),
    presign: Type.Boolean({ default: false, description: "s3: /content redirects to a presigned URL instead of streaming" }),
  },
  closed,
);

/** Several nodes as one service. Secrets come from the environment (KINO_REDIS_PASSWORD, KINO_S3_*). */
const Cluster = Type.Object(
  {
    redis_url: Type.Optional(Type.String({ pattern: "^rediss?://", description: "redis://host:port: jobs and the queue live there; unset: one node" })),
    queue: Type.String({ minLength: 1, pattern: "^[A-Za-z0-9_-]+$", default: "kino", description: "name (and Redis key prefix) of the cluster's job queue" }),
    node_id: Type.Optional(NonEmpty("this node's name in the cluster; unset: hostname:port")),
    node_url: Type.Optional(
      Type.String({
        pattern: "^https?://[^/?#\\s]+(/[^?#\\s]*)?$",
        description: "where this node itself is reached (kino status, server_busy); unset: http://<server.host or hostname>:<port>",
      }),
    ),
    storage: ArtifactStorage,
    stall_ms: PositiveInt(30000, "a node silent this long has died: its job runs again elsewhere"),
    max_attempts: PositiveInt(3, "runs of a job (node deaths included) before it fails"),
  },
  closed,
);

/** A request default: unset, a request that leaves the field out gets the model card's value. */
const CARD = "unset: the model card's";
const Sampling = Type.Object(
  {
    height: Type.Optional(Type.Integer({ minimum: 1, description: `frame height; ${CARD}` })),
    width: Type.Optional(Type.Integer({ minimum: 1, description: `frame width; ${CARD}` })),
    num_frames: Type.Optional(Type.Integer({ minimum: 1, description: `frames per clip; ${CARD}` })),
    fps: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: `frames per second; ${CARD}` })),
    num_inference_steps: Type.Optional(Type.Integer({ minimum: 1, description: `denoising steps; ${CARD}` })),
    guidance_scale: Type.Optional(Type.Number({ minimum: 0, description: `classifier-free guidance; ${CARD}` })),
    seed: Type.Optional(Type.Integer({ description: "unset: a fresh random seed per request" })),
  },
  closed,
);

const DefaultRequest = Type.Object(
  {
    // Accepted so configs written for other servers load, but each request carries its own prompt.
    prompt: Type.Optional(Type.String({ description: "ignored: every request carries its own prompt" })),
    negative_prompt: Type.Optional(Type.String({ description: "unset: the model's own (often empty)" })),
    sampling: Sampling,
  },
  closed,
);

export const ServeConfigSchema = Type.Object(
  { generator: Generator, server: Server, default_request: DefaultRequest, cluster: Cluster },
  { additionalProperties: false },
);

export type ServeConfig = Static<typeof ServeConfigSchema>;

/** The config an operator gets with no file and no overrides. */
export const ServeConfigDefaults: ServeConfig = Value.Default(ServeConfigSchema, {}) as ServeConfig;

/** The operator defaults a request can inherit, by their flat (request) names. */
export const DEFAULT_REQUEST_FIELDS = [
  "negative_prompt",
  "height",
  "width",
  "num_frames",
  "fps",
  "num_inference_steps",
  "guidance_scale",
  "seed",
] as const;
export type DefaultRequestField = (typeof DEFAULT_REQUEST_FIELDS)[number];
