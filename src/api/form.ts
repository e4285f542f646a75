// multipart/form-data and urlencoded bodies → the same field object a JSON body gives. Form values
// are strings: bracket names (`input_reference[image_url]`, `image[]`) build objects and lists, a
// string for an object or list field is JSON (vLLM-Omni form clients), and a string for a number or
// boolean field becomes one exactly when JSON would read it so — never rounded or truncated.
import type { TObject, TSchema } from "@sinclair/typebox";
import { badRequest } from "./errors.ts";
import { jsonOverLimits, MAX_JSON_DEPTH, MAX_JSON_MEMBERS } from "./json-depth.ts";
import { similarField } from "./validate.ts";

/**
 * The form's fields, typed, and its file uploads by top-level field name (body.ts's DecodedBody). A
 * file part is refused unless its field is one of `fileFields`: a text field sent as a file would
 * otherwise read as missing.
 */
export function decodeForm(
  form: FormData,
  schema: TObject,
  fileFields: readonly string[] = [],
): { fields: Record<string, unknown>; uploads: Map<string, File[]> } {
  const fields: Record<string, unknown> = {};
  const uploads = new Map<string, File[]>();
  for (const [rawKey, value] of form.entries()) {
    const path = parseFormKey(rawKey);
    if (typeof value !== "string") {
      // Uploads are kept apart under their top-level name ("image[]" → "image").
      const name = path[0]!;
      if (!fileFields.includes(name)) throw notAFileField(name, schema, fileFields);
      uploads.set(name, [...(uploads.get(name) ?? []), value as File]);
      continue;
    }
    assignFormValue(fields, path, value, rawKey);
  }
  for (const [key, value] of Object.entries(fields)) {
    const field = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    const decoded = decodeJsonField(key, value, field);
    // JSON inside a form value is typed by the client, as a JSON body is.
    define(fields, key, decoded === value ? typed(value, field) : decoded);
  }
  return { fields, uploads };
}

function notAFileField(name: string, schema: TObject, fileFields: readonly string[]) {
  if (Object.hasOwn(schema.properties, name)) {
    const files = fileFields.filter((f) => f !== "mask"); // edits take a mask part only to refuse it by name
    const hint = files.length ? `; upload files as ${files.map((f) => `'${f}'`).join(" or ")}` : "";
    return badRequest(`Field '${name}' cannot be a file upload${hint}`, name);
  }
  const near = similarField(name, [...fileFields, ...Object.keys(schema.properties)]);
  return badRequest(`Field '${name}' does not accept file uploads${near ? ` (did you mean '${near}'?)` : ""}`, name);
}

/** "a[b][]" → ["a", "b", ""]; "" marks an appended array element. */
function parseFormKey(key: string): string[] {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match) throw badRequest(`Malformed form field name '${key}'`, key);
  const rest = [...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!);
  if (rest.length >= MAX_JSON_DEPTH) throw badRequest(`Form field '${match[1]}' nests deeper than ${MAX_JSON_DEPTH} levels`, match[1]!);
  return [match[1]!, ...rest];
}

/**
 * Sets `value` at `path`, creating objects and lists on the way. Only own properties are read and
 * every property is defined, never assigned: a name like `__proto__[x]` makes a field named
 * "__proto__" (refused later as unknown), never a write into Object.prototype.
 */
function assignFormValue(target: Record<string, unknown>, path: string[], value: string, rawKey: string): void {
  let node: any = target;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    const nextIsArray = path[i + 1] === "";
    if (key === "") throw badRequest(`Unsupported form field name '${rawKey}'`, rawKey);
    if (!Object.hasOwn(node, key)) define(node, key, nextIsArray ? [] : {});
    if (typeof node[key] !== "object") throw badRequest(`Form field '${rawKey}' conflicts with a plain value`, rawKey);
    if (nextIsArray && i + 1 === path.length - 1) {
      if (!Array.isArray(node[key])) throw badRequest(`Form field '${rawKey}' conflicts with an object`, rawKey);
      node[key].push(value);
      return;
    }
    node = node[key];
  }
  const last = path[path.length - 1]!;
  // A repeated plain key becomes a list, as multipart clients send repeated fields.
  const repeated = Object.hasOwn(node, last);
  define(node, last, repeated ? [...(Array.isArray(node[last]) ? node[last] : [node[last]]), value] : value);
}

function define(node: object, key: string, value: unknown): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A form string for a field the schema types as an object or list is JSON (vLLM-Omni form clients). */
function decodeJsonField(key: string, value: unknown, schema: TSchema | undefined): unknown {
  if (typeof value !== "string" || !expectsStructured(schema)) return value;
  const trimmed = value.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return value;
  const over = jsonOverLimits(trimmed);
  if (over) throw badRequest(over.limit === "depth" ? `Field '${key}' nests deeper than ${MAX_JSON_DEPTH} levels` : `Field '${key}' has more than ${MAX_JSON_MEMBERS} members and items`, key);
  try {
    return JSON.parse(trimmed);
  } catch (err) {
    throw badRequest(`Field '${key}' is not valid JSON: ${(err as Error).message}`, key);
  }
}

function expectsStructured(schema: any): boolean {
  if (!schema) return false;
  if (schema.type === "object" || schema.type === "array") return true;
  return Array.isArray(schema.anyOf) && schema.anyOf.some(expectsStructured);
}

/** JSON's number grammar: a form string is a number exactly when JSON.parse would read it as one. */
const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/**
 * A form value typed by its schema: strings stay strings where the schema admits a string (so
 * `seconds=2.5` is the string "2.5", as in JSON), numbers and booleans are read as JSON reads them,
 * objects and lists are typed member by member. Anything else is left for validation to name.
 */
function typed(value: unknown, schema: TSchema | undefined): unknown {
  if (!schema) return value;
  if (Array.isArray(value)) return schema.type === "array" ? value.map((v) => typed(v, schema.items)) : value;
  if (value !== null && typeof value === "object") {
    if (schema.type !== "object" || !schema.properties) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typed(v, Object.hasOwn(schema.properties, k) ? schema.properties[k] : undefined)]));
  }
  if (typeof value !== "string") return value;
  const types = new Set<string>((schema.anyOf ?? [schema]).map((s: TSchema) => s.type));
  if (types.has("string")) return value;
  if ((types.has("number") || types.has("integer")) && JSON_NUMBER.test(value)) return Number(value);
  if (types.has("boolean") && (value === "true" || value === "false")) return value === "true";
  return value;
}
