import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import type { TObject } from "@sinclair/typebox";
import { ApiError, badRequest } from "./errors.ts";
import { decodeForm } from "./form.ts";
import { jsonOverLimits, MAX_JSON_DEPTH, MAX_JSON_MEMBERS } from "./json-depth.ts";

/** A create body after transport decoding: plain fields plus multipart file uploads by field name. */
export interface DecodedBody {
  fields: Record<string, unknown>;
  uploads: Map<string, File[]>;
}

/**
 * Reads at most maxBytes of the body; 413 beyond that, whether or not Content-Length was declared. A
 * body sent compressed (Content-Encoding gzip, deflate or br) is inflated under the same limit, so
 * a small bomb is a 413 too, never an allocation; other encodings are a 415.
 */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const encoding = (request.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  const inflate = INFLATE[encoding];
  if (encoding !== "identity" && !inflate) {
    throw new ApiError(415, `Content-Encoding '${encoding}' is not supported; send the body uncompressed, or as gzip, deflate or br`);
  }
  if (!request.body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const part of request.body as unknown as AsyncIterable<Uint8Array>) {
    total += part.byteLength;
    if (total > maxBytes) throw tooLarge(maxBytes);
    parts.push(part);
  }
  const bytes = Buffer.concat(parts);
  if (!inflate) return new Uint8Array(bytes);
  try {
    return new Uint8Array(inflate(bytes, { maxOutputLength: maxBytes }));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(maxBytes);
    throw badRequest(`The body is not valid ${encoding} data, as its Content-Encoding says: ${(err as Error).message}`);
  }
}

const INFLATE: Record<string, (data: Buffer, options: { maxOutputLength: number }) => Buffer> = {
  gzip: gunzipSync,
  "x-gzip": gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};

/** Fields a form may have. A request has a few dozen at most; millions of tiny ones fit the body
 *  limit a data-URL image needs, and the framework's form parser held the event loop for seconds. */
const MAX_FORM_FIELDS = 1000;

/** The fields of a form body, counted without parsing it: multipart boundary lines, or `&`-separated pairs. */
function formFieldCount(bytes: Uint8Array, contentType: string): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const separator = boundary ? `--${boundary[1] ?? boundary[2]}` : /^multipart/i.test(contentType) ? null : "&";
  if (separator === null) return 0; // no boundary: the parser refuses the body as malformed
  let count = separator === "&" && buf.length > 0 ? 1 : 0;
  for (let at = buf.indexOf(separator); at >= 0; at = buf.indexOf(separator, at + separator.length)) count++;
  // a multipart body's boundary lines are one more than its parts (the closing one)
  return boundary ? Math.max(0, count - 1) : count;
}

const tooLarge = (max: number) => new ApiError(413, `Request body exceeds the ${max}-byte limit`, null, "invalid_request_error");

/**
 * JSON or multipart/form-data (or urlencoded) into one field object. Form values are strings, so fields
 * the schema types as objects may arrive as JSON strings (vLLM-Omni clients) or in bracket notation
 * (`input_reference[image_url]`, `image[]`: the OpenAI SDKs); both decode to the same object, and form
 * scalars are converted to the schema's types. JSON bodies are taken as typed by the client. Only the
 * `fileFields` take file parts.
 */
export async function decodeBody(request: Request, schema: TObject, maxBytes: number, fileFields: readonly string[] = []): Promise<DecodedBody> {
  const bytes = await readBodyBytes(request, maxBytes);
  const contentType = request.headers.get("content-type") ?? "";
  if (/^multipart\/form-data|^application\/x-www-form-urlencoded/i.test(contentType)) {
    const fields = formFieldCount(bytes, contentType);
    if (fields > MAX_FORM_FIELDS) throw badRequest(`The form has more than ${MAX_FORM_FIELDS} fields; no request takes that many`);
    let form: FormData;
    try {
      form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
    } catch (err) {
      throw badRequest(`Malformed form body: ${(err as Error).message}`);
    }
    return decodeForm(form, schema, fileFields);
  }
  if (bytes.byteLength === 0) throw badRequest("Request body is empty; send a JSON object");
  const over = jsonOverLimits(bytes);
  if (over) {
    const where = over.field ? ` in '${over.field}'` : "";
    throw badRequest(over.limit === "depth" ? `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels${where}` : `The JSON body has more than ${MAX_JSON_MEMBERS} members and items${where}; no field takes that many`, over.field);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest("Malformed JSON body: it is not valid UTF-8 (JSON bodies must be UTF-8)");
  }
  let fields: unknown;
  try {
    fields = JSON.parse(text);
  } catch (err) {
    throw badRequest(`Malformed JSON body: ${(err as Error).message}`);
  }
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    throw badRequest("The request body must be a JSON object");
  }
  return { fields: dropNulls(fields as Record<string, unknown>), uploads: new Map() };
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
