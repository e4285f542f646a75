// The OpenAPI document at /openapi.json, built by @elysiajs/openapi from the routes: paths, query and
// responses from each route's `detail`, whose schemas are the TypeBox schemas the routes validate with.
// Request bodies are declared there too (src/api/route-docs.ts `createBody`) because the plugin writes a
// body's content types only for Elysia's built-in parsers — with any custom parser, route-level or
// `onParse`, it emits `content: {}` — and kino's bodies need their own decoder (the size limit enforced
// while streaming, the SDKs' bracket-notation forms, JSON-string form fields).
import { openapi } from "@elysiajs/openapi";
import type { TSchema } from "@sinclair/typebox";
import pkg from "../../package.json" with { type: "json" };
import { ErrorEnvelopeSchema } from "../../schemas/errors.ts";
import {
  ChunkMetadataSchema,
  InteractionSchema,
  RealtimeErrorSchema,
  SessionInteractionSchema,
  SessionPingSchema,
  SessionStartSchema,
  SessionStopSchema,
} from "../../schemas/realtime.ts";

export const openapiPlugin = () =>
  openapi({
    path: "/docs",
    specPath: "/openapi.json",
    // The bundled providers load their UI from a CDN; kino must work offline, so web/ serves the docs page.
    provider: null,
    exclude: { paths: ["/", /^\/web\//, "/docs"] },
    documentation: {
      info: {
        title: "kino",
        version: pkg.version,
        description:
          "OpenAI-compatible video and image generation (spec: http-contract.md). The realtime protocol runs over " +
          "WebSocket /v1/realtime/video; its message schemas are under components.schemas (Realtime*).",
      },
      components: {
        schemas: {
          ErrorEnvelope: ErrorEnvelopeSchema,
          RealtimeSessionStart: SessionStartSchema,
          RealtimeSessionInteraction: SessionInteractionSchema,
          RealtimeSessionStop: SessionStopSchema,
          RealtimeSessionPing: SessionPingSchema,
          RealtimeInteraction: InteractionSchema,
          RealtimeChunkMetadata: ChunkMetadataSchema,
          RealtimeError: RealtimeErrorSchema,
        } as Record<string, TSchema>,
      },
    },
  });
