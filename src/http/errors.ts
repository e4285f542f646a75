import type { ErrorEnvelope, ErrorType } from "../../schemas/errors.ts";

/** An error that becomes the OpenAI envelope with this HTTP status. Thrown anywhere below the routes. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly type: ErrorType = defaultType(status),
  ) {
    super(message);
  }

  envelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.status } };
  }
}

function defaultType(status: number): ErrorType {
  if (status === 404) return "not_found_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export const badRequest = (message: string, param: string | null = null) => new ApiError(400, message, param);
export const notFound = (message: string, param: string | null = null) => new ApiError(404, message, param);

/** A JSON response carrying the envelope. */
export function errorResponse(err: ApiError, headers: Record<string, string> = {}): Response {
  return Response.json(err.envelope(), { status: err.status, headers });
}
