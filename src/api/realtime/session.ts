// One WebSocket connection = one realtime generation (docs/spec/realtime-video-protocol.md):
// awaiting_start → streaming → ended. The session validates every client message, answers
// interactions at once (queued / errors), relays the worker's fMP4 chunks as metadata + binary pairs,
// and runs the start and stall watchdogs.
import { randomUUID } from "node:crypto";
import type { TSchema } from "@sinclair/typebox";
import {
  SessionInteractionSchema,
  SessionPingSchema,
  SessionStopSchema,
  type ChunkMetadata,
  type RealtimeErrorCode,
  type ServerMessage,
} from "../../../schemas/realtime.ts";
import type { GenerationError } from "../../engine/engine.ts";
import { newStreamRequestId } from "../ids.ts";
import type { StreamChunk, StreamEvent } from "../../worker/ipc.ts";
import type { ServerContext } from "../context.ts";
import { ApiError } from "../errors.ts";
import { validateOrThrow } from "../validate.ts";
import { MAX_JSON_DEPTH, valueTooDeep } from "../json-depth.ts";
import { InvalidMediaError } from "../../media/errors.ts";
import { materializeReferences, removeReferences } from "../../media/references.ts";
import { EventRegistry } from "./event-registry.ts";
import { admitStart } from "./admission.ts";
import type { LiveSession, RealtimeSessions } from "./sessions.ts";
import { describeNodes } from "../node.ts";

/** The two things a session does with its socket; Bun's ServerWebSocket in production. */
export interface SessionSocket {
  send(data: string | Uint8Array): void;
  close(): void;
}

type State = "awaiting_start" | "starting" | "streaming" | "ended";

export class RealtimeSession implements LiveSession {
  private state: State = "awaiting_start";
  /** The node drains: the session ends (or never starts) for that reason. */
  private draining = false;
  /** The drain stopped the stream (not the client's session.stop): session.done says reason "draining". */
  private stoppedByDrain = false;
  /** server_busy is on its way (it may wait for the registry): said once. */
  private refused = false;
  private requestId: string | undefined;
  private transportIndex = 0;
  private stopRequested = false;
  /** When video.start or the last media chunk went out (performance.now ms), for the chunk timings. */
  private lastChunkAt = 0;
  private startTimer: Timer | undefined;
  private stallTimer: Timer | undefined;
  private readonly events = new EventRegistry();

  constructor(
    private readonly socket: SessionSocket,
    private readonly ctx: ServerContext,
    /** This node's sessions and their slots (server.realtime.max_sessions). */
    private readonly sessions: RealtimeSessions,
  ) {}

  private get config() {
    return this.ctx.config.config.server.realtime;
  }

  opened(): void {
    this.sessions.opened(this);
    this.startTimer = setTimeout(() => {
      if (this.state !== "awaiting_start") return;
      this.error("start_timeout", "Timeout waiting for session.start");
      this.end();
    }, this.config.start_timeout_s * 1000);
  }

  /** A client frame as Elysia delivers it: JSON text parsed to a value, bad JSON as a string, binary as a Buffer. */
  received(message: unknown): void {
    try {
      this.handle(message);
    } catch (err) {
      // A message must never go unanswered, whatever fails in handling it.
      this.ctx.log(`realtime: handling a message failed: ${(err as Error)?.stack ?? err}`);
      this.error("internal_error", `Internal error: ${(err as Error)?.message ?? err}`);
    }
  }

