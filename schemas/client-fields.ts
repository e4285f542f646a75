// Fields that OpenAI's and vLLM-Omni's clients send and kino has no setting of its own for. Each one is
// understood: accepted because it changes nothing kino does (informational), accepted only at the
// value that means "off", or refused with the capability it needs. A client then learns why, instead
// of reading "Unknown field". The reasons travel in the schema: `errorMessage` is what a refused value
// is told (src/api/validate.ts), `description` is what the OpenAPI document shows.
import { Type, type TLiteralValue, type TSchema } from "@sinclair/typebox";

/** vLLM-Omni's flow_shift, mapped onto the sampler: for models whose card declares a flow_shift. */
export const FlowShiftSchema = Type.Number({
  exclusiveMinimum: 0,
  maximum: 100,
  description: "the sampler's timestep shift s (σ → s·σ / (1 + (s−1)·σ)); the model card's flow_shift is the default, absent: not adjustable",
});

/** Accepted with any value of `schema`'s type; it changes nothing kino does. */
const informational = <T extends TSchema>(schema: T, why: string) =>
  Type.Optional({ ...schema, description: `informational, no effect: ${why}` } as T);

/** Accepted only at the values that mean "off" or "as kino does anyway"; any other value is refused with `why`. */
const onlyAt = (values: TLiteralValue[], why: string) => {
  const literals = values.map((v) => Type.Literal(v));
  const accepted = values.map((v) => JSON.stringify(v)).join(" or ");
  const options = { description: `accepted only as ${accepted}: ${why}`, errorMessage: `only ${accepted} is supported: ${why}` };
  return Type.Optional(literals.length === 1 ? Type.Literal(values[0]!, options) : Type.Union(literals, options));
};

/** Refused whatever its value, with the capability it needs. */
const refused = (why: string) => Type.Optional(Type.Never({ description: `refused: ${why}`, errorMessage: `not supported: ${why}` }));

const TWO_EXPERTS = "needs a two-expert (Wan2.2 A14B MoE) model; the served model has one DiT";
const TRUE_CFG =
  "needs a model with distilled guidance and a separate true-CFG pass (as Qwen-Image or FLUX have); this model's guidance_scale already is classifier-free guidance with negative_prompt";
const NO_AUDIO = "needs a model that generates audio; the served model makes video only";
const NO_INTERPOLATION = "needs frame interpolation (RIFE), which kino does not have; ask for more frames with fps and num_frames";

/** Fields every generation request may carry (videos, images, realtime session.start). */
const commonFields = {
  user: informational(Type.String(), "an end-user id for the client's own records; kino keeps none"),
  true_cfg_scale: refused(TRUE_CFG),
};

/** POST /v1/videos and session.start: vLLM-Omni's VideoGenerationRequest beyond kino's own fields. */
export const VideoClientFields = {
  ...commonFields,
  guidance_scale_2: refused(`${TWO_EXPERTS} (guidance_scale_2 guides its high-noise expert)`),
  boundary_ratio: refused(`${TWO_EXPERTS} (boundary_ratio is where its second expert takes over)`),
  generate_sound: onlyAt([false], NO_AUDIO),
  sound_duration: refused(NO_AUDIO),
  enable_frame_interpolation: onlyAt([false], NO_INTERPOLATION),
  frame_interpolation_exp: refused(NO_INTERPOLATION),
  frame_interpolation_scale: refused(NO_INTERPOLATION),
  frame_interpolation_model_path: refused(NO_INTERPOLATION),
};

const GIF = "GIF output, which kino does not write (png, jpeg or webp); POST /v1/videos makes moving pictures";
const GPT_IMAGE = "a GPT-image setting with no counterpart in a diffusion model";

/** POST /v1/images and /v1/images/edits: the OpenAI SDK's and vLLM-Omni's image fields beyond kino's own. */
export const ImageClientFields = {
  ...commonFields,
  safety_identifier: informational(Type.String(), "an end-user id for the client's own records; kino keeps none"),
  moderation: onlyAt(["auto", "low"], "kino applies no content moderation of its own"),
  background: onlyAt(["auto", "opaque"], "a transparent background needs a model that renders an alpha channel; kino's images are opaque"),
  quality: onlyAt(["auto", "standard"], "kino has no quality presets; num_inference_steps sets the effort"),
  stream: onlyAt([false], "streamed partial images are not supported; kino answers with the finished images"),
  partial_images: onlyAt([0], "partial images need stream, which kino does not support"),
  style: refused("a DALL·E 3 setting; describe the style in the prompt"),
  complexity: refused(GPT_IMAGE),
  frame_count: refused(GIF),
  frame_duration_ms: refused(GIF),
  svg: refused("SVG output, which kino does not write (png, jpeg or webp)"),
  vae_use_slicing: informational(Type.Boolean(), "a memory option of diffusers' VAE; kino's VAE decodes frame by frame anyway"),
  vae_use_tiling: informational(Type.Boolean(), "a memory option of diffusers' VAE; kino's VAE decodes frame by frame anyway"),
  generator_device: informational(Type.String(), "kino draws the same seeded noise on every device"),
  layers: refused("needs a layered image model (as Qwen-Image-Layered)"),
  bot_task: refused("needs a model with a language-model stage (as HunyuanImage 3)"),
  system_prompt: refused("needs a model with a language-model stage (as HunyuanImage 3)"),
  use_system_prompt: refused("needs a model with a language-model stage (as HunyuanImage 3)"),
  infer_align_image_size: refused("a HunyuanImage 3 setting for its image conditioning"),
};

/** POST /v1/images/edits only. */
export const ImageEditClientFields = {
  input_fidelity: refused(GPT_IMAGE),
  markup: refused("needs a model that takes an overlay image to guide the edit"),
};
