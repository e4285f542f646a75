// WebSocket /v1/realtime/video through Elysia (Bun's built-in WebSockets). The route is thin: one
// RealtimeSession per connection does the protocol.
import { Elysia } from "elysia";
import type { ServerContext } from "../context.ts";
import { RealtimeSession } from "./session.ts";

/**
 * Bun's WebSocket settings are server-wide, so createApp passes these to the Elysia instance.
 * Frames over the session.start limit are refused by Bun itself (close 1009); smaller oversize
 * control messages get an error from the session, which goes on.
 */
export function realtimeSocketSettings(ctx: ServerContext) {
  return {
    maxPayloadLength: ctx.config.config.server.realtime.max_start_bytes,
    // A slow viewer must not make Bun drop chunks: queue generously, close only past 1 GiB.
    backpressureLimit: 1 << 30,
    closeOnBackpressureLimit: true,
    idleTimeout: 255,
  };
}

export function realtimeRoutes(ctx: ServerContext) {
  const sessions = new Set<RealtimeSession>();
  const byConnection = new Map<string, RealtimeSession>();
  ctx.metrics.activeSessions = () => sessions.size;
  return new Elysia({ name: "realtime" }).ws("/v1/realtime/video", {
    open(ws) {
      const session = new RealtimeSession(
        { send: (data) => void ws.raw.send(data), close: () => ws.raw.close() },
        ctx,
        sessions,
      );
      byConnection.set(ws.id, session);
      session.opened();
    },
    message(ws, message) {
      byConnection.get(ws.id)?.received(message);
    },
    close(ws) {
      byConnection.get(ws.id)?.closed();
      byConnection.delete(ws.id);
    },
  });
}
