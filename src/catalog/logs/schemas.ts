import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../../http/schemas.js';
import { RANGE_PATTERN } from '../datasets/schemas.js';

const LogError = Type.Object(
  { code: Type.String({ maxLength: 200 }), message: Type.String({ maxLength: 100_000 }) },
  { additionalProperties: true },
);

const Usage = Type.Object(
  {
    prompt_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    completion_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    total_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: true },
);

const Status = Type.Union([Type.Literal('success'), Type.Literal('error')]);

/** The record of one model call in a container. */
export const TaskLog = Type.Object({
  object: Type.Literal('task_log'),
  id: Type.String(),
  project_id: Type.String(),
  container_id: Type.String(),
  seq: Type.Integer({ minimum: 1, description: 'Strictly increasing per container, from 1, without gaps' }),
  model: Type.String(),
  input: Type.Unknown({ description: 'The request messages' }),
  output: Nullable(Type.String({ description: 'The response text' })),
  request: Type.Unknown(),
  response: Type.Unknown(),
  usage: Nullable(Usage),
  latency_ms: Type.Number(),
  cost: Type.Number({ description: 'USD' }),
  status: Status,
  error: Nullable(LogError),
  metadata: FreeObject(),
  created_at: Type.String(),
  session_id: Type.Optional(
    Nullable(Type.String({ description: 'The session the call belongs to, if any' })),
  ),
  prompt_id: Type.Optional(
    Nullable(Type.String({ description: 'The stored prompt the call was rendered from, if any' })),
  ),
  prompt_version: Type.Optional(Nullable(Type.Integer({ minimum: 1, description: "That prompt's version" }))),
  trace_id: Type.Optional(
    Nullable(Type.String({ description: "The trace of the call's span (gateway or OTLP), if it has one" })),
  ),
  span_id: Type.Optional(Nullable(Type.String({ description: "The call's span in that trace" }))),
});
export type TaskLog = Static<typeof TaskLog>;

export const TaskLogList = ListOf(TaskLog);

export const ListLogsQuery = Type.Object({
  ...PageQuery,
  range: Type.Optional(
    Type.String({
      pattern: RANGE_PATTERN,
      description: 'start:end over the (filtered) logs in seq order, 0-based, end exclusive',
    }),
  ),
  model: Type.Optional(
    Type.String({ minLength: 1, maxLength: 300, description: 'Only calls of this model' }),
  ),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only calls made at or after this time' }),
  ),
  prompt_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Only calls rendered from this stored prompt (id or name)',
    }),
  ),
  prompt_version: Type.Optional(
    Type.Integer({ minimum: 1, description: 'Only calls of this prompt version (with prompt_id)' }),
  ),
});

/** One call recorded elsewhere, to import. Omitted fields are derived where they can be. */
export const ImportLog = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 300 }),
    input: Type.Optional(Type.Unknown({ description: 'Request messages; default: request.messages' })),
    output: Type.Optional(
      Nullable(Type.String({ description: 'Response text; default: response.choices[0].message.content' })),
    ),
    request: Type.Optional(Type.Unknown()),
    response: Type.Optional(Type.Unknown()),
    usage: Type.Optional(Nullable(Usage)),
    latency_ms: Type.Optional(Type.Number({ minimum: 0 })),
    cost: Type.Optional(Type.Number({ minimum: 0 })),
    status: Type.Optional(Status),
    error: Type.Optional(Nullable(LogError)),
    metadata: Type.Optional(FreeObject('Free-form; `expected` here is the ground truth of evaluations')),
    created_at: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);
export type ImportLog = Static<typeof ImportLog>;

export const ImportLogs = Type.Array(ImportLog, { maxItems: 100_000 });

export const LogImport = Type.Object({
  object: Type.Literal('task_log.import'),
  container_id: Type.String(),
  imported: Type.Integer({ minimum: 0 }),
  first_seq: Nullable(Type.Integer()),
  last_seq: Nullable(Type.Integer()),
});
export type LogImport = Static<typeof LogImport>;

export const ContainerLogsParam = Type.Object({
  container: Type.String({ minLength: 1, maxLength: 200, description: 'Container id or label' }),
});
