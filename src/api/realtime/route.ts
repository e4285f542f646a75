// WebSocket /v1/realtime/video through Elysia (Bun's built-in WebSockets). The route is thin: one
// RealtimeSession per connection does the protocol.
import { Elysia } from "elysia";
import type { ServerContext } from "../context.ts";
import { describeNodes, unavailable } from "../node.ts";
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

/**
 * A node with no free session slot (or draining) refuses the upgrade itself: HTTP 503 with Retry-After
 * and the error envelope, so a load balancer tries another node. A slot is taken only at session.start,
 * so two clients may pass here for the last one; the later start gets server_busy.
 */
async function admitUpgrade(ctx: ServerContext): Promise<void> {
  if (ctx.node.draining) {
    throw unavailable(`${ctx.node.clustered ? "This node" : "The server"} is shutting down and takes no new realtime sessions${await elsewhere(ctx)}`);
  }
  if (ctx.sessions.free > 0) return;
  const limit = `at its limit of ${ctx.sessions.total} realtime sessions`;
  throw unavailable(ctx.node.clustered ? `This node is ${limit}${await elsewhere(ctx)}` : `The server is ${limit}; try again later`);
}

async function elsewhere(ctx: ServerContext): Promise<string> {
  if (!ctx.node.clustered) return "";
  const nodes = await ctx.node.nodesWithRoom();
  return nodes.length ? `; nodes with room: ${describeNodes(nodes)}` : "; no other node has room now, try again later";
}

export function realtimeRoutes(ctx: ServerContext) {
  const byConnection = new Map<string, RealtimeSession>();
  ctx.metrics.activeSessions = () => ctx.sessions.active;
  return new Elysia({ name: "realtime" }).ws("/v1/realtime/video", {
    beforeHandle: () => admitUpgrade(ctx),
    open(ws) {
      const session = new RealtimeSession(
        { send: (data) => void ws.raw.send(data), close: () => ws.raw.close() },
        ctx,
        ctx.sessions,
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
