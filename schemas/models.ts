import { Type, type Static } from "@sinclair/typebox";

export const ModelObjectSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal("model"),
  created: Type.Integer(),
  owned_by: Type.String(),
  root: Type.String(),
});

export const ModelListSchema = Type.Object({
  object: Type.Literal("list"),
  data: Type.Array(ModelObjectSchema),
});

/** GET /v1/models/{model}: the model object plus the model card (what requests may ask for). */
export const ModelCardResponseSchema = Type.Composite([
  ModelObjectSchema,
  Type.Object({ card: Type.Record(Type.String(), Type.Unknown()) }),
]);
export type ModelObject = Static<typeof ModelObjectSchema>;
