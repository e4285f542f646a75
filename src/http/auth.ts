import { timingSafeEqual } from "node:crypto";
import { ApiError } from "../api/errors.ts";

/**
 * Bearer check for /v1 routes when server.api_key is set; /health stays open for probes. Browsers
 * cannot set headers on a WebSocket, so the realtime route also takes `?api_key=`.
 */
export function checkApiKey(request: Request, apiKey: string | undefined): void {
  if (!apiKey) return;
  const url = new URL(request.url);
  if (!url.pathname.startsWith("/v1/")) return;
  const header = request.headers.get("authorization") ?? "";
  const bearer = /^Bearer\s+(.+)$/i.exec(header)?.[1];
  const key = bearer ?? (url.pathname === "/v1/realtime/video" ? url.searchParams.get("api_key") : null);
  if (!key) throw new ApiError(401, "Missing API key: send 'Authorization: Bearer <key>'", null);
  const given = Buffer.from(key.trim());
  const expected = Buffer.from(apiKey);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ApiError(401, "Incorrect API key provided", null);
  }
}
