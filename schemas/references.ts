import { Type, type Static } from "@sinclair/typebox";

/** One reference object: exactly the URL key for its media, or an OpenAI `file_id` (always refused: no Files store). */
const referenceObject = (urlKey: "image_url" | "video_url" | "audio_url") =>
  Type.Object(
    { [urlKey]: Type.Optional(Type.String({ minLength: 1 })), file_id: Type.Optional(Type.String()) },
    { additionalProperties: false },
  );

export const ImageReferenceSchema = referenceObject("image_url");
export const VideoReferenceSchema = referenceObject("video_url");
export const AudioReferenceSchema = referenceObject("audio_url");

/** A reference field accepts one object or a list of them. */
export const oneOrMany = <T extends ReturnType<typeof referenceObject>>(item: T) =>
  Type.Union([item, Type.Array(item, { maxItems: 16 })]);

export type ReferenceObject = Static<typeof ImageReferenceSchema> &
  Static<typeof VideoReferenceSchema> &
  Static<typeof AudioReferenceSchema>;

/** Request-side LoRA selector; every spelling FastVideo accepts. Must match the startup adapter. */
export const LoraSelectorSchema = Type.Object(
  {
    name: Type.Optional(Type.String()),
    lora_name: Type.Optional(Type.String()),
    adapter: Type.Optional(Type.String()),
    path: Type.Optional(Type.String()),
    lora_path: Type.Optional(Type.String()),
    local_path: Type.Optional(Type.String()),
    scale: Type.Optional(Type.Number()),
    lora_scale: Type.Optional(Type.Number()),
    int_id: Type.Optional(Type.Integer({ description: "informational, no effect: vLLM's adapter slot; kino has one adapter" })),
    lora_int_id: Type.Optional(Type.Integer({ description: "informational, no effect: vLLM's adapter slot; kino has one adapter" })),
  },
  { additionalProperties: false },
);
export type LoraSelector = Static<typeof LoraSelectorSchema>;
