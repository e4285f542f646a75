import { timingSafeEqual } from "node:crypto";
import { ApiError } from "./errors.ts";

/** Bearer check for /v1 routes when server.api_key is set; /health stays open for probes. */
export function checkApiKey(request: Request, apiKey: string | undefined): void {
  if (!apiKey) return;
  if (!new URL(request.url).pathname.startsWith("/v1/")) return;
  const header = request.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match) throw new ApiError(401, "Missing API key: send 'Authorization: Bearer <key>'", null);
  const given = Buffer.from(match[1]!.trim());
  const expected = Buffer.from(apiKey);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ApiError(401, "Incorrect API key provided", null);
  }
}