  private handle(received: unknown): void {
    let message = received;
    if (this.state === "ended") return;
    if (message instanceof Uint8Array) return this.error("invalid_message", "Binary frames are not accepted; send JSON text frames");
    if (typeof message === "string") {
      const parsed = jsonAfterWhitespace(message);
      if (parsed === undefined) return this.error("invalid_json", "The message is not valid JSON");
      message = parsed;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      return this.error("invalid_message", "Every message must be a JSON object with a 'type'");
    }
    // Without a start there is no session to go on with: a refused message before it ends the connection.
    const refuse = (code: "message_too_large" | "invalid_message", text: string) => {
      this.error(code, text);
      return this.state === "awaiting_start" ? this.end() : undefined;
    };
    if (valueTooDeep(message)) return refuse("invalid_message", `The message nests deeper than ${MAX_JSON_DEPTH} levels`);
    const limit = this.state === "awaiting_start" ? this.config.max_start_bytes : this.config.max_control_bytes;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    if (bytes > limit) return refuse("message_too_large", `The message is ${bytes} bytes; the limit is ${limit}`);
    const body = message as Record<string, unknown>;
    switch (body.type) {
      case "session.start":
        if (this.state !== "awaiting_start") return this.error("session_already_started", "The session has already started");
        return void this.start(body);
      case "session.interaction":
        return this.interact(body);
      case "session.stop":
        if (this.invalid(SessionStopSchema, body, "session.stop")) return;
        return this.stop();
      case "session.ping":
        if (this.invalid(SessionPingSchema, body, "session.ping")) return;
        this.refreshStall();
        return this.send({ type: "session.pong" });
      default:
        return this.error("unknown_message_type", `Unknown message type: ${typeof body.type === "string" ? body.type : JSON.stringify(body.type)}`);
    }
  }

  /** Reports a message that does not match its schema (the session goes on); true when it did not. */
  private invalid(schema: TSchema, message: unknown, what: string): boolean {
    try {
      validateOrThrow(schema, message, what);
      return false;
    } catch (err) {
      this.error("invalid_request", (err as ApiError).message, { param: (err as ApiError).param ?? undefined });
      return true;
    }
  }

  /** The client went away: abort generation at once and free the engine; send nothing. */
  closed(): void {
    const wasStreaming = this.state === "streaming";
    this.release();
    if (wasStreaming && this.requestId) this.ctx.engine.cancel(this.requestId);
  }

  private async start(message: Record<string, unknown>): Promise<void> {
    clearTimeout(this.startTimer);
    this.state = "starting";
    if (this.draining || !this.sessions.take(this)) return this.busy();
    const requestId = newStreamRequestId();
    let started;
    try {
      started = await admitStart(message, requestId, this.ctx.admission, this.config.pace_lead_chunks);
      started.admitted.request.references = await materializeReferences(requestId, started.admitted.references, this.ctx.references);
    } catch (err) {
      if (err instanceof ApiError || err instanceof InvalidMediaError) {
        this.error(err.param === "model" ? "model_mismatch" : "invalid_request", err.message, { param: err.param ?? undefined });
      } else {
        this.ctx.log(`realtime: session.start failed: ${(err as Error)?.stack ?? err}`);
        this.error("internal_error", `Internal error: ${(err as Error)?.message ?? err}`);
      }
      return this.end();
    }
    if ((this.state as State) === "ended") return void removeReferences(this.ctx.references.outputDir, requestId); // the client left during admission
    if (this.draining) {
      void removeReferences(this.ctx.references.outputDir, requestId);
      return this.busy();
    }
    const { admitted, pacing } = started;
    const { request } = admitted;
    const card = this.ctx.engine.card;
    this.requestId = requestId;
    this.state = "streaming";
    this.send({
      type: "video.start",
      request_id: requestId,
      format: "m4s",
      config: {
        model: this.ctx.admission.servedModelId,
        prompt: request.prompt,
        negative_prompt: request.negative_prompt,
        size: admitted.size,
        width: request.width,
        height: request.height,
        fps: request.fps,
        num_frames: request.num_frames,
        seconds: admitted.seconds,
        num_inference_steps: request.num_inference_steps,
        guidance_scale: request.guidance_scale,
        flow_shift: request.flow_shift ?? card.flow_shift ?? null,
        seed: request.seed,
        task: request.task,
        extra_params: request.extra_params,
        frames_per_chunk: card.frames_per_chunk,
        num_chunks: Math.ceil(request.num_frames / card.frames_per_chunk),
        default_transition_chunks: card.default_transition_chunks,
        supports_prompt_updates: card.supports_prompt_updates,
        pace_to_media_time: pacing !== null,
        pace_lead_chunks: pacing?.leadChunks ?? null,
      },
    });
    this.lastChunkAt = performance.now();
    this.refreshStall();
    this.ctx.engine
      .run({
        id: requestId,
        request,
        output: { kind: "stream", pacing },
        onProgress: () => this.refreshStall(),
        onStreamEvent: (event) => this.streamEvent(event),
      })
      .finally(() => removeReferences(this.ctx.references.outputDir, request.request_id))
      .then(
        (result) => this.finish(result.stream!.trailer, result.stream!.stopped),
        (err: GenerationError) => {
          if (this.state !== "streaming") return;
          // Drained while still queued behind other work: it ends as drained, with nothing generated.
          if (this.draining && err.aborted) return this.done(true);
          this.error("generation_failed", `Generation failed: ${err.message}`);
          this.end();
        },
      );
  }

