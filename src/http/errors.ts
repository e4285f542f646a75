// The OpenAI error envelope: the one shape every failed HTTP request answers with.
import type { ErrorEnvelope } from "../../schemas/errors.ts";
import type { ApiError } from "../api/errors.ts";

export function envelope(err: ApiError): ErrorEnvelope {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.status } };
}

/** A JSON response carrying the envelope. */
export function errorResponse(err: ApiError): Response {
  return Response.json(envelope(err), { status: err.status, headers: err.headers });
}
