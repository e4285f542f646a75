import { Type, type Static } from "@sinclair/typebox";
import { FlowShiftSchema, ImageClientFields, ImageEditClientFields } from "./client-fields.ts";
import { ImageReferenceSchema, LoraSelectorSchema } from "./references.ts";

export const ImageFormatSchema = Type.Union([Type.Literal("png"), Type.Literal("jpeg"), Type.Literal("webp")], {
  errorMessage: "kino writes png, jpeg or webp",
});

/** Fields shared by POST /v1/images and POST /v1/images/edits. */
const imageFields = {
  model: Type.Optional(Type.String()),
  prompt: Type.String({ minLength: 1 }),
  negative_prompt: Type.Optional(Type.String()),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
  size: Type.Optional(Type.String({ pattern: "^(auto|[1-9][0-9]{0,4}x[1-9][0-9]{0,4})$" })),
  width: Type.Optional(Type.Integer({ minimum: 1 })),
  height: Type.Optional(Type.Integer({ minimum: 1 })),
  response_format: Type.Optional(Type.Union([Type.Literal("url"), Type.Literal("b64_json")], { errorMessage: "must be url or b64_json" })),
  output_format: Type.Optional(ImageFormatSchema),
  output_compression: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295 })),
  num_inference_steps: Type.Optional(Type.Integer({ minimum: 1 })),
  guidance_scale: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
  flow_shift: Type.Optional(FlowShiftSchema),
  extra_params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  lora: Type.Optional(LoraSelectorSchema),
  ...ImageClientFields,
};

export const ImageGenerateSchema = Type.Object(imageFields, { additionalProperties: false });
export type ImageGenerateRequest = Static<typeof ImageGenerateSchema>;

/** JSON edits name their inputs with reference objects or URL strings; multipart uploads arrive as `image`/`image[]`. */
const ImageInput = Type.Union([Type.String({ minLength: 1 }), ImageReferenceSchema]);
export const ImageEditSchema = Type.Object(
  {
    ...imageFields,
    image: Type.Optional(Type.Union([ImageInput, Type.Array(ImageInput, { maxItems: 16 })])),
    images: Type.Optional(Type.Array(ImageInput, { maxItems: 16 })),
    mask: Type.Optional(Type.Union([Type.String(), ImageReferenceSchema])),
    ...ImageEditClientFields,
  },
  { additionalProperties: false },
);
export type ImageEditRequest = Static<typeof ImageEditSchema>;

export const ImageDataSchema = Type.Object({
  b64_json: Type.Optional(Type.String()),
  url: Type.Optional(Type.String()),
  revised_prompt: Type.String(),
});

export const ImagesResponseSchema = Type.Object({
  created: Type.Integer(),
  data: Type.Array(ImageDataSchema),
  // kino extras, as on video jobs
  id: Type.String(),
  model: Type.String(),
  output_format: ImageFormatSchema,
  size: Type.String(),
  inference_time_s: Type.Number(),
  stage_durations: Type.Record(Type.String(), Type.Number()),
  peak_memory_mb: Type.Union([Type.Number(), Type.Null()]),
});
export type ImagesResponse = Static<typeof ImagesResponseSchema>;