  private interact(message: Record<string, unknown>): void {
    const claimed = (message.interaction as { event_id?: unknown } | undefined)?.event_id;
    const eventId = typeof claimed === "string" && claimed ? claimed : undefined;
    if (this.state !== "streaming") {
      return this.error("session_not_started", "Send session.start and wait for video.start before interactions", { event_id: eventId });
    }
    // The worker ends the stream after the chunk in progress: an update now could never be applied.
    if (this.stopRequested) {
      return this.error("session_stopping", "The session is stopping: session.stop was received, so no further interaction is applied", { event_id: eventId });
    }
    let interaction;
    try {
      interaction = validateOrThrow(SessionInteractionSchema, message, "session.interaction").interaction;
    } catch (err) {
      return this.error("invalid_request", (err as ApiError).message, { event_id: eventId, param: (err as ApiError).param ?? undefined });
    }
    const { prompt } = interaction.event;
    if (typeof prompt !== "string" || prompt.trim() === "") {
      return this.error("invalid_request", "interaction.event.prompt must be a non-empty string", { event_id: eventId, param: "interaction.event.prompt" });
    }
    const id = interaction.event_id ?? randomUUID();
    const transitionChunks = interaction.transition_chunks ?? this.ctx.engine.card.default_transition_chunks;
    switch (this.events.admit(id, { event: interaction.event, transition_chunks: transitionChunks })) {
      case "conflict":
        return this.error("event_id_conflict", `event_id '${id}' was already used with a different payload`, { event_id: id });
      case "new":
        this.ctx.engine.interact({ type: "interaction", taskId: this.requestId!, eventId: id, event: interaction.event, transitionChunks });
      // falls through: a retry is acknowledged again but applied only once
      case "retry":
        this.send({ type: "session.interaction.queued", request_id: this.requestId!, event_id: id });
    }
  }

  private stop(): void {
    if (this.state !== "streaming") return this.error("session_not_started", "There is no generation to stop");
    this.stopRequested = true;
    this.ctx.engine.cancel(this.requestId!); // the worker ends the stream with its trailer: no frame is lost
  }

  private streamEvent(event: StreamEvent): void {
    if (this.state !== "streaming") return;
    this.refreshStall();
    if (event.type === "chunk") {
      const now = performance.now();
      this.ctx.metrics.chunkSent(this.transportIndex === 0, now - this.lastChunkAt);
      this.lastChunkAt = now;
      return this.sendPair("media", event.chunk);
    }
    this.events.release(event.eventId);
    this.error("interaction_failed", event.message, { event_id: event.eventId });
  }

  private finish(trailer: Uint8Array, stopped: boolean): void {
    if (this.state !== "streaming") return;
    this.sendPair("trailer", null, trailer);
    this.done(stopped || this.stopRequested);
  }

  /** session.done, with reason "draining" when the node's shutdown ended the stream; then close. */
  private done(stopped: boolean): void {
    this.send({
      type: "session.done",
      request_id: this.requestId!,
      chunks: this.transportIndex,
      stopped,
      ...(this.stoppedByDrain ? { reason: "draining" as const } : {}),
    });
    this.end();
  }

