// WebSocket /v1/realtime/video messages (docs/spec/realtime-video-protocol.md). Client frames are validated with these; server frames are typed by them.
import { Type, type Static } from "@sinclair/typebox";
import { VideoCreateSchema } from "./videos.ts";

/** session.start: the POST /v1/videos request plus the stream format (sampling_params is flattened before validation). */
export const SessionStartSchema = Type.Object(
  {
    ...VideoCreateSchema.properties,
    type: Type.Literal("session.start"),
    format: Type.Optional(Type.Literal("m4s", { description: "fragmented MP4, the only stream format" })),
  },
  { additionalProperties: false },
);
export type SessionStart = Static<typeof SessionStartSchema>;

/**
 * The prompt shape of an interaction event with every field optional (vLLM-Omni's OmniTextPrompt,
 * total=false), so that future fields validate; the runner decides which fields it implements.
 */
export const PromptEventSchema = Type.Object(
  {
    prompt: Type.Optional(Type.String()),
    negative_prompt: Type.Optional(Type.String()),
    prompt_embeds: Type.Optional(Type.Unknown()),
    negative_prompt_embeds: Type.Optional(Type.Unknown()),
    multi_modal_data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    mm_processor_kwargs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    multi_modal_uuids: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    cache_salt: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type PromptEvent = Static<typeof PromptEventSchema>;

export const InteractionSchema = Type.Object(
  {
    event_id: Type.Optional(Type.String({ minLength: 1 })),
    event: PromptEventSchema,
    transition_chunks: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  },
  { additionalProperties: false },
);

export const SessionInteractionSchema = Type.Object(
  { type: Type.Literal("session.interaction"), interaction: InteractionSchema },
  { additionalProperties: false },
);
export type SessionInteraction = Static<typeof SessionInteractionSchema>;

export const SessionStopSchema = Type.Object({ type: Type.Literal("session.stop") }, { additionalProperties: false });
export const SessionPingSchema = Type.Object({ type: Type.Literal("session.ping") }, { additionalProperties: false });

// Server → client

const EventIds = Type.Array(Type.String());

export const ChunkMetadataSchema = Type.Object({
  type: Type.Literal("video.chunk_metadata"),
  request_id: Type.String(),
  kind: Type.Union([Type.Literal("media"), Type.Literal("trailer")]),
  transport_chunk_index: Type.Integer(),
  generation_chunk_index: Type.Union([Type.Integer(), Type.Null()]),
  num_frames: Type.Integer(),
  byte_length: Type.Integer(),
  started_event_ids: EventIds,
  active_event_ids: EventIds,
  completed_event_ids: EventIds,
  /** kino extension: events replaced while pending or interrupted mid-transition, at the chunk of the takeover. */
  superseded_event_ids: EventIds,
  /** kino extension: the active transition's progress k/N in this chunk. */
  transition: Type.Optional(Type.Object({ event_id: Type.String(), k: Type.Integer(), n: Type.Integer(), progress: Type.Number() })),
});
export type ChunkMetadata = Static<typeof ChunkMetadataSchema>;

/** Stable error codes clients can switch on. */
export const RealtimeErrorCode = Type.Union(
  [
    "invalid_json", "invalid_message", "unknown_message_type", "message_too_large", "invalid_request",
    "model_mismatch", "streaming_unsupported", "start_timeout", "stall_timeout", "generation_failed",
    "server_busy", "event_id_conflict", "interaction_failed", "session_not_started", "session_already_started",
    "session_stopping", "internal_error",
  ].map((code) => Type.Literal(code)),
);
export type RealtimeErrorCode = Static<typeof RealtimeErrorCode>;

export const RealtimeErrorSchema = Type.Object({
  type: Type.Literal("error"),
  code: RealtimeErrorCode,
  message: Type.String(),
  request_id: Type.Optional(Type.String()),
  event_id: Type.Optional(Type.String()),
  param: Type.Optional(Type.String()),
  /** kino extension, on server_busy in a cluster: the nodes that would take a session now, most room first. */
  nodes_with_room: Type.Optional(Type.Array(Type.Object({ node_id: Type.String(), url: Type.String(), free_sessions: Type.Integer() }))),
});
export type RealtimeError = Static<typeof RealtimeErrorSchema>;

export type ServerMessage =
  | { type: "video.start"; request_id: string; format: "m4s"; config: Record<string, unknown> }
  | ChunkMetadata
  | { type: "session.interaction.queued"; request_id: string; event_id: string }
  /** `reason` (kino extension): "draining" when the server's shutdown ended the session. */
  | { type: "session.done"; request_id: string; chunks: number; stopped: boolean; reason?: "draining" }
  | { type: "session.pong" }
  | RealtimeError;
