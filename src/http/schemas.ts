import { type Static, type TSchema, Type } from 'typebox';
import type { Page } from '../db/paging.js';
import { ERROR_STATUS } from '../shared/errors.js';

/** A free-form JSON object (metadata, parameters). */
export const FreeObject = (description?: string) =>
  Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable code', enum: Object.keys(ERROR_STATUS) }),
        message: Type.String(),
        details: Type.Optional(Nullable(FreeObject())),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'Error envelope' },
);

export const ValidationErrorBody = Type.Object(
  {
    detail: Type.Array(
      Type.Object(
        {
          loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
          msg: Type.String(),
          type: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: 'Validation error' },
);

/** Statuses that any guarded route may answer. */
export const GUARDED = [400, 401, 403, 429, 500, 503] as const;

/** Success schemas plus the documented error bodies for the given statuses. */
/** Anthropic's error shape, which the Anthropic-dialect route answers in. */
export const AnthropicError = Type.Object(
  {
    type: Type.Literal('error'),
    error: Type.Object(
      {
        type: Type.String({ description: 'invalid_request_error, authentication_error, …' }),
        message: Type.String(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: "An error in Anthropic's shape" },
);

/** The responses of a route in the Anthropic dialect: its errors in Anthropic's shape (422s answer 400). */
export function anthropicResponses(
  success: Record<number, TSchema>,
  ...statuses: number[]
): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const s of new Set([...GUARDED, ...statuses])) if (s !== 422) out[s] = AnthropicError;
  return out;
}

/** The envelope with OpenAI's `type` and `param`, which the OpenAI-dialect routes of the gateway answer in. */
export const OpenAiError = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable code', enum: Object.keys(ERROR_STATUS) }),
        message: Type.String(),
        details: Type.Optional(Nullable(FreeObject())),
        type: Type.String({ description: "OpenAI's error type: invalid_request_error, server_error, …" }),
        param: Nullable(
          Type.String({ description: 'The request parameter at fault, e.g. messages[0].role' }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: "Error envelope with OpenAI's type and param" },
);

/** The responses of a route in an OpenAI dialect: its errors in the envelope with `type` and `param`. */
export function openAiResponses(
  success: Record<number, TSchema>,
  ...statuses: number[]
): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const s of new Set([...GUARDED, ...statuses])) out[s] = s === 422 ? ValidationErrorBody : OpenAiError;
  return out;
}

export function responses(success: Record<number, TSchema>, ...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const s of new Set([...GUARDED, ...statuses]))
    out[s] = s === 422 ? ValidationErrorBody : ErrorEnvelope;
  return out;
}

export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1..100' }),
  ),
  // Bounded so that every accepted value is an exact integer that both databases take as an OFFSET.
  offset: Type.Optional(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Items to skip' }),
  ),
};

export type { Page };

export function pageOf(q: { limit?: number; offset?: number }): Page {
  return { limit: q.limit ?? 20, offset: q.offset ?? 0 };
}

export const ListOf = <T extends TSchema>(item: T) =>
  Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    total: Type.Integer({ minimum: 0 }),
  });

export interface ListResponse<T> {
  object: 'list';
  data: T[];
  total: number;
}

export const IdParam = (name: string, description: string) =>
  Type.Object({ [name]: Type.String({ minLength: 1, maxLength: 200, description }) });

export type { Static };
