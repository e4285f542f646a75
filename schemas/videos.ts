import { Type, type Static } from "@sinclair/typebox";
import { FlowShiftSchema, VideoClientFields } from "./client-fields.ts";
import {
  AudioReferenceSchema,
  ImageReferenceSchema,
  LoraSelectorSchema,
  VideoReferenceSchema,
  oneOrMany,
} from "./references.ts";

const PositiveInt = (description: string) => Type.Integer({ minimum: 1, description });

/** Nested block of vLLM-Omni requests; top-level fields take precedence over it. */
export const VideoParamsSchema = Type.Object(
  {
    width: Type.Optional(PositiveInt("frame width in pixels")),
    height: Type.Optional(PositiveInt("frame height in pixels")),
    fps: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 240 })),
    num_frames: Type.Optional(PositiveInt("frames to generate")),
  },
  { additionalProperties: false },
);

/**
 * POST /v1/videos (and /v1/videos/sync, /v1/videos/generations, and the realtime session.start).
 * The union of OpenAI's, vLLM-Omni's and SGLang's fields: kino's own, and the others' understood or
 * refused with a reason (client-fields.ts); anything else is an unknown field.
 */
export const VideoCreateSchema = Type.Object(
  {
    model: Type.Optional(Type.String()),
    prompt: Type.String({ minLength: 1, description: "text prompt" }),
    negative_prompt: Type.Optional(Type.String()),
    seconds: Type.Optional(
      Type.Union([Type.String({ pattern: "^[1-9][0-9]{0,3}$" }), Type.Integer({ minimum: 1, maximum: 9999 })], {
        description:
          'clip length in whole seconds, as OpenAI ("4") and vLLM-Omni send it, or as a JSON number; the same rule in JSON and forms. num_frames sets any other length',
        errorMessage: 'must be a whole number of seconds such as "4" or 4; for other lengths send num_frames',
      }),
    ),
    size: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,4}x[1-9][0-9]{0,4}$", description: "WIDTHxHEIGHT" })),
    width: Type.Optional(PositiveInt("frame width in pixels")),
    height: Type.Optional(PositiveInt("frame height in pixels")),
    fps: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 240 })),
    num_frames: Type.Optional(PositiveInt("frames to generate")),
    video_params: Type.Optional(VideoParamsSchema),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295 })),
    num_inference_steps: Type.Optional(PositiveInt("denoising steps")),
    guidance_scale: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
    flow_shift: Type.Optional(FlowShiftSchema),
    task: Type.Optional(Type.String()),
    image_reference: Type.Optional(oneOrMany(ImageReferenceSchema)),
    video_reference: Type.Optional(oneOrMany(VideoReferenceSchema)),
    audio_reference: Type.Optional(oneOrMany(AudioReferenceSchema)),
    // Legacy spellings FastVideo still accepts. input_reference may also be a multipart upload.
    input_reference: Type.Optional(Type.Union([Type.String({ minLength: 1 }), ImageReferenceSchema])),
    reference_url: Type.Optional(Type.String({ minLength: 1 })),
    video_path: Type.Optional(Type.String({ minLength: 1 })),
    video_url: Type.Optional(Type.String({ minLength: 1 })),
    extra_params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    lora: Type.Optional(LoraSelectorSchema),
    ...VideoClientFields,
  },
  { additionalProperties: false },
);
export type VideoCreateRequest = Static<typeof VideoCreateSchema>;

export const JobStatusSchema = Type.Union([
  Type.Literal("queued"),
  Type.Literal("in_progress"),
  Type.Literal("completed"),
  Type.Literal("failed"),
]);
export type JobStatus = Static<typeof JobStatusSchema>;

/** The job object returned by create/retrieve/list (OpenAI's video object plus FastVideo's extensions). */
export const VideoJobSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal("video"),
  model: Type.String(),
  prompt: Type.String(),
  status: JobStatusSchema,
  progress: Type.Integer({ minimum: 0, maximum: 100 }),
  created_at: Type.Integer(),
  completed_at: Type.Union([Type.Integer(), Type.Null()]),
  expires_at: Type.Union([Type.Integer(), Type.Null()]),
  size: Type.String(),
  seconds: Type.String(),
  quality: Type.String(),
  remixed_from_video_id: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String() }), Type.Null()]),
  file_name: Type.Union([Type.String(), Type.Null()]),
  file_path: Type.Union([Type.String(), Type.Null()]),
  media_type: Type.String(),
  inference_time_s: Type.Union([Type.Number(), Type.Null()]),
  stage_durations: Type.Record(Type.String(), Type.Number()),
  peak_memory_mb: Type.Union([Type.Number(), Type.Null()]),
  /** Once completed: the prompt the model ran on, where it extended the request's from its image. */
  revised_prompt: Type.Optional(Type.String()),
});
export type VideoJob = Static<typeof VideoJobSchema>;

export const VideoListQuerySchema = Type.Object(
  {
    after: Type.Optional(Type.String()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")])),
  },
  { additionalProperties: false },
);

export const VideoListSchema = Type.Object({
  object: Type.Literal("list"),
  data: Type.Array(VideoJobSchema),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});

export const VideoDeletedSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal("video.deleted"),
  deleted: Type.Literal(true),
});
