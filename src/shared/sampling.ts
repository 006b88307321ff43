import { Type } from 'typebox';

/**
 * The sampling parameters a prompt version, an experiment's generate side and an experiment file may set,
 * one list for all three (each object decides whether other fields pass through).
 */
export const SAMPLING_FIELDS = {
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  stop: Type.Optional(
    Type.Union([
      Type.String({ minLength: 1 }),
      Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 4 }),
    ]),
  ),
  presence_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  seed: Type.Optional(Type.Integer()),
};
