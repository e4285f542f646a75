// The OpenAPI document at /openapi.json, built by @elysiajs/openapi from the routes' `detail` objects,
// whose schemas are the same TypeBox schemas the routes validate with (bodies are read with
// parse: "none" and validated in the handler, so Elysia cannot infer them by itself).
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

/** A create body: JSON, or multipart/form-data as the OpenAI SDKs send it. */
export const createBody = (schema: TSchema) => ({
  required: true,
  content: { "application/json": { schema }, "multipart/form-data": { schema } },
});

export const jsonResponse = (description: string, schema: TSchema) => ({
  200: { description, content: { "application/json": { schema } } },
});

const ERROR_TEXT: Record<number, string> = {
  400: "invalid request (the envelope names the field in `param`)",
  401: "missing or wrong API key",
  404: "no such resource",
  413: "body over server.max_body_bytes",
  416: "range not satisfiable",
  422: "the job failed; its content does not exist",
  500: "generation failed",
  503: "the engine is not available",
};

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [status, { description: ERROR_TEXT[status], content: { "application/json": { schema: ErrorEnvelopeSchema } } }]),
  );
