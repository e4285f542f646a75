// The serving layer's typed error: what admission, routes and sessions throw for a request they cannot
// serve. It carries the HTTP status and the field at fault; http/errors.ts turns it into the OpenAI
// error envelope and realtime sessions into a protocol `error`.
import type { ErrorType } from "../../schemas/errors.ts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly type: ErrorType = defaultType(status),
    /** Headers the answer must carry (Content-Range on a 416, Retry-After on a 503). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

function defaultType(status: number): ErrorType {
  if (status === 404) return "not_found_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export const badRequest = (message: string, param: string | null = null) => new ApiError(400, message, param);
export const notFound = (message: string, param: string | null = null) => new ApiError(404, message, param);
