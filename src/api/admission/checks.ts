// Admission checks shared by video, image and realtime requests. Each throws a 400 naming the field.
import type { LoraSelector } from "../../../schemas/references.ts";
import { badRequest } from "../errors.ts";
import type { ModelCard } from "../../pipelines/pipeline.ts";
import type { AdmissionContext } from "./context.ts";

export function checkModel(model: string | undefined, ctx: AdmissionContext): void {
  if (model === undefined || model === ctx.servedModelId) return;
  throw badRequest(`Model '${model}' is not served here; this server serves '${ctx.servedModelId}'`, "model");
}

/** A selector must name the startup adapter: LoRAs are merged at load, never swapped per request. */
export function checkLora(selector: LoraSelector | undefined, ctx: AdmissionContext): void {
  if (!selector) return;
  const lora = ctx.startupLora;
  if (!lora) throw badRequest("No LoRA adapter was loaded at startup; remove 'lora' from the request", "lora");
  const name = agreeing(selector, ["name", "lora_name", "adapter"]);
  const path = agreeing(selector, ["path", "lora_path", "local_path"]);
  const scale = agreeing(selector, ["scale", "lora_scale"]);
  if (name !== undefined && name !== lora.nickname) {
    throw badRequest(`LoRA '${name}' does not match the startup adapter '${lora.nickname}'`, "lora.name");
  }
  if (path !== undefined && path !== lora.path) {
    throw badRequest(`LoRA path '${path}' does not match the startup adapter's path`, "lora.path");
  }
  if (scale !== undefined && Math.abs((scale as number) - lora.strength) > 1e-8) {
    throw badRequest(`LoRA scale ${scale} does not match the startup strength ${lora.strength}`, "lora.scale");
  }
}

/** Alias spellings of one selector field must agree with each other. */
function agreeing(selector: LoraSelector, keys: (keyof LoraSelector)[]): string | number | undefined {
  const present = keys.filter((k) => selector[k] !== undefined);
  for (const k of present.slice(1)) {
    if (selector[k] !== selector[present[0]!]) {
      throw badRequest(`lora.${present[0]} and lora.${k} disagree`, `lora.${k}`);
    }
  }
  return present.length ? selector[present[0]!] : undefined;
}

/**
 * The request's task: the one it names, else image-to-video when it sends an image and the model
 * can, else the model's first. Image-to-video without an image, or text-to-video with one, is refused;
 * so is a request without an image on a model that only makes video from one.
 */
export function resolveTask(task: string | undefined, card: ModelCard, images: number): string {
  if (task === undefined && images === 0 && !card.tasks.includes("t2v") && card.tasks.includes("i2v")) {
    throw badRequest("This model makes video from an image (task 'i2v' only): send exactly one image in image_reference (or input_reference)", "image_reference");
  }
  if (task === undefined) return images > 0 && card.tasks.includes("i2v") ? "i2v" : card.tasks[0]!;
  if (!card.tasks.includes(task)) {
    throw badRequest(`Task '${task}' is not supported by this model (supported: ${card.tasks.join(", ")})`, "task");
  }
  if (task === "i2v" && images === 0) throw badRequest("Task 'i2v' needs an image reference (image_reference or input_reference)", "task");
  if (task === "t2v" && images > 0 && card.tasks.includes("i2v")) {
    throw badRequest("Task 't2v' takes no image reference; send task 'i2v' or leave task out", "task");
  }
  return task;
}

/**
 * Only keys the model card declares, with their declared JSON type. Form clients can only send
 * strings, so a string that spells the declared number or boolean is converted.
 */
export function checkExtraParams(extra: Record<string, unknown> | undefined, card: ModelCard): Record<string, unknown> {
  if (!extra) return {};
  const checked: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(extra)) {
    // Own keys only: a client's "constructor" must not find Object.prototype's.
    const expected = Object.hasOwn(card.extra_params, key) ? card.extra_params[key] : undefined;
    if (!expected) {
      const known = Object.keys(card.extra_params);
      throw badRequest(
        `extra_params.${key} is not supported by this model (${known.length ? `supported: ${known.join(", ")}` : "it declares none"})`,
        `extra_params.${key}`,
      );
    }
    const value = typeof raw === "string" && expected !== "string" ? fromFormString(raw, expected) : raw;
    if (typeof value !== expected) throw badRequest(`extra_params.${key} must be a ${expected}`, `extra_params.${key}`);
    checked[key] = value;
  }
  return checked;
}

function fromFormString(text: string, expected: "number" | "boolean"): unknown {
  if (expected === "boolean") return text === "true" ? true : text === "false" ? false : text;
  const n = Number(text);
  return text.trim() !== "" && Number.isFinite(n) ? n : text;
}

/** "832x480" → [832, 480]. */
export function parseSize(size: string): [number, number] {
  const [w, h] = size.split("x").map(Number);
  return [w!, h!];
}

/** A resolved request value and the field it came from, so an error can name that field. */
export interface Sourced<T> {
  value: T;
  param: string;
}

/** The first candidate that was given, with its field; the last one is the fallback and always given. */
export function firstGiven<T>(...candidates: [T | undefined, string][]): Sourced<T> {
  const [value, param] = candidates.find(([v]) => v !== undefined) ?? candidates[candidates.length - 1]!;
  return { value: value as T, param };
}