  /**
   * No slot here (all held, or the node drains): server_busy, naming the cluster's nodes with room
   * (also as `nodes_with_room`) so the client can reconnect there.
   */
  private async busy(): Promise<void> {
    if (this.refused) return;
    this.refused = true;
    const who = this.ctx.node.clustered ? "This node" : "The server";
    const why = this.draining
      ? `${who} is shutting down and takes no new realtime sessions`
      : `${who} is at its limit of ${this.config.max_sessions} realtime sessions`;
    if (!this.ctx.node.clustered) {
      this.error("server_busy", `${why}; try again later`);
      return this.end();
    }
    const nodes = await this.ctx.node.nodesWithRoom();
    if ((this.state as State) === "ended") return;
    const where = nodes.length ? `; nodes with room: ${describeNodes(nodes)}` : "; no other node has room now, try again later";
    this.send({
      type: "error",
      code: "server_busy",
      message: why + where,
      nodes_with_room: nodes.map((node) => ({ node_id: node.node_id, url: node.url, free_sessions: node.sessions.free })),
    });
    this.end();
  }

  drain(): void {
    if (this.state === "ended" || this.draining) return;
    this.draining = true;
    if (this.state === "awaiting_start") {
      clearTimeout(this.startTimer);
      return void this.busy();
    }
    // "starting" finds the flag once admission is done; a stream stops after its chunk in progress,
    // sends every chunk made and the trailer, then session.done.
    if (this.state === "streaming" && !this.stopRequested) {
      this.stopRequested = this.stoppedByDrain = true;
      this.ctx.engine.cancel(this.requestId!);
    }
  }

  endNow(): void {
    if (this.state === "ended") return;
    this.draining = true;
    if (this.state !== "streaming") return this.end();
    this.stoppedByDrain ||= !this.stopRequested;
    this.ctx.engine.cancel(this.requestId!);
    this.done(true);
  }

  /** A metadata message and its binary payload, sent back to back so nothing can come between them. */
  private sendPair(kind: "media" | "trailer", chunk: StreamChunk | null, trailer?: Uint8Array): void {
    const bytes = chunk?.bytes ?? trailer!;
    const metadata: ChunkMetadata = {
      type: "video.chunk_metadata",
      request_id: this.requestId!,
      kind,
      transport_chunk_index: this.transportIndex++,
      generation_chunk_index: chunk?.generation_chunk_index ?? null,
      num_frames: chunk?.num_frames ?? 0,
      byte_length: bytes.byteLength,
      started_event_ids: chunk?.started_event_ids ?? [],
      active_event_ids: chunk?.active_event_ids ?? [],
      completed_event_ids: chunk?.completed_event_ids ?? [],
      superseded_event_ids: chunk?.superseded_event_ids ?? [],
    };
    const t = chunk?.transition;
    if (t) metadata.transition = { ...t, progress: t.k / t.n };
    this.socket.send(JSON.stringify(metadata));
    this.socket.send(bytes);
  }

  private refreshStall(): void {
    if (this.state !== "streaming") return;
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(() => {
      if (this.state !== "streaming") return;
      this.error("stall_timeout", "Stall timeout: no generation progress");
      this.ctx.engine.cancel(this.requestId!);
      this.send({ type: "session.done", request_id: this.requestId!, chunks: this.transportIndex, stopped: true });
      this.end();
    }, this.config.stall_timeout_s * 1000);
  }

  private error(code: RealtimeErrorCode, message: string, extra: { event_id?: string; param?: string } = {}): void {
    this.send({
      type: "error",
      code,
      message,
      ...(this.requestId ? { request_id: this.requestId } : {}),
      ...(extra.event_id ? { event_id: extra.event_id } : {}),
      ...(extra.param ? { param: extra.param } : {}),
    });
  }

  private send(message: ServerMessage): void {
    this.socket.send(JSON.stringify(message));
  }

  private release(): void {
    this.state = "ended";
    clearTimeout(this.startTimer);
    clearTimeout(this.stallTimer);
    this.sessions.closed(this);
  }

  /** Ends the session from our side: close the socket (closed() then finds nothing left to abort). */
  private end(): void {
    this.release();
    this.socket.close();
  }
}

/**
 * A text frame Elysia left as a string: either not JSON, or JSON that does not start with one of the
 * characters Elysia parses on ({ [ "), which RFC 8259 allows for an object or array after leading
 * whitespace. The latter is parsed here; undefined means the frame is not JSON.
 */
function jsonAfterWhitespace(text: string): unknown {
  const trimmed = text.trimStart();
  if (trimmed === text || !/^[[{]/.test(trimmed)) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}
