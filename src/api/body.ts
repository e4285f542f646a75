import type { TObject } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ApiError, badRequest } from "./errors.ts";

/** A create body after transport decoding: plain fields plus multipart file uploads by field name. */
export interface DecodedBody {
  fields: Record<string, unknown>;
  uploads: Map<string, File[]>;
}

/** Reads at most maxBytes of the body; 413 beyond that, whether or not Content-Length was declared. */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const part of request.body as unknown as AsyncIterable<Uint8Array>) {
    total += part.byteLength;
    if (total > maxBytes) throw tooLarge(maxBytes);
    parts.push(part);
  }
  return new Uint8Array(Buffer.concat(parts));
}

const tooLarge = (max: number) => new ApiError(413, `Request body exceeds the ${max}-byte limit`, null, "invalid_request_error");

/**
 * JSON or multipart/form-data (or urlencoded) into one field object. Form values are strings, so fields
 * the schema types as objects may arrive as JSON strings (vLLM-Omni clients) or in bracket notation
 * (`input_reference[image_url]`, `image[]`: the OpenAI SDKs); both decode to the same object, and form
 * scalars are converted to the schema's types. JSON bodies are taken as typed by the client.
 */
export async function decodeBody(request: Request, schema: TObject, maxBytes: number): Promise<DecodedBody> {
  const bytes = await readBodyBytes(request, maxBytes);
  const contentType = request.headers.get("content-type") ?? "";
  if (/^multipart\/form-data|^application\/x-www-form-urlencoded/i.test(contentType)) {
    let form: FormData;
    try {
      form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
    } catch (err) {
      throw badRequest(`Malformed form body: ${(err as Error).message}`);
    }
    return decodeForm(form, schema);
  }
  if (bytes.byteLength === 0) throw badRequest("Request body is empty; send a JSON object");
  let fields: unknown;
  try {
    fields = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw badRequest(`Malformed JSON body: ${(err as Error).message}`);
  }
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    throw badRequest("The request body must be a JSON object");
  }
  return { fields: dropNulls(fields as Record<string, unknown>), uploads: new Map() };
}

function decodeForm(form: FormData, schema: TObject): DecodedBody {
  const fields: Record<string, unknown> = {};
  const uploads = new Map<string, File[]>();
  for (const [rawKey, value] of form.entries()) {
    const path = parseFormKey(rawKey);
    if (typeof value !== "string") {
      // Uploads are kept apart under their top-level name ("image[]" → "image").
      const name = path[0]!;
      uploads.set(name, [...(uploads.get(name) ?? []), value as File]);
      continue;
    }
    assignFormValue(fields, path, value, rawKey);
  }
  for (const [key, value] of Object.entries(fields)) {
    fields[key] = decodeJsonField(key, value, schema);
  }
  return { fields: Value.Convert(schema, fields) as Record<string, unknown>, uploads };
}

/**
 * Pydantic-based clients send `"seed": null` for fields they leave unset; null means "not sent".
 * (A schema has no field whose meaningful value is null.) Nested objects are cleaned too.
 */
function dropNulls(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, v && typeof v === "object" && !Array.isArray(v) ? dropNulls(v as Record<string, unknown>) : v]),
  );
}

/** "a[b][]" → ["a", "b", ""]; "" marks an appended array element. */
function parseFormKey(key: string): string[] {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match) throw badRequest(`Malformed form field name '${key}'`, key);
  const rest = [...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!);
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
function decodeJsonField(key: string, value: unknown, schema: TObject): unknown {
  if (typeof value !== "string" || !expectsStructured(schema.properties[key])) return value;
  const trimmed = value.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return value;
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