/** The sampling fields images and videos share: the request's, else the operator's default, else the card's. */
export function sampling(body: SamplingFields, ctx: AdmissionContext) {
  const { card, operatorDefaults: op } = ctx;
  return {
    negative_prompt: body.negative_prompt ?? op.negative_prompt ?? "",
    num_inference_steps: checkSteps(body.num_inference_steps ?? op.num_inference_steps ?? card.defaults.num_inference_steps, card),
    guidance_scale: body.guidance_scale ?? op.guidance_scale ?? card.defaults.guidance_scale,
    ...flowShift(body.flow_shift, card),
    seed: body.seed ?? op.seed ?? randomSeed(),
    extra_params: checkExtraParams(body.extra_params, card),
  };
}

interface SamplingFields {
  negative_prompt?: string;
  num_inference_steps?: number;
  guidance_scale?: number;
  flow_shift?: number;
  seed?: number;
  extra_params?: Record<string, unknown>;
}

type Dimensions = Partial<Record<"width" | "height", number>>;

/**
 * Width and height, each from the first that gives it: `size` ("auto" or absent: none), then each of
 * `given` (fields named with their prefix), the operator's default_request, the model card; checked
 * against the card, with the field that gave the value named in any refusal.
 */
export function resolveDimensions(size: string | undefined, given: [Dimensions, string][], ctx: AdmissionContext): [number, number] {
  const { card, operatorDefaults: op } = ctx;
  const [sizeW, sizeH] = size && size !== "auto" ? parseSize(size) : [undefined, undefined];
  const side = (name: "width" | "height", fromSize: number | undefined) =>
    firstGiven<number>([fromSize, "size"], ...given.map(([fields, prefix]): [number | undefined, string] => [fields[name], `${prefix}${name}`]),
      [op[name], `default_request.sampling.${name}`], [card.defaults[name], "size"]);
  const w = side("width", sizeW), h = side("height", sizeH);
  checkDimensions(w, h, card);
  return [w.value, h.value];
}

/** Width and height on the model's grid and within its limits; the message gives the nearest valid size. */
export function checkDimensions(width: Sourced<number>, height: Sourced<number>, card: ModelCard): void {
  const f = card.spatial_factor;
  for (const [name, { value: v, param }] of [["width", width], ["height", height]] as const) {
    if (v < card.min_size || v > card.max_size) {
      throw badRequest(`${name} ${v} is outside this model's range ${card.min_size}..${card.max_size}`, param);
    }
    if (v % f !== 0) {
      const nearest = Math.max(f, Math.round(v / f) * f);
      throw badRequest(`${name} ${v} is not a multiple of ${f}; the nearest valid value is ${nearest}`, param);
    }
  }
  if (width.value * height.value > card.max_pixels) {
    throw badRequest(`${width.value}x${height.value} exceeds this model's ${card.max_pixels}-pixel limit`, width.param);
  }
}

/** An explicit frame count: within the model's range and on its frame grid, else refused with the nearest valid value. */
export function checkFrames(frames: number, card: ModelCard, param: string): number {
  if (frames < card.min_frames || frames > card.max_frames) {
    throw badRequest(`${param} ${frames} is outside this model's range ${card.min_frames}..${card.max_frames}`, param);
  }
  const nearest = alignFrames(frames, card);
  if (nearest !== frames) {
    throw badRequest(`${param} ${frames} is not on this model's frame grid (${card.frame_multiple}n+${card.frame_offset}); the nearest valid value is ${nearest}`, param);
  }
  return frames;
}

/**
 * The frames of a clip `seconds` long at `fps`: seconds × fps moved to the nearest count on the
 * model's grid. A length the model cannot make is refused with its limit, never cut short.
 */
export function framesForSeconds(seconds: number, fps: number, card: ModelCard): number {
  const frames = Math.round(seconds * fps);
  if (frames > card.max_frames) {
    const longest = Math.floor(card.max_frames / fps);
    throw badRequest(
      `seconds ${seconds} at ${fps} fps is ${frames} frames; this model makes at most ${card.max_frames} frames (${longest} s at ${fps} fps)`,
      "seconds",
    );
  }
  return alignFrames(frames, card);
}

/** The count on the model's grid (frame_multiple·n + frame_offset) nearest to `frames`, within its range. */
export function alignFrames(frames: number, card: ModelCard): number {
  const { frame_multiple: m, frame_offset: o } = card;
  const n = Math.max(0, Math.round((frames - o) / m));
  return Math.min(card.max_frames, Math.max(card.min_frames, n * m + o));
}

export function checkSteps(steps: number, card: ModelCard): number {
  if (steps > card.max_inference_steps) {
    throw badRequest(`num_inference_steps ${steps} exceeds this model's limit of ${card.max_inference_steps}`, "num_inference_steps");
  }
  return steps;
}

/** The request's flow_shift, which reaches the sampler only on a model whose card declares one. */
export function flowShift(shift: number | undefined, card: ModelCard): { flow_shift?: number } {
  if (shift === undefined) return {};
  if (card.flow_shift === undefined) {
    throw badRequest("flow_shift needs a model whose sampler takes a timestep shift; the served model's schedule is fixed (explicit distilled timesteps)", "flow_shift");
  }
  return { flow_shift: shift };
}

/** A fresh seed for requests that gave none (and no operator default), as OpenAI-style APIs do. */
export function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]!;
}
