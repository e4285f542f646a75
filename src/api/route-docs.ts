// Route documentation helpers: the OpenAPI fragments each route declares beside its handler (request
// bodies, responses, error statuses), from the same TypeBox schemas the routes validate with.
import type { TSchema } from "@sinclair/typebox";
import { ErrorEnvelopeSchema } from "../../schemas/errors.ts";

/** A create body: JSON, or multipart/form-data as the OpenAI SDKs send it. */
export const createBody = (schema: TSchema) => ({
  required: true,
  content: { "application/json": { schema }, "multipart/form-data": { schema } },
});

export const jsonResponse = (description: string, schema: TSchema) => ({
  200: { description, content: { "application/json": { schema } } },
});

const ERROR_TEXT: Record<number, string> = {
  400: "invalid request (the envelope names the field in `param`)",
  401: "missing or wrong API key",
  404: "no such resource",
  413: "body over server.max_body_bytes (inflated, when sent compressed)",
  415: "a Content-Encoding other than gzip, deflate or br",
  416: "range not satisfiable",
  422: "the job failed; its content does not exist",
  500: "generation failed",
  503: "not available now: the engine is down, or the server is shutting down (Retry-After says when to retry)",
};

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [status, { description: ERROR_TEXT[status], content: { "application/json": { schema: ErrorEnvelopeSchema } } }]),
  );
