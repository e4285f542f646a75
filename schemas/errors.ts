import { Type, type Static } from "@sinclair/typebox";

/** The OpenAI error envelope used by every error response. */
export const ErrorEnvelopeSchema = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Type.Union([
      Type.Literal("invalid_request_error"),
      Type.Literal("not_found_error"),
      Type.Literal("server_error"),
    ]),
    param: Type.Union([Type.String(), Type.Null()]),
    code: Type.Union([Type.Integer(), Type.String()]),
  }),
});
export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>;
export type ErrorType = ErrorEnvelope["error"]["type"];
